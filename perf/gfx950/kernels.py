"""The three gfx950 kernels as the model sees them: which loops of the code object are their
steady state, what one iteration of each is (a tile, a page, a partition group), and the
one-wave times of each path (gfx950/sim.py). A loop that cannot be identified is an error:
the model must be updated with the kernel (CI runs it).

Work per iteration is read from the code where it can be (MFMAs per tile) and checked against
the design (arch/gfx950/README.md): a decode tile is 16 tokens = 2 scaled 16x16x128 MFMAs +
16 bf16 16x16x16 MFMAs; a scorer page is 128 tokens = 8 tiles of 16x16x128 FP8 MFMAs per
column group."""
from dataclasses import dataclass, field
from gfx950 import counts, hardware as hw, mca, sim
from gfx950.classify import wait_counts
from gfx950.regions import KernelRegions


class ModelError(RuntimeError):
    pass


# The fewest loads the decode tile loop's waits may leave in flight (see DecodeKernel).
MIN_STEADY_VMCNT = 6


@dataclass
class Path:
    """A steady-state loop path (one iteration) or a straight-line path."""
    name: str
    insns: list
    per: str                 # what one iteration is
    units_per_iteration: float = 1.0  # tiles (decode) / pages (scorer) / 1
    counter: object = None
    pipes: dict = None
    mca: dict = None
    timing: dict = field(default_factory=dict)  # latency (clk) -> sim.Timing

    def analyse(self, mca_tool, latencies, degrees=None):
        self.counter = counts.count(self.insns, degrees)
        self.pipes = sim.pipe_clk(self.counter)
        self.mca = mca.analyse(mca_tool, self.insns) if mca_tool else None
        for lat in latencies:
            self.timing[lat] = sim.simulate(self.insns, lat, degrees=degrees)
        return self

    def time(self, latency):
        return self.timing[latency].clk_per_iteration


def _mfma(r, loop):
    return sum(1 for i in r.insns_of(loop) if i.mnemonic.startswith("v_mfma"))


def _has(insns, prefix):
    return sum(1 for i in insns if i.mnemonic.startswith(prefix))


def _notes(kernel):
    n = kernel.notes
    return {"vgprs": n.get("vgpr_count"), "agprs": n.get("agpr_count"), "sgprs": n.get("sgpr_count"),
            "lds": n.get("group_segment_fixed_size"), "scratch": n.get("private_segment_fixed_size")}


class DecodeKernel:
    waves_per_workgroup = 1
    lds_degrees = None  # lds_kind -> bank-conflict degree (perf/gfx950_lds_banks.cpp)

    def __init__(self, kernel, n_tiles=1):
        """n_tiles: the MFMA N tiles of query rows (the multi-token kernel's _2tiles_ builds: 2),
        each with its 2 scaled and 16 bf16 MFMAs a 16-token tile."""
        self.name = kernel.name
        self.notes = _notes(kernel)
        r = self.regions = KernelRegions(kernel)
        mfma_loops = [l for l in r.loops if _mfma(r, l) > 0]
        if not mfma_loops:
            raise ModelError(f"{self.name}: no loop with MFMAs (the tile loop) found")
        loop = max(mfma_loops, key=lambda l: _mfma(r, l))
        # The arm that loads the next 64 tiles' block-table entries (decode_kernel.hpp,
        # next_source) runs once per 64 tiles: out of the steady path, added per 64 tiles.
        reload = [b for b in loop.body if any(i.mnemonic == "buffer_load_dword" for i in r.blocks[b].insns)
                  and any("vmcnt(0)" in i.operands for i in r.blocks[b].insns)
                  and any(i.mnemonic.startswith("v_readlane") for i in r.blocks[b].insns)]
        r.cold |= set(reload)
        self.reload = Path("block-table entries of the next 64 tiles", [i for b in sorted(reload) for i in r.blocks[b].insns],
                           "64 tiles")
        insns = r.steady_insns(loop)
        scaled = _has(insns, "v_mfma_scale_f32_16x16x128")
        bf16 = _has(insns, "v_mfma_f32_16x16x16_bf16")
        if scaled == 0 or scaled % (2 * n_tiles) or bf16 != 8 * scaled:
            raise ModelError(f"{self.name}: tile loop has {scaled} scaled and {bf16} bf16 MFMAs; "
                             f"expected {2 * n_tiles} and {16 * n_tiles} per 16-token tile")
        self.tiles_per_iteration = scaled // (2 * n_tiles)
        # The two-tile prefetch (decode_kernel.hpp): each wait of the steady loop leaves the
        # next tiles' loads in flight (9 of a tile's 6 K and V loads and the next tile's); a
        # wait for fewer means the compiler drains the prefetch, which the model then times
        # as it is, but CI should hear of it.
        vm = [wait_counts(i)["vmcnt"] for i in insns if "vmcnt" in wait_counts(i)]
        if vm and min(vm) < MIN_STEADY_VMCNT:
            raise ModelError(f"{self.name}: the tile loop waits for vmcnt({min(vm)}): it drains its prefetch "
                             f"(expected every wait to leave >= {MIN_STEADY_VMCNT} loads in flight)")
        self.tile_loop = loop
        self.loop = Path("tile loop", insns, "iteration", self.tiles_per_iteration)
        self.prologue = Path("prologue", r.prologue_path(loop), "workgroup")

    def paths(self):
        return [self.loop, self.prologue] + ([self.reload] if self.reload.insns else [])


