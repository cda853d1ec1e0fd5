"""Instruction counts of a code path by unit, and the bytes it moves (per wave)."""
from collections import Counter
from gfx950.classify import classify, lds_kind, wait_counts

LANES = 64


def count(insns, degrees=None):
    """Counter of a path: 'valu.full', 'valu.packed', 'valu.trans', 'valu.quarter',
    'valu.cross', 'salu', 'smem', 'vmem.load', 'vmem.store', 'vmem.atomic' (instructions),
    'vmem.load.bytes' ... (bytes per wave: lanes x bytes per lane), 'lds.load', 'lds.store',
    'lds.swizzle' and their '.bytes', 'mfma' and 'mfma:<shape>', 'wait.vmcnt', 'wait.lgkmcnt',
    'barrier', 'branch', 'nop', 'insns' (all); 'lds.bank_bytes': the LDS bytes times each
    instruction's bank-conflict degree (`degrees`: lds_kind -> degree, 1 where absent)."""
    c = Counter()
    for insn in insns:
        k = classify(insn)
        c["insns"] += 1
        if k.unit == "valu":
            c[f"valu.{k.sub}"] += 1
            c["valu"] += 1
        elif k.unit in ("vmem", "lds"):
            if k.unit == "lds":
                kind = lds_kind(insn)
                c["lds.bank_bytes"] += k.bytes * LANES * ((degrees or {}).get(kind, 1.0) if kind else 1.0)
            c[f"{k.unit}.{k.sub}"] += 1
            c[f"{k.unit}.{k.sub}.bytes"] += k.bytes * LANES
            c[k.unit] += 1
        elif k.unit == "mfma":
            c["mfma"] += 1
            c[f"mfma:{k.shape}"] += 1
        elif k.unit == "wait":
            for counter in wait_counts(insn):
                c[f"wait.{counter}"] += 1
            c["wait"] += 1
        else:
            c[k.unit] += 1
    return c


def scaled(c, factor):
    return Counter({k: v * factor for k, v in c.items()})


def mfma_shapes(c):
    return {k.split(":", 1)[1]: v for k, v in c.items() if k.startswith("mfma:")}
