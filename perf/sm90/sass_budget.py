#!/usr/bin/env python3
"""SASS instructions per token and KV head of the sm90 decode's steady-state tile loop.

    sass_budget.py --object LIB [--kernel REGEX]... [checks]    disassemble LIB (a .o or .a of
                                                                 nvcc's) with cuobjdump + nvdisasm
    sass_budget.py --sass FILE [--kernel REGEX]... [checks]     read an nvdisasm listing instead
                                                                 (with -gi: source lines too)
    sass_budget.py --self-test                                  the counter on listings whose
                                                                 counts are known

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
* Copy issue (cp.async.bulk = UBLKCP, tensor-map copies = UTMALDG, mbarrier expect_tx =
  SYNCS.ARRIVE.TRANS64): inside the tile loop, the outermost if-then region that holds it is
  one warp's work (today: `warp == 0 && refill`), counted once per tile instead of 4 times. A
  kernel whose copies are issued in a loop of their own (a producer warp: the second design)
  adds that loop's iteration once per tile.
* Per token and KV head = (4 x consumer path + copy-issue region) / 64: what ncu's "warp
  instructions executed" per token gives for a long partition (predicated-off instructions
  are issued, and counted).

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
import os
import re
import shutil
import subprocess
import sys
import tempfile

TILE_TOKENS = 64          # tokens per tile: the wgmma M of the QK (tokens as M)
WARPGROUP_WARPS = 4       # warps that execute one warpgroup MMA

# ---------------------------------------------------------------- the listing
FUNC_RE = re.compile(r"^//-+ \.text\.(\S+) -+\s*$")
LABEL_RE = re.compile(r"^(\.L_x_\d+):")
INSN_RE = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(?:(@!?U?P[T0-9]+)\s+)?([A-Z][A-Za-z0-9_.]*)\s*(.*?)\s*;")
LINE_RE = re.compile(r'^\s*//## File "([^"]+)", line (\d+)(.*)$')
INLINED_RE = re.compile(r'inlined at "([^"]+)", line (\d+)')
TARGET_RE = re.compile(r"`\((\.L_x_\d+)\)")


class Insn:
    __slots__ = ("addr", "guard", "op", "args", "labels", "src")

    def __init__(self, addr, guard, op, args, labels, src):
        self.addr, self.guard, self.op, self.args, self.labels, self.src = addr, guard, op, args, labels, src

    @property
    def base(self):
        return self.op.split(".")[0]

    def __repr__(self):
        return f"{self.addr:05x} {self.guard or ''} {self.op} {self.args}"


def parse_listing(text):
    """{mangled kernel name: [Insn]} from nvdisasm's output (-c, optionally -g/-gi)."""
    funcs = collections.OrderedDict()
    cur, labels, src, chain = None, [], None, None
    for raw in text.split("\n"):
        m = FUNC_RE.match(raw)
        if m:
            cur = funcs.setdefault(m.group(1), [])
            labels, src, chain = [], None, None
            continue
        if cur is None:
            continue
        m = LABEL_RE.match(raw)
        if m:
            labels.append(m.group(1))
            continue
        m = LINE_RE.match(raw)
        if m:
            # With -gi an inlined location is a run of lines, the innermost first, each naming
            # the call site it is inlined at, down to the kernel's own line: keep the run.
            if chain is None:
                chain = []
            chain.append((m.group(1), int(m.group(2))))
            if not INLINED_RE.search(m.group(3)):
                src, chain = tuple(chain), None
            continue
        m = INSN_RE.match(raw)
        if m:
            if chain:  # a run cut short: keep what it gave
                src, chain = tuple(chain), None
            cur.append(Insn(int(m.group(1), 16), m.group(2), m.group(3), m.group(4), labels, src))
            labels = []
    return funcs


