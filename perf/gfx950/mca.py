"""llvm-mca-22's view of a code path: cycles per iteration and resource pressure, with
LLVM's gfx950 scheduling model (llvm/lib/Target/AMDGPU/SISchedule.td: one wave, in-order,
one instruction per cycle, a cycle being one 4-clk issue slot).

The path is fed as straight-line code (branches removed: llvm-mca does not follow them).
v_permlane32_swap is fed as a v_mov_b32 of the same registers: LLVM 22's model gives it two
micro-ops, which llvm-mca's in-order issue stage (dispatch width 1) never issues once an MFMA
is in flight — it spins forever (seen with llvm-mca 22.1.8; a minimal case is a
ds_read_b64_tr_b16, an MFMA, v_permlane32_swap, an MFMA reading the first's result). The
substitute has the same register dependencies and one VALU slot."""
import re
import subprocess
from gfx950.classify import classify

TRIPLE = ["-mtriple=amdgcn-amd-amdhsa", "-mcpu=gfx950"]


def _line(insn):
    if insn.mnemonic.startswith("v_permlane32_swap") or insn.mnemonic.startswith("v_permlane16_swap"):
        regs = re.findall(r"v\d+", insn.operands)
        return f"v_mov_b32 {regs[0]}, {regs[1]}"
    return insn.text


def analyse(mca, insns, iterations=50, timeout=120):
    body = [_line(i) for i in insns if classify(i).unit not in ("branch", "end")]
    text = "\n".join(body) + "\n"
    result = subprocess.run([mca, *TRIPLE, f"-iterations={iterations}", "-"], input=text,
                            capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError(f"llvm-mca failed: {result.stderr.strip()[:500]}")
    out = result.stdout
    total = int(re.search(r"Total Cycles:\s+(\d+)", out).group(1))
    resources = dict(re.findall(r"^\[(\d+)\]\s+-\s+(\w+)", out, re.M))
    pressure = {}
    m = re.search(r"Resource pressure per iteration:\n(.*)\n(.*)\n", out)
    if m:
        values = m.group(2).split()
        for idx, v in enumerate(values):
            if str(idx) in resources:
                pressure[resources[str(idx)]] = 0.0 if v == "-" else float(v)
    return {"cycles_per_iteration": total / iterations, "instructions": len(body), "pressure": pressure}