class ReduceKernel:
    """The reducer (arch/gfx950/reduce_kernel.hpp): straight-line round 1 (m and l, M, the
    weights, S), the batch loop of round 2 (kReduceBatch 16-byte partial loads a lane), and
    the epilogue (slot sums, out row, lse)."""
    waves_per_workgroup = 4
    lds_degrees = None

    def __init__(self, kernel):
        self.name = kernel.name
        self.notes = _notes(kernel)
        r = self.regions = KernelRegions(kernel)
        batch = [l for l in r.loops if _has(r.steady_insns(l), "buffer_load_dwordx4") >= 8]
        if len(batch) != 1:
            raise ModelError(f"{self.name}: expected one loop of 16-byte partial loads, found {len(batch)}")
        self.batch_loop = batch[0]
        insns = r.steady_insns(self.batch_loop)
        self.loads_per_batch = _has(insns, "buffer_load_dwordx4")
        self.prologue = Path("round 1 (m, l, weights, S) to the batch loop", r.prologue_path(self.batch_loop),
                             "workgroup")
        self.batch = Path("round 2, one batch", insns, f"{self.loads_per_batch} partitions per slot")
        self.epilogue = Path("slot sums, out row, lse", r.path_after(self.batch_loop), "workgroup")

    def paths(self):
        return [self.prologue, self.batch, self.epilogue]


class ScoreKernel:
    waves_per_workgroup = 4
    lds_degrees = None  # not profiled: every LDS access counts as conflict-free

    def __init__(self, kernel):
        self.name = kernel.name
        self.notes = _notes(kernel)
        r = self.regions = KernelRegions(kernel)
        def is_dedup(l):  # the page de-duplication loop: readlane + ballot, no stores
            ins = r.steady_insns(l)
            return (_mfma(r, l) == 0 and _has(ins, "v_readlane") and not _has(ins, "buffer_store")
                    and not _has(ins, "ds_write"))

        # The page loop: an MFMA loop in the position loop, whose other child is the
        # de-duplication loop (a further-pass loop, when the compiler keeps one, is nested in
        # the page loop).
        candidates = []
        for l in r.loops:
            parent = r.parent(l)
            if _mfma(r, l) and parent is not None:
                dedup = [c for c in r.children(parent) if c is not l and is_dedup(c)]
                if len(dedup) == 1:
                    candidates.append((l, parent, dedup[0]))
        if len(candidates) != 1:
            raise ModelError(f"{self.name}: expected one page loop beside one de-duplication loop in the "
                             f"position loop, found {len(candidates)}")
        page, position, dedup_loop = candidates[0]
        self.page_loop, self.position_loop, self.dedup_loop = page, position, dedup_loop
        self.unit_loop = r.parent(position)
        if self.unit_loop is None:
            raise ModelError(f"{self.name}: no unit loop around the position loop")
        insns = r.steady_insns(page)
        mf = _has(insns, "v_mfma_f32_16x16x128_f8f6f4")
        if mf == 0 or mf % 8:
            raise ModelError(f"{self.name}: page loop has {mf} MFMAs; expected 8 per column group")
        self.groups = mf // 8
        self.page = Path("page loop (first pass)", insns, "page")
        self.position = Path("position", r.steady_insns(position), "position")
        self.dedup = Path("page de-duplication", r.steady_insns(dedup_loop), "distinct page")
        flush = [l for l in r.loops if _has(r.steady_insns(l), "buffer_store") and _has(r.steady_insns(l), "ds_read_b32")
                 and _mfma(r, l) == 0 and not (l.body <= position.body)]
        self.flush = Path("row-buffer flush", r.steady_insns(flush[0]), "256 threads x 4 positions") if flush else None
        self.flush_loop = flush[0] if flush else None
        if flush and r.parent(flush[0]) is not self.unit_loop:
            raise ModelError(f"{self.name}: the row-buffer flush loop is not in the unit loop")
        self.prologue = Path("prologue (to the first position)", r.prologue_path(self.unit_loop), "workgroup")

    def paths(self):
        return [p for p in (self.page, self.position, self.dedup, self.flush, self.prologue) if p]
