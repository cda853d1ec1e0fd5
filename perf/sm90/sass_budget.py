#!/usr/bin/env python3
"""SASS instructions per token and KV head of the sm90 decode's steady-state tile loop.

    sass_budget.py --object LIB [--kernel REGEX]... [checks]    disassemble LIB (a .o or .a of
                                                                 nvcc's) with cuobjdump + nvdisasm
    sass_budget.py --sass FILE [--kernel REGEX]... [checks]     read an nvdisasm listing instead
                                                                 (with -gi: source lines too)
    sass_budget.py --self-test                                  the counter on listings whose
                                                                 counts are known
                                                                 (sass_budget_self_test.py)

    checks: --expect N --tolerance T   the count must lie in N +- T (a recorded count: any
                                       regression, or a broken counter, shows)
            --budget B                 the count must be <= B (the issue-46 budget)
            --expect-over-budget       invert --budget: pass only if the count is above B (the
                                       self-test that the budget check fails on a real kernel)
    other:  --lines                    per source line (needs a listing with line info: the audit)
            --groups FILE              per group of kernel statements (FILE: `name | lines`;
                                       the audit's is in its campaign folder)

Tools: --cuobjdump and --nvdisasm (default: found on PATH). Nothing here depends on how a tool
wraps long lines or on the length of a path: cuobjdump only extracts the cubins into a
temporary folder, and nvdisasm's listing is read line by line by instruction address.

What is counted, and how (the model; docs/perf-log/2026-12-05-sm90-instruction-budget.md):

* The tile loop is the innermost natural loop (a back edge whose target dominates its source)
  that holds a warpgroup MMA (*GMMA): one iteration is one tile of 64 tokens. Warpgroup MMAs
  are executed by the 4 warps of a warpgroup, so the loop's code counts 4 times per tile.
* One iteration's code is every block reachable from the loop head without taking the back
  edge, inner loops entered once (a waterfall loop over distinct values runs once for one
  block run per tile, a retry loop once). A warp executes a block when any of its lanes does,
  so a branch that depends on data (the rescale when a row's maximum moved, a partition's
  end) counts both of its sides: the count is an upper bound of the steady state, except for:
    - cold paths: the divergent fallback of a warp collective (BRA.DIV), the retry of an
      mbarrier wait (the data has arrived: the kernel is issue-bound, not waiting), slow-path
      subroutine calls (the callee is not counted);
    - votes: a branch on a CTA- or warp-wide "any" (BAR.RED.OR, VOTE.ANY / VOTEU.ANY) takes
      the "no thread" side: a kernel votes to skip work that the steady state does not need
      (today: the two-multiply P.V of a tile with a scale byte >= 133; the second design: the
      rescale gated by a ballot of moved maxima).
* Copy issue (the copies: cp.async.bulk = UBLKCP, tensor-map loads = UTMALDG / UTMAPF): inside
  the tile loop, the outermost if-then region that holds it is one warp's work (today: `warp ==
  0 && refill`), counted once per tile instead of 4 times, along its shortest path through the
  copies (the table refills, partition switches and bad-id counts it can skip are not the
  steady state; today 106 of the region's 606 instructions). A kernel whose copies are issued
  by a loop of their own (a producer warp: the second design) adds one iteration of that loop
  per tile, counted the same way. Work that helper warps do in other loops (tables built for
  the consumers, say) is not seen: a kernel that has such loops must extend the model.
* Per token and KV head = (4 x consumer path + copy issue) / 64: what ncu's "warp instructions
  executed" per token gives for a long partition (predicated-off instructions are issued, and
  counted). Left out: the partition's setup and epilogue, the CTA's prologue (1.7 and ~0.9 per
  token today at 64 x 131k, where ncu counts 53.1 against the loop's 50.3). A kernel that folds
  a unit's epilogue into the tile loop behind a branch ("last tile of the unit") has it counted
  every tile by the rule above: keep it outside the tile loop (today's shape: a unit loop around
  the tile loop), or teach the model that branch.

Categories (by opcode, except conversion): conversion = every instruction on a data path from
a shared-memory load to the A operand registers of a warpgroup MMA (the K/V code -> E4M3/bf16
operand work, V scale multiplies included); MMA = *GMMA, WARPGROUP.* and the operand/scale loads
of those paths (LDSM, LDS); softmax = floating-point work and shuffles outside those paths
(scores, K-scale promotion, maxima, exp2, P); barrier/sync; address/control (integer work
outside the conversion paths, branches, uniform-datapath and constant loads); moves; spills;
other (the remaining loads and stores, votes). The K-scale decode (integer) falls under
address/control here; the audit splits by source line.
"""
import argparse
import collections
import heapq
import os
import re
import sys

