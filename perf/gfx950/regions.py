"""The parts of a kernel the model counts: a loop's steady-state path and the straight-line
code before a loop (the prologue).

Steady-state path of a loop: its own blocks (not those of loops nested in it), without
  * cold blocks: a block holding an atomic (the kernels' status counters: bad block ids,
    bad lengths, which never happen with valid data) and the blocks that lead only to it
    through the fall-through of an s_cbranch_execz (the lane-mask test guarding it);
  * the entry blocks of nested loops (every successor inside a nested loop).
Branches inside the path are counted once per iteration: the few short if/else arms of these
loops (a tile-group's first tile, a valid block's base address) are all taken in the steady
state, so the count is an upper bound by a handful of scalar instructions."""
from gfx950 import cfg
from gfx950.classify import classify


def _is_atomic(insn):
    return classify(insn).unit == "vmem" and classify(insn).sub == "atomic"


def cold_blocks(blocks):
    def guard(x):  # the block whose s_cbranch_execz x is the fall-through of, if x has no other entry
        preds = [blocks[p] for p in x.preds]
        if len(preds) == 1 and preds[0].insns[-1].mnemonic == "s_cbranch_execz" and preds[0].index + 1 == x.index:
            return preds[0]
        return None

    cold = set()
    for b in blocks:
        if any(_is_atomic(i) for i in b.insns):
            cold.add(b.index)
            # the lane-mask tests leading only to it are conditional too; the first test,
            # which every lane evaluates, is not
            x = guard(b)
            while x is not None and guard(x) is not None:
                cold.add(x.index)
                x = guard(x)
    return cold


class KernelRegions:
    def __init__(self, kernel):
        self.kernel = kernel
        self.blocks = cfg.build(kernel)
        self.loops = cfg.natural_loops(self.blocks)  # innermost first
        self.cold = cold_blocks(self.blocks)

    def nested(self, loop):
        return [m for m in self.loops if m is not loop and m.body < loop.body]

    def children(self, loop):
        """Loops directly nested in `loop`."""
        inner = self.nested(loop)
        return [m for m in inner if not any(m.body < n.body for n in inner if n is not m)]

    def parent(self, loop):
        outer = [m for m in self.loops if m is not loop and loop.body < m.body]
        return min(outer, key=lambda m: len(m.body)) if outer else None

    def steady_blocks(self, loop):
        inner = set()
        for m in self.nested(loop):
            inner |= m.body
        own = loop.body - inner - self.cold
        entries = {b for b in own
                   if self.blocks[b].succs and all(s in inner for s in self.blocks[b].succs)}
        return sorted(own - entries)

    def steady_insns(self, loop):
        return [i for b in self.steady_blocks(loop) for i in self.blocks[b].insns]

    def insns_of(self, loop):
        return [i for b in sorted(loop.body) for i in self.blocks[b].insns]

    def outside_loops(self):
        """Hot blocks in no loop (prologue and epilogue), in address order."""
        in_loop = set()
        for m in self.loops:
            in_loop |= m.body
        live = cfg.reachable(self.blocks)
        return [b for b in sorted(live) if b not in in_loop and b not in self.cold]

    def prologue_path(self, loop):
        """The instructions of one path from the entry to `loop`'s header through blocks in
        no loop: the workgroup's prologue. Where it has variants, the path with the fewest
        sub-dword loads (q read by 16-byte loads, not byte by byte), then the most instructions
        (the in-kernel WHT rather than a pre-rotated q; any path that loads q at all)."""
        in_loop = set().union(*(l.body for l in self.loops)) if self.loops else set()
        best = {}

        def chain(b):
            if b not in best:
                preds = [p for p in self.blocks[b].preds if p not in in_loop and p not in self.cold and p < b]
                longest = max((chain(p) for p in preds), key=self._weight, default=[])
                best[b] = longest + [b]
            return best[b]

        preds = [p for p in self.blocks[loop.header].preds if p not in in_loop and p not in self.cold]
        if not preds:
            return []
        path = max((chain(p) for p in preds), key=self._weight)
        return [i for b in path for i in self.blocks[b].insns]

    def path_after(self, loop):
        """The hot blocks reachable from `loop`'s exits without re-entering it, in address
        order: the workgroup's epilogue (every branch taken once: an upper bound by the
        instructions of the arms not taken)."""
        in_loops = set().union(*(l.body for l in self.loops)) if self.loops else set()
        todo = [s for b in loop.body for s in self.blocks[b].succs if s not in loop.body]
        seen = set()
        while todo:
            b = todo.pop()
            if b in seen or b in self.cold or b in in_loops:
                continue
            seen.add(b)
            todo.extend(self.blocks[b].succs)
        return [i for b in sorted(seen) for i in self.blocks[b].insns]

    def _weight(self, blocks):
        # Sub-dword loads mark the byte-by-byte variants (q of any stride); a path without any
        # load at all is no better: the control flow may offer one that skips both variants.
        insns = [i for b in blocks for i in self.blocks[b].insns]
        return len(insns) - 1000 * sum(1 for i in insns if classify(i).unit == "vmem" and classify(i).bytes < 4)


def expand(regions, loop, plan):
    """One iteration of `loop` as a straight instruction sequence, its nested loops run in
    place: plan maps a child loop's header to (iterations, plan of that child). A child's
    entry blocks go with it (left out when it runs 0 times); a child not in the plan is not
    run. Cold blocks are left out, as in the steady-state path."""
    r = regions
    inner = set()
    for m in r.nested(loop):
        inner |= m.body
    own = sorted(loop.body - inner - r.cold)
    children = {c.header: c for c in r.children(loop)}
    emitted, out = set(), []

    def run_child(h):
        count, sub = plan[h]
        body = expand(r, children[h], sub)
        for _ in range(count):
            out.extend(body)
        emitted.add(h)

    for b in own:
        block = r.blocks[b]
        entry_of = [h for h, c in children.items() if block.succs and all(s in c.body for s in block.succs)]
        if entry_of:
            h = entry_of[0]
            if h in plan and plan[h][0] > 0:
                out.extend(block.insns)
                if h not in emitted:
                    run_child(h)
            continue
        out.extend(block.insns)
        for s in block.succs:
            if s in children and s in plan and s not in emitted and plan[s][0] > 0:
                run_child(s)
    for h in plan:
        if h not in emitted and plan[h][0] > 0 and h in children:
            run_child(h)
    return out
