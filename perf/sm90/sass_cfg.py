"""SASS listings of nvcc's sm_90a code as control-flow graphs: nvdisasm's listing parsed into
instructions (with their inlined source locations when the code has line information), basic
blocks, dominators and natural loops. Used by sass_budget.py; knows nothing of any kernel."""
import collections
import os
import re
import shutil
import subprocess
import tempfile

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


def find_tool(given, name):
    """The tool as configured, else the one on PATH (a build tree carried to another machine
    names the first machine's copy), else an error that says where the tools come from."""
    if given and os.access(given, os.X_OK) and os.path.isfile(given):
        return given
    found = shutil.which(given or name) or shutil.which(name)
    if found:
        return found
    raise SystemExit(f"sass_budget: {name} not found (given: {given}): perf/sm90/sass_tools.sh finds or fetches "
                     "cuobjdump and nvdisasm (./uq test --kokkos cuda runs it and passes the folder to CMake as "
                     "UQ_SASS_TOOLS_DIR)")


def disassemble(obj, cuobjdump, nvdisasm, kernels=()):
    """nvdisasm listing (with line info where the object has it) of the cubins in obj (a .o or
    .a of nvcc's) whose symbols match every regex in `kernels`."""
    cuobjdump, nvdisasm = find_tool(cuobjdump, "cuobjdump"), find_tool(nvdisasm, "nvdisasm")
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
