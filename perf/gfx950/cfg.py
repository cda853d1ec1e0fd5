"""Control flow of one kernel: basic blocks, dominators, natural loops.

Edges come from the SOPP branches only (s_branch, s_cbranch_*); s_endpgm ends a path. The
analysis is exact for what LLVM emits for these kernels (no indirect branches: s_setpc is
rejected)."""
from dataclasses import dataclass, field


@dataclass
class Block:
    index: int
    insns: list
    succs: list = field(default_factory=list)
    preds: list = field(default_factory=list)

    @property
    def start(self):
        return self.insns[0].address

    @property
    def end(self):  # address after the last instruction
        last = self.insns[-1]
        return self.insns[-1].address + (8 if len(last.operands) and _is_long(last) else 4)


def _is_long(insn):
    # Only used for printing ranges; the analysis itself works on instruction addresses.
    return False


def build(kernel):
    insns = kernel.insns
    if any(i.mnemonic in ("s_setpc_b64", "s_swappc_b64") for i in insns):
        raise ValueError(f"{kernel.name}: indirect branches are not analysed")
    by_address = {i.address: n for n, i in enumerate(insns)}
    leaders = {0}
    for n, i in enumerate(insns):
        if i.is_branch:
            target = i.branch_target()
            if target not in by_address:
                raise ValueError(f"{kernel.name}: branch at {i.address:#x} to {target:#x}, not an instruction")
            leaders.add(by_address[target])
            if n + 1 < len(insns):
                leaders.add(n + 1)
        elif i.mnemonic == "s_endpgm" and n + 1 < len(insns):
            leaders.add(n + 1)
    starts = sorted(leaders)
    blocks = []
    block_of = {}
    for b, s in enumerate(starts):
        e = starts[b + 1] if b + 1 < len(starts) else len(insns)
        blocks.append(Block(b, insns[s:e]))
        block_of[s] = b
    for b in blocks:
        last = b.insns[-1]
        if last.is_branch:
            b.succs.append(block_of[by_address[last.branch_target()]])
        falls_through = not (last.mnemonic in ("s_branch", "s_endpgm"))
        if falls_through and b.index + 1 < len(blocks):
            b.succs.append(b.index + 1)
    for b in blocks:
        for s in b.succs:
            blocks[s].preds.append(b.index)
    return blocks


def reachable(blocks):
    seen, todo = {0}, [0]
    while todo:
        for s in blocks[todo.pop()].succs:
            if s not in seen:
                seen.add(s)
                todo.append(s)
    return seen


def dominators(blocks):
    """Iterative data-flow dominators over the reachable blocks."""
    live = reachable(blocks)
    dom = {b: set(live) for b in live}
    dom[0] = {0}
    changed = True
    while changed:
        changed = False
        for b in sorted(live):
            if b == 0:
                continue
            preds = [p for p in blocks[b].preds if p in live]
            new = set.intersection(*(dom[p] for p in preds)) | {b} if preds else {b}
            if new != dom[b]:
                dom[b], changed = new, True
    return dom


@dataclass
class Loop:
    header: int
    latches: list
    body: set  # block indices

    def contains(self, other):
        return other.body <= self.body and other is not self


def natural_loops(blocks):
    """Natural loops (one per header, the union over its back edges), innermost first."""
    dom = dominators(blocks)
    loops = {}
    for b in dom:
        for s in blocks[b].succs:
            if s in dom[b]:  # back edge b -> s
                body, todo = {s, b}, ([b] if b != s else [])
                while todo:
                    for p in blocks[todo.pop()].preds:
                        if p in dom and p not in body:
                            body.add(p)
                            todo.append(p)
                loop = loops.setdefault(s, Loop(s, [], set()))
                loop.latches.append(b)
                loop.body |= body
    return sorted(loops.values(), key=lambda l: len(l.body))