from sass_cfg import BRANCHES, Cfg, disassemble, parse_listing

TILE_TOKENS = 64          # tokens per tile: the wgmma M of the QK (tokens as M)
WARPGROUP_WARPS = 4       # warps that execute one warpgroup MMA

# ---------------------------------------------------------------- one iteration
# the copies themselves (cp.async.bulk, tensor-map loads and prefetches); not mbarrier arrives,
# which a consumer also makes (on a producer/consumer ring's "empty" barriers)
COPY_ISSUE = re.compile(r"^(UBLKCP|UTMALDG|UTMAPF)")


def is_gmma(i):
    return "GMMA" in i.base


def guard_pred(i):
    """(predicate name, negated) of an instruction's guard, or None."""
    if not i.guard or i.guard == "@PT":
        return None
    g = i.guard[1:]
    return (g.lstrip("!"), g.startswith("!"))


PRED_RE = re.compile(r"U?P[T0-6]")
REG_DEST_RE = re.compile(r"U?R(\d+|Z)")


def writes_pred(i, p):
    """Does instruction i write predicate p? SASS puts destinations first: an optional register
    (B2R.RESULT RZ, P4; VOTE.ANY R77, PT, P4; IADD3 R14, P1, ...), then up to two predicates
    (ISETP P4, PT, ...; a vote writes one, its last operand is the source)."""
    ops = [o.strip() for o in i.args.split(",")]
    k = 1 if ops and REG_DEST_RE.fullmatch(ops[0]) else 0
    limit = 1 if i.base in ("VOTE", "VOTEU") else 2
    dests = []
    while k < len(ops) and len(dests) < limit and PRED_RE.fullmatch(ops[k]):
        dests.append(ops[k])
        k += 1
    return p in dests


def pred_source(cfg, b, p):
    """The instruction of block b (or of its single predecessor chain) that last wrote p."""
    seen = set()
    while b is not None and b not in seen:
        seen.add(b)
        for i in reversed(cfg.insns(b)):
            if writes_pred(i, p):
                return i
        ps = [x for x in cfg.pred[b] if x in cfg.reachable]
        b = ps[0] if len(ps) == 1 else None
    return None


def is_any_vote(cfg, b, src):
    """Is src an "any thread" vote: VOTE.ANY / VOTEU.ANY, or the result (B2R.RESULT) of a CTA
    barrier reduction BAR.RED.OR (__syncthreads_or)? (An "all" vote's rare side is the other.)"""
    if src.base in ("VOTE", "VOTEU"):
        return ".ANY" in src.op
    if src.op.startswith("B2R.RESULT"):
        ins = cfg.insns(b)
        k = next((n for n, i in enumerate(ins) if i is src), len(ins))
        bar = next((i for i in reversed(ins[:k]) if i.op.startswith("BAR.RED")), None)
        return bar is not None and bar.op.startswith("BAR.RED.OR")
    return False


def steady_edges(cfg, body, head):
    """Edges of one iteration inside `body` that the steady state takes (reasons for the rest)."""
    inner_heads = {}
    for h, latches, lbody in cfg.loops():
        if h != head and lbody <= body:
            inner_heads[h] = latches
    keep, dropped = {}, []
    for u in body:
        last = cfg.last(u)
        out = []
        for kind, v in cfg.succ[u]:
            if v not in body:
                continue
            if v == head:
                continue  # the back edge: the next tile
            if v in inner_heads and u in inner_heads[v]:
                dropped.append((u, v, "inner loop once"))
                continue
            reason = None
            if last.base in BRANCHES:
                gp = guard_pred(last)
                src = pred_source(cfg, u, gp[0]) if gp else None
                taken_when_true = gp is not None and not gp[1]
                if last.op.startswith("BRA.DIV") and kind == "taken":
                    reason = "divergent fallback"
                elif src is not None and src.op.startswith("SYNCS.PHASECHK"):
                    # p = the phase completed; the steady state finds it completed
                    if (kind == "taken") != taken_when_true:
                        reason = "mbarrier retry"
                elif src is not None and is_any_vote(cfg, u, src):
                    # p = "some thread voted yes"; the steady state: no thread
                    if (kind == "taken") == taken_when_true:
                        reason = "vote: some thread"
            if reason:
                dropped.append((u, v, reason))
            else:
                out.append(v)
        keep[u] = out
    return keep, dropped


