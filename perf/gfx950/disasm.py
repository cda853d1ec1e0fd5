"""Disassembly and resource notes of a gfx950 code object (llvm-objdump-22, llvm-readelf-22)."""
import re
import subprocess
from dataclasses import dataclass, field

_SYMBOL = re.compile(r"^([0-9a-fA-F]+) <([^>]+)>:$")
_INSN = re.compile(r"^\s+([a-z_0-9]+)(?:\s+(.*?))?\s*//\s*([0-9A-Fa-f]+):")


@dataclass
class Insn:
    address: int
    mnemonic: str
    operands: str
    text: str  # mnemonic and operands, as the assembler reads them (no comment)

    @property
    def is_branch(self):
        return self.mnemonic == "s_branch" or self.mnemonic.startswith("s_cbranch_")

    @property
    def is_conditional(self):
        return self.mnemonic.startswith("s_cbranch_")

    def branch_target(self):
        """A SOPP branch's target: PC of the next instruction + 4 * simm16 (signed)."""
        simm = int(self.operands.split()[0], 0) & 0xFFFF
        if simm >= 0x8000:
            simm -= 0x10000
        return self.address + 4 + 4 * simm


@dataclass
class Kernel:
    name: str
    insns: list = field(default_factory=list)
    notes: dict = field(default_factory=dict)  # .vgpr_count etc. from the metadata


def _run(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {result.stderr.strip()}")
    return result.stdout


def disassemble(objdump, path):
    """Kernels of a code object by symbol, each with its instructions in address order.

    The padding after s_endpgm (s_nop, s_code_end) is kept: it is never reached, and the
    control-flow analysis only follows edges."""
    kernels, current = {}, None
    for line in _run([objdump, "-d", "--no-show-raw-insn", path]).splitlines():
        m = _SYMBOL.match(line)
        if m:
            current = Kernel(m.group(2))
            kernels[current.name] = current
            continue
        m = _INSN.match(line)
        if m and current is not None:
            mnemonic, operands = m.group(1), (m.group(2) or "").strip()
            current.insns.append(Insn(int(m.group(3), 16), mnemonic, operands,
                                      f"{mnemonic} {operands}".strip()))
    return kernels


def read_notes(readelf, path, kernels):
    """Adds each kernel's AMDGPU metadata (.vgpr_count, .agpr_count, .sgpr_count,
    .group_segment_fixed_size, .private_segment_fixed_size, spill counts) to kernels."""
    record, name = {}, None

    def flush():
        if name in kernels:
            kernels[name].notes = dict(record)

    for line in _run([readelf, "--notes", path]).splitlines():
        m = re.match(r"^  - (\.[a-z_]+):\s*(.*)$", line)
        if m:
            flush()
            record, name = {}, None
        else:
            m = re.match(r"^    (\.[a-z_]+):\s*(.*)$", line)
        if m:
            key, value = m.group(1)[1:], m.group(2).strip()
            record[key] = int(value) if re.fullmatch(r"-?\d+", value) else value
            if key == "name":
                name = value
    flush()
    return kernels


def load(objdump, readelf, path):
    return read_notes(readelf, path, disassemble(objdump, path))