def disassemble(obj, cuobjdump, nvdisasm, kernels=()):
    """nvdisasm listing (with line info where the object has it) of the cubins in obj (a .o or
    .a of nvcc's) whose symbols match every regex in `kernels`."""
    for tool in (cuobjdump, nvdisasm):
        if os.sep in tool and not os.access(tool, os.X_OK) or os.sep not in tool and not shutil.which(tool):
            raise SystemExit(f"sass_budget: {tool} not found: perf/sm90/sass_tools.sh finds or fetches cuobjdump and "
                             "nvdisasm (./uq test --kokkos cuda runs it and passes the folder to CMake as UQ_SASS_TOOLS_DIR)")
    with tempfile.TemporaryDirectory(prefix="uq-sass-") as tmp:
        r = subprocess.run([cuobjdump, "-xelf", "all", os.path.abspath(obj)], cwd=tmp,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        if r.returncode != 0:
            raise SystemExit(f"sass_budget: {cuobjdump} -xelf all {obj} failed (exit {r.returncode}): {r.stderr.strip()}")
        cubins = sorted(f for f in os.listdir(tmp) if f.endswith(".cubin"))
        if not cubins:
            raise SystemExit(f"sass_budget: {obj} holds no cubin (is it an nvcc object or library?)")
        out = []
        for c in cubins:
            path = os.path.join(tmp, c)
            with open(path, "rb") as f:
                data = f.read()
            if not all(re.search(k.encode(), data) for k in kernels):
                continue  # no symbol of this cubin matches: not worth disassembling
            r = subprocess.run([nvdisasm, "-c", "-gi", path],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
            if r.returncode != 0:
                raise SystemExit(f"sass_budget: {nvdisasm} failed on {c} (exit {r.returncode}): {r.stderr.strip()}")
            out.append(r.stdout)
        return "\n".join(out)


# ---------------------------------------------------------------- control flow
BRANCHES = {"BRA", "BRX", "JMP", "JMX"}
ENDS = {"EXIT", "RET", "KILL"}


def is_cold_call(i):
    return i.base == "CALL"


def conditional(i):
    """A branch that may fall through: guarded, or BRA.DIV / BRA.U.ANY / BRA with a predicate."""
    if i.guard and i.guard != "@PT":
        return True
    if i.op.startswith("BRA.DIV") or ".ANY" in i.op:
        return True
    return bool(re.match(r"^!?U?P[0-6]\b", i.args))


class Cfg:
    def __init__(self, ins):
        self.ins = ins
        label_at = {}
        for k, i in enumerate(ins):
            for lab in i.labels:
                label_at[lab] = k
        leaders = {0}
        for k, i in enumerate(ins):
            if i.labels:
                leaders.add(k)
            if (i.base in BRANCHES or i.base in ENDS) and k + 1 < len(ins):
                leaders.add(k + 1)
        starts = sorted(leaders)
        self.blocks = list(zip(starts, starts[1:] + [len(ins)]))
        first = {a: n for n, (a, _) in enumerate(self.blocks)}
        self.succ = []   # [(kind, block)], kind: "taken" or "fall"
        for n, (_, b) in enumerate(self.blocks):
            last, s = ins[b - 1], []
            nxt = n + 1 if n + 1 < len(self.blocks) else None
            if last.base in BRANCHES:
                t = TARGET_RE.search(last.args)
                if t and t.group(1) in label_at:
                    s.append(("taken", first[label_at[t.group(1)]]))
                if conditional(last) and nxt is not None:
                    s.append(("fall", nxt))
            elif last.base in ENDS:
                if last.guard and nxt is not None:
                    s.append(("fall", nxt))
            elif nxt is not None:
                s.append(("fall", nxt))
            self.succ.append(s)
        self.pred = [[] for _ in self.blocks]
        for u, ss in enumerate(self.succ):
            for _, v in ss:
                self.pred[v].append(u)
        self._dominators()

    def insns(self, b):
        a, e = self.blocks[b]
        return self.ins[a:e]

    def last(self, b):
        return self.ins[self.blocks[b][1] - 1]

    def _dominators(self):
        order, seen, stack = [], {0}, [0]
        while stack:
            u = stack.pop()
            order.append(u)
            for _, v in self.succ[u]:
                if v not in seen:
                    seen.add(v)
                    stack.append(v)
        self.reachable = seen
        dom = {u: set(seen) for u in seen}
        dom[0] = {0}
        changed = True
        while changed:
            changed = False
            for u in sorted(seen):
                if u == 0:
                    continue
                ps = [p for p in self.pred[u] if p in seen]
                new = set.intersection(*(dom[p] for p in ps)) | {u} if ps else {u}
                if new != dom[u]:
                    dom[u], changed = new, True
        self.dom = dom

    def loops(self):
        """Natural loops: (head, latches, body), one per head."""
        found = {}
        for u in self.reachable:
            for _, v in self.succ[u]:
                if v in self.dom[u]:
                    body, stack = {v}, [u]
                    while stack:
                        x = stack.pop()
                        if x not in body:
                            body.add(x)
                            stack.extend(self.pred[x])
                    h = found.setdefault(v, (v, set(), set()))
                    h[1].add(u)
                    h[2].update(body)
        return list(found.values())


# ---------------------------------------------------------------- one iteration
COPY_ISSUE = re.compile(r"^(UBLKCP|UTMALDG|UTMAPF|SYNCS\.ARRIVE\.TRANS64)")


def is_gmma(i):
    return "GMMA" in i.base


def guard_pred(i):
    """(predicate name, negated) of an instruction's guard, or None."""
    if not i.guard or i.guard == "@PT":
        return None
    g = i.guard[1:]
    return (g.lstrip("!"), g.startswith("!"))


def writes_pred(i, p):
    """Does instruction i write predicate p? (predicate destinations come first in SASS)"""
    ops = [o.strip() for o in i.args.split(",")]
    dests = []
    for o in ops:
        if re.fullmatch(r"U?P[T0-6]", o):
            dests.append(o)
        else:
            break
    if i.base in ("B2R", "VOTE", "VOTEU") or i.op.startswith("SYNCS.PHASECHK"):
        dests = [o for o in ops if re.fullmatch(r"U?P[T0-6]", o)][:1] if i.base != "VOTE" else \
            [o for o in ops[1:2] if re.fullmatch(r"U?P[T0-6]", o)]
        if i.base == "VOTEU":
            dests = [o for o in ops[:1] if re.fullmatch(r"U?P[T0-6]", o)]
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
                elif src is not None and (src.base == "B2R" or src.base in ("VOTE", "VOTEU")):
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
    import heapq
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
REG_RE = re.compile(r"(?<![\w\[.])-?\|?(R\d+|RZ)(?:\.(?:reuse|H0|H1|B\d|U\d+|64|128|F16x2\w*))*\|?")


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
            for b in sorted(pit):
                c.add(cfg.insns(b), 1, conv, mma_loads, "producer loop (one warp per tile)", 1)
            c.notes.append(f"copy issue: producer loop at {cfg.ins[cfg.blocks[ph][0]].addr:#x}, one iteration per tile")
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


# ---------------------------------------------------------------- self-test
# A made-up kernel in nvdisasm's format: a tile loop with 4 conversion ops feeding a GMMA, a
# CTA vote choosing between two variants, an mbarrier wait with its retry, a divergent fallback,
# a one-warp copy issue with a waterfall loop, and an epilogue.
SELF_TEST_LISTING = """
//--------------------- .text._Z4testILi6ELi1EEv --------------------------
        /*0000*/                   S2R R0, SR_TID.X ;
        /*0010*/                   MOV R1, RZ ;
.L_x_0:
        /*0020*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P2, [R9+URZ+0x100], R8 ;
        /*0030*/              @!P2 BRA `(.L_x_9) ;
.L_x_10:
        /*0040*/                   LDSM.16.M88.4 R20, [R10] ;
        /*0050*/                   LOP3.LUT R24, R20, 0x80808080, RZ, 0xc0, !PT ;
        /*0060*/                   SHF.R.U32.HI R25, RZ, 0x2, R21 ;
        /*0070*/                   IMAD.SHL.U32 R26, R22, 0x10, RZ ;
        /*0080*/                   LOP3.LUT R27, R23, 0x1c1c1c1c, RZ, 0xc0, !PT ;
        /*0090*/                   IADD3 R11, R10, 0x20, RZ ;
        /*00a0*/                   WARPGROUP.ARRIVE ;
        /*00b0*/                   QGMMA.64x8x32.F32.E4M3.E4M3 R40, R24, gdesc[UR4], RZ, !UPT, gsb0 ;
        /*00c0*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
        /*00d0*/                   FMNMX R50, R40, R41, !PT ;
        /*00e0*/                   BRA.DIV UR4, `(.L_x_8) ;
        /*00f0*/                   SHFL.BFLY PT, R51, R50, 0x4, 0x1f ;
.L_x_11:
        /*0100*/                   FSETP.NEU.AND P3, PT, R51, 1, PT ;
        /*0110*/                   BAR.RED.OR.DEFER_BLOCKING 0x0, P3 ;
        /*0120*/                   B2R.RESULT RZ, P4 ;
        /*0130*/               @P4 BRA `(.L_x_2) ;
        /*0140*/                   FMUL R40, R40, R51 ;
        /*0150*/                   FMUL R41, R41, R51 ;
        /*0160*/                   BRA `(.L_x_3) ;
.L_x_2:
        /*0170*/                   FMUL R40, R40, R51 ;
        /*0180*/                   FMUL R41, R41, R51 ;
        /*0190*/                   FMUL R42, R42, R51 ;
        /*0198*/                   FMUL R43, R43, R51 ;
.L_x_3:
        /*01a0*/                   ISETP.NE.AND P5, PT, R0, RZ, PT ;
        /*01b0*/                   BSSY B1, `(.L_x_4) ;
        /*01c0*/               @P5 BRA `(.L_x_4) ;
        /*01d0*/                   SYNCS.ARRIVE.TRANS64 RZ, [R9+URZ+0x100], R12 ;
.L_x_5:
        /*01e0*/                   R2UR UR8, R13 ;
        /*01f0*/                   R2UR UR9, R14 ;
        /*0200*/                   UBLKCP.S.G [UR8], [UR9], UR10 ;
        /*0210*/              @P6 BRA.U.ANY `(.L_x_5) ;
        /*0220*/                   LDG.E R15, desc[UR6][R16.64] ;
        /*0230*/                   IADD3 R16, R16, 0x4, RZ ;
        /*0240*/                   STS [R17], R15 ;
        /*0250*/                   MOV R18, R15 ;
.L_x_4:
        /*0260*/                   BSYNC B1 ;
        /*0270*/                   IADD3 R1, R1, 0x1, RZ ;
        /*0280*/                   ISETP.NE.AND P0, PT, R1, 0x10, PT ;
        /*0290*/              @P0 BRA `(.L_x_0) ;
        /*02a0*/                   STG.E desc[UR6][R30.64], R40 ;
        /*02b0*/                   EXIT ;
.L_x_9:
        /*02c0*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P2, [R9+URZ+0x100], R8 ;
        /*02d0*/              @!P2 BRA `(.L_x_9) ;
        /*02e0*/                   BRA `(.L_x_10) ;
.L_x_8:
        /*02f0*/                   WARPSYNC.ALL ;
        /*0300*/                   SHFL.BFLY PT, R51, R50, 0x4, 0x1f ;
        /*0310*/                   BRA `(.L_x_11) ;
"""
# Per warp and tile: the consumer path is 0x20-0x30 (2), 0x40-0xe0 (11), 0xf0 (1), 0x100-0x130
# (4), the vote's "no thread" side 0x140-0x160 (3; @P4, "some thread", jumps to the 4-multiply
# variant), 0x1a0-0x1c0 (3), 0x260-0x290 (4) = 28 by 4 warps; the copy region 0x1d0-0x250 = 9 by
# one warp (the waterfall loop once); the retry and the fallback not at all. Conversion: the 4
# integer ops between the LDSM and the QGMMA's A registers R24..R27.
SELF_TEST_EXPECT = {"per_token": (28 * 4 + 9) / 64, "conversion": 4 * 4 / 64, "MMA": 4 * 4 / 64,
                    "consumer": 28, "copy": 9}


def self_test():
    funcs = parse_listing(SELF_TEST_LISTING)
    c = count_kernel("_Z4testILi6ELi1EEv", funcs["_Z4testILi6ELi1EEv"])
    print(report(c))
    failures = []
    got = {"per_token": c.per_token, "conversion": c.by_category["conversion"], "MMA": c.by_category["MMA"],
           "consumer": c.parts.get("consumer path (every warp)", (0, 0))[0],
           "copy": c.parts.get("copy issue (one warp)", (0, 0))[0]}
    for k, v in SELF_TEST_EXPECT.items():
        if abs(got[k] - v) > 1e-9:
            failures.append(f"{k}: expected {v}, counted {got[k]}")
    # the checks themselves: a budget below the count fails, one above passes
    if check(c, budget=c.per_token - 0.01, quiet=True) == 0:
        failures.append("a budget below the count did not fail")
    if check(c, budget=c.per_token + 0.01, quiet=True) != 0:
        failures.append("a budget above the count failed")
    if check(c, expect=c.per_token + 0.5, tolerance=0.25, quiet=True) == 0:
        failures.append("a recorded count 0.5 away (tolerance 0.25) did not fail")
    if failures:
        print("sass_budget self-test FAILED:\n  " + "\n  ".join(failures))
        return 1
    print("sass_budget self-test passed")
    return 0


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