def reach(keep, start):
    seen, stack = {start}, [start]
    while stack:
        u = stack.pop()
        for v in keep.get(u, ()):
            if v not in seen:
                seen.add(v)
                stack.append(v)
    return seen


def shortest_path(cfg, keep, start, goal, allowed):
    """Blocks of the path start -> goal (goal excluded) with the fewest instructions, over
    `keep` edges between `allowed` blocks (one iteration: a DAG)."""
    size = lambda b: len(cfg.insns(b))
    best, prev, heap = {start: size(start)}, {}, [(size(start), start)]
    while heap:
        d, u = heapq.heappop(heap)
        if u == goal:
            break
        if d > best.get(u, float("inf")):
            continue
        for v in keep.get(u, ()):
            if v != goal and v not in allowed:
                continue
            nd = d + (0 if v == goal else size(v))
            if nd < best.get(v, float("inf")):
                best[v], prev[v] = nd, u
                heapq.heappush(heap, (nd, v))
    if goal not in best:
        return None
    path, x = [], prev[goal]
    while True:
        path.append(x)
        if x == start:
            break
        x = prev[x]
    return path[::-1]


def copy_issue_path(cfg, keep, entry, exit_, region):
    """The least code one warp runs from entry to exit_ that issues a tile's copies: the
    shortest path through every copy-issue block, in address order."""
    copies = sorted((b for b in region if any(COPY_ISSUE.match(i.op) for i in cfg.insns(b))),
                    key=lambda b: cfg.blocks[b][0])
    path, at = [], entry
    for c in copies + [exit_]:
        if c == at:
            continue
        seg = shortest_path(cfg, keep, at, c, region)
        if seg is None:
            raise SystemExit(f"sass_budget: no path from {cfg.ins[cfg.blocks[at][0]].addr:#x} to "
                             f"{cfg.ins[cfg.blocks[c][0]].addr:#x} in the copy issue")
        path.extend(seg)
        at = c
    return path


def copy_region(cfg, keep, blocks):
    """(blocks, entry, exit, guard) of the outermost if-then region of one iteration that holds
    the copy issue; (set(), None, None, None) if there is none."""
    copy_blocks = [b for b in blocks if any(COPY_ISSUE.match(i.op) for i in cfg.insns(b))]
    if not copy_blocks:
        return set(), None, None, None
    best = None
    for d in sorted(blocks, key=lambda x: cfg.blocks[x][0]):
        succ = keep.get(d, [])
        if len(succ) != 2 or not all(d in cfg.dom[c] for c in copy_blocks):
            continue
        for s_in, s_out in ((succ[0], succ[1]), (succ[1], succ[0])):
            if s_in == s_out:
                continue
            region = reach({k: [v for v in vs if v != s_out] for k, vs in keep.items()}, s_in)
            if all(c in region for c in copy_blocks) and s_out in reach(keep, s_in) and \
                    all(s_in in cfg.dom[x] for x in region):
                if best is None or len(region) > len(best[0]):
                    best = (region, s_in, s_out, d)
    if best is None:
        raise SystemExit("sass_budget: the copy issue inside the tile loop is not in an if-then region of its own: "
                         "the model (one warp issues a tile's copies) does not fit this kernel")
    for b in best[0]:
        for i in cfg.insns(b):
            if is_gmma(i) or i.base == "BAR":
                raise SystemExit(f"sass_budget: the copy-issue region holds {i.op} at {i.addr:#x}: "
                                 "it cannot be one warp's code")
    return best


