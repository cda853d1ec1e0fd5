"""A one-wave, in-order issue simulation of a code path (the hand model's core).

The wave issues one instruction per 4-clk slot, in order. An instruction waits for its unit:
the SIMD's VALU (4 clk a wave64 instruction, 16 clk quarter rate), the SIMD's matrix core
(the MFMA's clocks, hardware.mfma_clk), the CU's LDS (bytes / 128 B per clk) and vector
memory path (bytes / 64 B per clk). Memory results arrive `latency` clk after issue:
vector memory in order (vmcnt), LDS and scalar memory in order (lgkmcnt; scalar loads with
their own latency). s_waitcnt blocks until the counted operations have returned; s_nop N
takes N + 1 slots. Register dependencies other than those s_waitcnt and s_nop express are
not modelled (the compiler's s_nop covers the MFMA-to-VALU hazards it knows of; a VALU that
reads an MFMA result the wave has not waited for is a rare case in these kernels).

Several iterations of a loop path are simulated back to back; the steady-state time per
iteration is the time of the last iterations, so a load issued one iteration ahead (the
decode kernel's prefetch) overlaps the current iteration as on hardware.

An MFMA also holds the VALU for its co-execution delay (hardware.MFMA_VALU_CLK); an LDS
instruction holds the LDS pipe, and arrives later, by its bank-conflict degree (`degrees`:
lds_kind -> cycles per phase from the emulator, 1 where absent)."""
from dataclasses import dataclass
from gfx950 import hardware as hw
from gfx950.classify import classify, lds_kind, wait_counts

LDS_LATENCY_CLK = 128   # assumption: LDS round trip of a wave64 access (CDNA3 ~ 100+ clk)
SMEM_LATENCY_CLK = 200  # assumption: scalar cache hit


@dataclass
class Timing:
    clk_per_iteration: float
    issue_clk_per_iteration: float  # the same path with every latency 0: the issue bound
    stall_clk_per_iteration: float


def _run(insns, iterations, vmem_latency, lds_latency, smem_latency, degrees=None):
    t = 0.0
    free = {"valu": 0.0, "mfma": 0.0, "lds": 0.0, "vmem": 0.0}
    vm, lgkm = [], []  # completion times of outstanding operations, in issue order
    ends = []
    for _ in range(iterations):
        for insn in insns:
            k = classify(insn)
            start = t
            if k.unit == "wait":
                w = wait_counts(insn)
                if "vmcnt" in w and len(vm) > w["vmcnt"]:
                    drain = vm[: len(vm) - w["vmcnt"]]
                    start = max(start, max(drain))
                    del vm[: len(vm) - w["vmcnt"]]
                if "lgkmcnt" in w and len(lgkm) > w["lgkmcnt"]:
                    drain = lgkm[: len(lgkm) - w["lgkmcnt"]]
                    start = max(start, max(drain))
                    del lgkm[: len(lgkm) - w["lgkmcnt"]]
                t = start + hw.ISSUE_CLK
                continue
            if k.unit == "nop":
                n = int(insn.operands.split()[0], 0) if insn.operands else 0
                t = start + hw.ISSUE_CLK * (n + 1)
                continue
            if k.unit == "valu":
                start = max(start, free["valu"])
                free["valu"] = start + hw.VALU_CLK[k.sub]
            elif k.unit == "mfma":
                start = max(start, free["mfma"])
                free["mfma"] = start + hw.mfma_clk(k.shape)
                free["valu"] = max(free["valu"], start + hw.MFMA_VALU_CLK)
            elif k.unit == "lds":
                start = max(start, free["lds"])
                kind = lds_kind(insn)
                degree = (degrees or {}).get(kind, 1.0) if kind else 1.0
                busy = max(1.0, k.bytes * 64 / hw.LDS_BYTES_PER_CLK) * degree
                free["lds"] = start + busy
                lgkm.append(max(lgkm[-1] if lgkm else 0.0, start + lds_latency + busy - busy / degree))
            elif k.unit == "smem":
                lgkm.append(start + smem_latency)
                lgkm.sort()
            elif k.unit == "vmem":
                start = max(start, free["vmem"])
                free["vmem"] = start + max(1.0, k.bytes * 64 / hw.VMEM_BYTES_PER_CLK)
                vm.append(max(vm[-1] if vm else 0.0, start + vmem_latency))
            t = start + hw.ISSUE_CLK
        ends.append(max(t, free["valu"], free["mfma"]))
    return ends


def simulate(insns, vmem_latency, iterations=8, lds_latency=LDS_LATENCY_CLK, smem_latency=SMEM_LATENCY_CLK,
             degrees=None):
    """Steady-state clk per iteration of a loop path (iterations back to back)."""
    ends = _run(insns, iterations, vmem_latency, lds_latency, smem_latency, degrees)
    issue = _run(insns, iterations, 0.0, 0.0, 0.0, degrees)
    k = max(1, iterations // 2)
    per = (ends[-1] - ends[-1 - k]) / k
    per_issue = (issue[-1] - issue[-1 - k]) / k
    return Timing(per, per_issue, per - per_issue)


def simulate_once(insns, vmem_latency, lds_latency=LDS_LATENCY_CLK, smem_latency=SMEM_LATENCY_CLK, degrees=None):
    """Clk of one pass over a straight-line path (a prologue), its loads' latencies included."""
    return _run(insns, 1, vmem_latency, lds_latency, smem_latency, degrees)[-1]


def pipe_clk(counter):
    """Per-iteration busy clk of each shared pipe: the SIMD's VALU (with the MFMAs' issue
    clocks) and matrix core, the CU's LDS (bytes times bank-conflict degree) and vector memory
    path."""
    valu = sum(hw.VALU_CLK[s] * counter.get(f"valu.{s}", 0) for s in hw.VALU_CLK)
    valu += hw.MFMA_VALU_CLK * counter.get("mfma", 0)
    mfma = sum(hw.mfma_clk(k.split(":", 1)[1]) * v for k, v in counter.items() if k.startswith("mfma:"))
    lds = counter.get("lds.bank_bytes", 0) / hw.LDS_BYTES_PER_CLK
    lds += counter.get("lds.swizzle", 0) * 1.0
    vmem = sum(v for k, v in counter.items() if k.startswith("vmem.") and k.endswith(".bytes")) / hw.VMEM_BYTES_PER_CLK
    return {"valu": valu, "mfma": mfma, "lds": lds, "vmem": vmem, "issue": hw.ISSUE_CLK * counter.get("insns", 0)}
