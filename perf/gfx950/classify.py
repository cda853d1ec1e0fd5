"""What each gfx950 instruction costs where: its unit, its bytes, its MFMA shape.

The classes are the ones a CU model needs (docs/perf-log/2026-12-01-gfx950-model.md):
VALU (full rate, packed, quarter rate: transcendental and 64-bit integer multiply-add),
cross-lane VALU, SALU, SMEM, VMEM (bytes per lane), LDS (bytes per lane), MFMA (shape and
operand formats), waits, barriers, branches, nops."""
import re
from dataclasses import dataclass

# Per-lane bytes of a VMEM / LDS access, by the mnemonic's size suffix.
_SIZE = [
    (r"dwordx4|_b128", 16), (r"dwordx3|_b96", 12), (r"dwordx2|_b64|_x2\b|_x2$", 8),
    (r"dword|_b32", 4), (r"ushort|sshort|_short|_b16|_u16|_i16", 2), (r"ubyte|sbyte|_byte|_b8|_u8|_i8", 1),
]
# F32/F16 transcendentals: quarter rate (LLVM SISchedule.td, WriteTrans32 comment).
_TRANS = re.compile(r"^v_(exp|log|rcp|rsq|sqrt|sin|cos)_(f32|f16|legacy_f32)")
# Quarter-rate integer ops (LLVM SISchedule.td WriteIntMul / WriteQuarterRate32).
_QUARTER = re.compile(r"^v_(mad_u64_u32|mad_i64_i32|mul_lo_u32|mul_hi_u32|mul_hi_i32|mad_u32_u24)")
_CROSS_LANE = re.compile(r"^v_(permlane|readlane|readfirstlane|writelane)")
# MFMA formats of the f8f6f4 instructions, from cbsz (A) / blgp (B): 0 fp8, 1 bf8, 2 fp6,
# 3 bf6, 4 fp4 (docs/gfx950-isa.md §1.2); an absent field is 0.
_FORMATS = {0: "fp8", 1: "bf8", 2: "fp6", 3: "bf6", 4: "fp4"}


@dataclass(frozen=True)
class Cls:
    unit: str          # valu, salu, smem, vmem, lds, mfma, wait, barrier, branch, nop, end
    sub: str = ""      # valu: full/packed/trans/quarter/cross; vmem/lds: load/store/atomic/swizzle
    bytes: int = 0     # VMEM / LDS bytes per lane
    shape: str = ""    # MFMA: e.g. 16x16x128 fp4*fp8


def _lane_bytes(mnemonic):
    for pattern, n in _SIZE:
        if re.search(pattern, mnemonic):
            return n
    return 4


def mfma_shape(insn):
    m = re.match(r"^v_mfma_(?:scale_)?f32_(\d+x\d+x\d+)_?(\w*)$", insn.mnemonic)
    if not m:
        return insn.mnemonic
    dims, kind = m.group(1), m.group(2)
    if kind.endswith("f8f6f4"):
        cbsz = re.search(r"cbsz:(\d)", insn.operands)
        blgp = re.search(r"blgp:(\d)", insn.operands)
        a = _FORMATS[int(cbsz.group(1)) if cbsz else 0]
        b = _FORMATS[int(blgp.group(1)) if blgp else 0]
        scaled = "scaled " if "scale" in insn.mnemonic else ""
        return f"{dims} {scaled}{a}*{b}"
    return f"{dims} {kind}"


def classify(insn):
    m = insn.mnemonic
    if m.startswith(("v_mfma", "v_smfmac")):
        return Cls("mfma", shape=mfma_shape(insn))
    if m == "s_waitcnt" or m.startswith("s_waitcnt_"):
        return Cls("wait")
    if m == "s_nop":
        return Cls("nop")
    if m == "s_barrier":
        return Cls("barrier")
    if m == "s_endpgm" or m == "s_code_end":
        return Cls("end")
    if m == "s_branch" or m.startswith("s_cbranch"):
        return Cls("branch")
    if m.startswith(("s_load", "s_buffer_load", "s_store", "s_dcache", "s_memtime", "s_memrealtime")):
        return Cls("smem")
    if m.startswith(("s_sched", "s_setprio", "s_sleep", "s_trap", "s_sethalt", "s_icache")):
        return Cls("salu", "control")
    if m.startswith("s_"):
        return Cls("salu")
    if m.startswith(("buffer_", "global_", "flat_", "scratch_")):
        sub = "atomic" if "atomic" in m else "store" if "store" in m else "load"
        return Cls("vmem", sub, _lane_bytes(m))
    if m.startswith("ds_"):
        if m.startswith("ds_swizzle") or m.startswith("ds_bpermute") or m.startswith("ds_permute"):
            return Cls("lds", "swizzle", 4 if "permute" in m else 0)
        sub = "store" if m.startswith("ds_write") else "atomic" if "add" in m or "max" in m else "load"
        if "_tr_" in m:
            return Cls("lds", "load", 8)
        return Cls("lds", sub, _lane_bytes(m))
    if m.startswith("v_"):
        if _TRANS.match(m):
            return Cls("valu", "trans")
        if _QUARTER.match(m):
            return Cls("valu", "quarter")
        if _CROSS_LANE.match(m):
            return Cls("valu", "cross")
        if m.startswith("v_pk_"):
            return Cls("valu", "packed")
        return Cls("valu", "full")
    raise ValueError(f"unclassified instruction: {insn.text}")


def lds_kind(insn):
    """The key of an LDS access in the emulator's bank profile (perf/gfx950_lds_banks.cpp):
    'ds_read:16', 'ds_write:8', 'ds_read_tr:8' ...; None for what uses no bank (swizzles)."""
    k = classify(insn)
    if k.unit != "lds" or k.sub == "swizzle":
        return None
    if "_tr_" in insn.mnemonic:
        return "ds_read_tr:8"
    return f"{'ds_write' if k.sub == 'store' else 'ds_read'}:{k.bytes}"


def wait_counts(insn):
    """The counters an s_waitcnt waits on: {'vmcnt': n, 'lgkmcnt': n} (absent = no wait)."""
    return {k: int(v) for k, v in re.findall(r"(vmcnt|lgkmcnt|expcnt)\((\d+)\)", insn.operands)}