# ---------------------------------------------------------------- categories
def reg_width(i, position):
    """Registers covered by operand `position` of i (0 = destination)."""
    op = i.op
    if is_gmma(i):
        if position == 1:
            return 4  # A fragment
        m = re.search(r"64x(\d+)x", op)
        return int(m.group(1)) // 2 if m and position == 0 else 1
    if position == 0:
        if op.startswith("LDSM"):
            return 4 if op.endswith(".4") else 2 if op.endswith(".2") else 1
        if ".128" in op:
            return 4
        if ".64" in op or op.startswith("IMAD.WIDE") or op.startswith("CS2R"):
            return 2
    return 1


def operands(i):
    """(destination registers, source registers) of i, register ranges expanded."""
    ops = [o.strip() for o in re.split(r",(?![^\[]*\])", i.args)] if i.args else []
    dests, srcs = [], []
    stores = i.base in ("STS", "STG", "STL", "ST", "RED", "REDG", "ATOM", "ATOMS", "ATOMG", "SYNCS", "BAR",
                        "UBLKCP", "UTMALDG", "BSSY", "BSYNC", "WARPSYNC", "BRA", "EXIT", "CALL", "RET")
    for pos, o in enumerate(ops):
        regs = re.findall(r"\bR(\d+)\b", o)
        if not regs:
            continue
        if pos == 0 and not stores and not o.startswith("["):
            w = reg_width(i, 0)
            dests.extend(int(regs[0]) + k for k in range(w))
        else:
            w = reg_width(i, pos) if is_gmma(i) else 1
            for r in regs:
                srcs.extend(int(r) + k for k in range(w))
    return dests, srcs


def conversion_set(cfg, blocks):
    """Instructions (by address) on a data path from a shared-memory load to a GMMA A operand."""
    seq = sorted((i for b in blocks for i in cfg.insns(b)), key=lambda i: i.addr)
    last_def = {}
    producer = {}  # address -> {reg: defining instruction}
    for i in seq:
        d, s = operands(i)
        producer[i.addr] = {r: last_def.get(r) for r in s}
        for r in d:
            last_def[r] = i
    conv, loads, stack = set(), set(), []
    for i in seq:
        if is_gmma(i):
            _, s = operands(i)
            a_regs = s[:4] if s else []
            stack.extend(producer[i.addr].get(r) for r in a_regs)
    while stack:
        i = stack.pop()
        if i is None or i.addr in conv or i.addr in loads:
            continue
        if i.base in ("LDSM", "LDS", "LD", "LDG"):
            loads.add(i.addr)
            continue
        if is_gmma(i):
            continue
        conv.add(i.addr)
        stack.extend(producer[i.addr].values())
    return conv, loads


CATEGORIES = ["conversion", "MMA", "softmax", "barrier/sync", "address/control", "moves", "spills", "other"]
SYNC_OPS = {"BAR", "B2R", "SYNCS", "MEMBAR", "FENCE", "WARPSYNC", "BSSY", "BSYNC", "DEPBAR", "ERRBAR", "NANOSLEEP",
            "YIELD", "CCTL", "ELECT", "ENDCOLLECTIVE"}
FLOAT_OPS = {"FADD", "FMUL", "FFMA", "FMNMX", "FSEL", "FSETP", "FSET", "MUFU", "F2FP", "F2F", "F2I", "I2F", "FCHK",
             "HADD2", "HMUL2", "HFMA2", "HMNMX2", "HSETP2", "SHFL", "FRND", "REDUX"}
MOVE_OPS = {"MOV", "UMOV", "MOV32I", "CS2R", "S2R", "S2UR", "R2UR", "MOVM"}
INT_OPS = {"IMAD", "IADD3", "IADD", "VIADD", "VIADDMNMX", "LEA", "LOP3", "LOP", "SHF", "SHL", "SHR", "ISETP", "SEL",
           "IMNMX", "VIMNMX", "PRMT", "POPC", "FLO", "BREV", "PLOP3", "P2R", "R2P", "IABS", "BMSK", "SGXT", "LDC", "ULDC",
           "BRA", "BRX", "EXIT", "CALL", "RET", "JMP", "UIADD3", "ULOP3", "USHF", "UIMAD", "ULEA", "USEL", "UISETP",
           "UPLOP3", "UPRMT", "UFLO", "UPOPC", "USGXT", "UBMSK", "VOTEU", "PMTRIG", "NOP", "BPT", "KILL", "IDP"}


def category(i, conv, mma_loads):
    b, op = i.base, i.op
    if i.addr in conv:
        return "conversion"
    if "GMMA" in b or b == "WARPGROUP" or i.addr in mma_loads or b == "LDSM":
        return "MMA"
    if b in ("LDL", "STL"):
        return "spills"
    if b in SYNC_OPS:
        return "barrier/sync"
    if op.startswith("IMAD.MOV") or b in MOVE_OPS:
        return "moves"
    if b in FLOAT_OPS:
        return "softmax"
    if b in INT_OPS:
        return "address/control"
    return "other"


# ---------------------------------------------------------------- the count
class Count:
    def __init__(self, name):
        self.name = name
        self.per_token = 0.0
        self.by_category = collections.OrderedDict((c, 0.0) for c in CATEGORIES)
        self.by_opcode = collections.Counter()
        self.by_line = collections.Counter()
        self.parts = collections.OrderedDict()   # part -> (instructions per tile per warp, warps)
        self.notes = []

    def add(self, insns, weight, conv, mma_loads, part, warps):
        n = 0
        for i in insns:
            w = weight / TILE_TOKENS
            self.per_token += w
            self.by_category[category(i, conv, mma_loads)] += w
            self.by_opcode[i.op] += w
            if i.src:
                self.by_line[(i.src, category(i, conv, mma_loads), part)] += w
            n += 1
        old = self.parts.get(part, (0, warps))
        self.parts[part] = (old[0] + n, warps)


def short_name(mangled):
    m = re.search(r"(\w+?)ILi(\d+)ELi(\d+)E", mangled)
    if m:
        name = re.sub(r"^_ZN\d+\w+?\d+(?=[a-z])", "", m.group(1))
        name = re.sub(r"^.*\d(?=[a-z_]+$)", "", name)
        return f"{name}<{m.group(2)}, {m.group(3)}>"
    return mangled


def count_kernel(name, ins):
    cfg = Cfg(ins)
    gmma_loops = [(h, lat, body) for h, lat, body in cfg.loops()
                  if any(is_gmma(i) for b in body for i in cfg.insns(b))]
    if not gmma_loops:
        raise SystemExit(f"sass_budget: {name}: no loop holds a warpgroup MMA (*GMMA): not a tile loop kernel")
    head, latches, body = min(gmma_loops, key=lambda x: len(x[2]))
    keep, dropped = steady_edges(cfg, body, head)
    iteration = reach(keep, head)
    region, entry, exit_, guard = copy_region(cfg, keep, iteration)
    consumer = iteration - region
    conv, mma_loads = conversion_set(cfg, iteration)
    c = Count(name)
    c.loop = (cfg.ins[cfg.blocks[head][0]].addr, max(cfg.last(x).addr for x in latches))
    c.dropped = collections.Counter(r for _, _, r in dropped)
    for b in sorted(consumer):
        c.add(cfg.insns(b), WARPGROUP_WARPS, conv, mma_loads, "consumer path (every warp)", WARPGROUP_WARPS)
    if region:
        path = copy_issue_path(cfg, keep, entry, exit_, region)
        for b in path:
            c.add(cfg.insns(b), 1, conv, mma_loads, "copy issue (one warp)", 1)
        union = sum(len(cfg.insns(b)) for b in region)
        c.notes.append(f"copy issue: the region after the branch at {cfg.last(guard).addr:#x} ({union} instructions "
                       f"in all), one warp per tile, its shortest path through the copies counted")
    if not region:
        # copies issued outside the tile loop: a producer loop of its own counts once per tile
        prod = [(h, lat, b) for h, lat, b in cfg.loops()
                if not (b & body) and any(COPY_ISSUE.match(i.op) for x in b for i in cfg.insns(x))]
        if prod:
            ph, plat, pbody = min(prod, key=lambda x: len(x[2]))
            pkeep, _ = steady_edges(cfg, pbody, ph)
            pit = reach(pkeep, ph)
            # as for a copy region inside the loop: the least code from the head through the
            # copies to a latch (the table refills and unit switches are not the steady state)
            paths = [copy_issue_path(cfg, pkeep, ph, lat, pit) + [lat] for lat in plat if lat in pit and lat != ph]
            path = min(paths, key=lambda p: sum(len(cfg.insns(b)) for b in p)) if paths else [ph]
            for b in path:
                c.add(cfg.insns(b), 1, conv, mma_loads, "producer loop (one warp per tile)", 1)
            union = sum(len(cfg.insns(b)) for b in pit)
            c.notes.append(f"copy issue: producer loop at {cfg.ins[cfg.blocks[ph][0]].addr:#x} ({union} instructions in "
                           "all), one iteration per tile, its shortest path through the copies counted")
        else:
            c.notes.append("copy issue: none inside or beside the tile loop (synchronous copies are in the loop's count)")
    return c


def source_text(path, line, cache={}):
    """The text of a source line, if the file is readable here (the audit: not the tests)."""
    if path not in cache:
        try:
            with open(path) as f:
                cache[path] = f.read().split("\n")
        except OSError:
            cache[path] = []
    text = cache[path]
    return text[line - 1].strip() if 0 < line <= len(text) else ""


def line_table(c):
    """Per token by the kernel's own statement (the outermost frame of the inlined location),
    split into conversion and the rest, each with its source text; then the innermost lines."""
    out = ["  by statement of the kernel (outermost frame), per token: all / conversion / rest, by part"]
    stmt = collections.defaultdict(lambda: collections.Counter())
    inner = collections.defaultdict(lambda: collections.Counter())
    for (src, cat, part), w in c.by_line.items():
        key = src[-1]
        stmt[key]["all"] += w
        stmt[key]["_conv" if cat == "conversion" else "_rest"] += w
        stmt[key][cat] += w
        stmt[key]["copy" if part.startswith("copy") or part.startswith("producer") else "consumer"] += w
        inner[src[0]][cat] += w
    for (f, n), v in sorted(stmt.items(), key=lambda x: -x[1]["all"]):
        cats = ", ".join(f"{k} {v[k]:.2f}" for k in CATEGORIES if v[k] >= 0.005 and k != "conversion")
        out.append(f"    {v['all']:6.2f} {v['_conv']:6.2f} {v['_rest']:6.2f}  {os.path.basename(f)}:{n}"
                   f"{'  [copy issue]' if v['copy'] > v['consumer'] else ''}  ({cats})  {source_text(f, n)[:90]}")
    out.append("  by innermost source line, per token (category: count)")
    for (f, n), v in sorted(inner.items(), key=lambda x: -sum(x[1].values())):
        cats = ", ".join(f"{k} {v[k]:.2f}" for k in CATEGORIES if v[k] >= 0.005)
        out.append(f"    {sum(v.values()):6.2f}  {os.path.basename(f)}:{n}  ({cats})  {source_text(f, n)[:80]}")
    return out


def parse_groups(path):
    """[(name, set of kernel lines)] from a file of `name | 12 40-52 ...` lines (# comments)."""
    groups = []
    for raw in open(path).read().split("\n"):
        raw = raw.split("#")[0].strip()
        if not raw:
            continue
        name, _, ranges = raw.partition("|")
        lines = set()
        for r in ranges.split():
            a, _, b = r.partition("-")
            lines.update(range(int(a), int(b or a) + 1))
        groups.append((name.strip(), lines))
    return groups


def group_table(c, groups):
    """Per token by group of kernel statements: all, conversion, the rest, by category."""
    acc = collections.OrderedDict((name, collections.Counter()) for name, _ in groups)
    acc["(no group)"] = collections.Counter()
    for (src, cat, _), w in c.by_line.items():
        name = next((n for n, lines in groups if src[-1][1] in lines), "(no group)")
        acc[name][cat] += w
        acc[name]["_all"] += w
    out = ["  by group (per token): | group | all | conversion | rest | rest by category |", "  |---|---:|---:|---:|---|"]
    rest_total = 0.0
    for name, v in acc.items():
        rest = v["_all"] - v["conversion"]
        rest_total += rest
        cats = ", ".join(f"{k} {v[k]:.2f}" for k in CATEGORIES if v[k] >= 0.005 and k != "conversion")
        out.append(f"  | {name} | {v['_all']:.2f} | {v['conversion']:.2f} | {rest:.2f} | {cats} |")
    out.append(f"  not conversion, in all: {rest_total:.2f}")
    return out


def report(c, lines=False, budget=None, groups=None):
    out = []
    out.append(f"{short_name(c.name)}  ({c.name})")
    out.append(f"  tile loop {c.loop[0]:#x}..{c.loop[1]:#x}; edges not taken in the steady state: "
               + (", ".join(f"{n} {r}" for r, n in sorted(c.dropped.items())) or "none"))
    for note in c.notes:
        out.append(f"  {note}")
    for part, (n, warps) in c.parts.items():
        out.append(f"  {part}: {n} instructions per tile x {warps} warp(s) = {n * warps / TILE_TOKENS:.2f} per token")
    out.append(f"  per token and KV head: {c.per_token:.2f}" + (f"  (budget {budget:g})" if budget is not None else ""))
    for cat, v in c.by_category.items():
        out.append(f"    {cat:16s} {v:6.2f}")
    out.append("  by opcode (per token):")
    for op, v in sorted(c.by_opcode.items(), key=lambda x: -x[1])[:24]:
        out.append(f"    {op:40s} {v:6.2f}")
    if groups:
        out.extend(group_table(c, groups))
    if lines:
        out.extend(line_table(c))
    return "\n".join(out)


# ---------------------------------------------------------------- checks
def check(c, expect=None, tolerance=None, budget=None, over_budget=False, quiet=False):
    """0 if every requested check holds, else 1 (with the reasons printed)."""
    bad = []
    if expect is not None and abs(c.per_token - expect) > tolerance:
        bad.append(f"{c.per_token:.2f} instructions per token, recorded {expect:g} +- {tolerance:g}: the kernel's "
                   "tile loop changed (or the counter did); if intended, record the new count")
    if budget is not None:
        over = c.per_token > budget
        if over and not over_budget:
            bad.append(f"{c.per_token:.2f} instructions per token is above the budget of {budget:g}")
        if not over and over_budget:
            bad.append(f"{c.per_token:.2f} instructions per token is within the budget of {budget:g}, which this "
                       "kernel was recorded to exceed: make it the budget's subject (tests/CMakeLists.txt)")
    for b in bad:
        if not quiet:
            print(f"FAILED: {short_name(c.name)}: {b}")
    return 1 if bad else 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--object")
    ap.add_argument("--sass")
    ap.add_argument("--kernel", action="append", default=[])
    ap.add_argument("--cuobjdump", default="cuobjdump")
    ap.add_argument("--nvdisasm", default="nvdisasm")
    ap.add_argument("--expect", type=float)
    ap.add_argument("--tolerance", type=float, default=0.5)
    ap.add_argument("--budget", type=float)
    ap.add_argument("--expect-over-budget", action="store_true")
    ap.add_argument("--lines", action="store_true")
    ap.add_argument("--groups")
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args(argv)
    if a.self_test:
        from sass_budget_self_test import self_test
        return self_test()
    if bool(a.object) == bool(a.sass):
        ap.error("give exactly one of --object and --sass")
    text = open(a.sass).read() if a.sass else disassemble(a.object, a.cuobjdump, a.nvdisasm, a.kernel)
    funcs = parse_listing(text)
    if not funcs:
        raise SystemExit("sass_budget: no kernel in the listing")
    names = [n for n in funcs if all(re.search(k, n) for k in a.kernel)] if a.kernel else list(funcs)
    if not names:
        raise SystemExit(f"sass_budget: no kernel matches {a.kernel}; kernels: " + ", ".join(funcs))
    status = 0
    for n in names:
        c = count_kernel(n, funcs[n])
        print(report(c, a.lines, a.budget, parse_groups(a.groups) if a.groups else None))
        status |= check(c, a.expect, a.tolerance, a.budget, a.expect_over_budget)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
