"""Predicted time of a launch at a shape, from the code paths (kernels.py) and the plan.

A workgroup's wave runs its whole instruction sequence for the shape — the prologue, then
each loop's steady-state path as many times as the shape makes it run, nested loops in place
(regions.expand) — through the one-wave simulation (sim.py): issue slots, unit occupancy,
and every wait for memory, so a load issued ahead (the next tile, the next page, the next
position's table entry) overlaps whatever runs in between. With n waves of the kernel on a
CU (k = ceil(n / 4) per SIMD), the chain is the longest of
  * that one-wave time,
  * k x the sequence's VALU time and k x its matrix-core time (the SIMD's pipes are shared),
  * n x its LDS time and n x its vector-memory time (the CU's);
and a round of resident workgroups takes the longer of that chain and the round's HBM bytes
over the CU's share of bandwidth (BW / 256). The bandwidth bound lets waves overlap each
other's latencies perfectly, so it is optimistic where the two bounds are close. Workgroups are
spread evenly over the CUs (the busiest CU decides); more than the occupancy run in rounds,
the last with the rest."""
import math
from gfx950 import counts, hardware as hw, sim
from gfx950.regions import expand


def rounds(workgroups_per_cu, resident):
    full, rest = divmod(workgroups_per_cu, resident)
    return [resident] * full + ([rest] if rest else [])


_one_wave = {}  # (key, latency) -> (time, time without latency, pipes): shapes repeat per bandwidth


def chain(seq, latency, n_waves, key=None, degrees=None):
    """The bounds of one workgroup's wave (clk) with n waves of the kernel on its CU. `key`
    names the sequence (same key, same sequence) so that it is simulated once; `degrees` the
    kernel's LDS bank-conflict degrees."""
    k = math.ceil(n_waves / hw.SIMDS_PER_CU)
    cached = _one_wave.get((key, latency)) if key is not None else None
    if cached is None:
        cached = (sim.simulate_once(seq, latency, degrees=degrees), sim.simulate_once(seq, 0.0, degrees=degrees),
                  sim.pipe_clk(counts.count(seq, degrees)))
        if key is not None:
            _one_wave[(key, latency)] = cached
    t, t0, pipes = cached
    one = "HBM latency (one wave's loads in flight)" if t > 1.05 * t0 else "issue and LDS latency (one wave)"
    return {one: t, "VALU (SIMD, shared)": k * pipes["valu"], "MFMA (SIMD, shared)": k * pipes["mfma"],
            "LDS (CU, shared)": n_waves * pipes["lds"], "vector memory path (CU, shared)": n_waves * pipes["vmem"]}


def settle(bounds, round_bytes, bandwidth):
    bounds = dict(bounds)
    bounds["HBM bandwidth"] = round_bytes / (bandwidth / hw.CUS / hw.CLOCK_HZ)
    why = max(bounds, key=bounds.get)
    return bounds[why], why, bounds


def little(bounds, round_bytes, latency):
    """Little's law for a round on one CU: the bytes its waves keep in flight (their HBM bytes
    over the one-wave time, times the latency: what the code sustains with unlimited
    bandwidth) against the bytes the CU's share of the bandwidth needs in flight at that
    latency (BW / CUs x latency, settled by the caller with the bandwidth)."""
    one = next(iter(bounds.values()))  # chain(): the one-wave time comes first
    return round_bytes * latency / one if one > 0 else 0.0


def round_out(n, clk, why, bounds, round_bytes, latency):
    return {"waves_per_cu": n, "clk": clk, "binding": why, "bounds": bounds,
            "in_flight_bytes": little(bounds, round_bytes, latency)}


def finish(rounds_out, hbm, bandwidth, extra):
    total = sum(r["clk"] for r in rounds_out)
    binding = {}
    for r in rounds_out:
        binding[r["binding"]] = binding.get(r["binding"], 0.0) + r["clk"]
    t = max(hw.seconds(total), hbm / bandwidth)
    out = {"seconds": t, "hbm_bytes": hbm, "binding": max(binding, key=binding.get), "rounds": rounds_out}
    out.update(extra)
    return out


# ---------------------------------------------------------------- decode (partition kernel)
def decode_tiles(seq_len, partitions, tgpp, p, tile_group_tokens=256, tile_tokens=16):
    """Tiles of workgroup (b, h, p) (decode_kernel.hpp: tile-groups p, p + P, ... below the
    sequence's end, at most TGPP, the last one up to the end)."""
    groups = math.ceil(seq_len / tile_group_tokens)
    owned = (groups - p + partitions - 1) // partitions if p < groups else 0
    trip = min(owned, tgpp)
    if trip == 0:
        return 0
    last = seq_len - (p + (trip - 1) * partitions) * tile_group_tokens
    return (trip - 1) * (tile_group_tokens // tile_tokens) + math.ceil(min(last, tile_group_tokens) / tile_tokens)


def predict_decode(kernel, plan, shape, latency, bandwidth):
    """shape["query_len"] (default 1): query tokens a sequence (spec §5.9): the same workgroups
    and tiles (the KV bytes are read once for all of them), that many partial rows each."""
    B, L, Hk = shape["num_seqs"], shape["seq_len"], shape["num_kv_heads"]
    QL = shape.get("query_len", 1)
    P, tgpp = plan["partitions"], plan["tgpp"]
    tiles = [decode_tiles(L, P, tgpp, p) for p in range(P)]
    busy = [t for t in tiles if t > 0]
    workgroups = B * Hk * len(busy)
    occ = hw.occupancy(kernel.notes["vgprs"], kernel.notes["lds"], 1)
    per_cu = math.ceil(workgroups / hw.CUS)
    most = max(busy)
    iterations = math.ceil(most / kernel.tiles_per_iteration)
    per_chunk = 64 // kernel.tiles_per_iteration  # iterations between block-table reloads
    seq = list(kernel.prologue.insns)
    for i in range(iterations):
        if i and i % per_chunk == 0:
            seq += kernel.reload.insns
        seq += kernel.loop.insns
    tile_bytes = plan["tile_tokens"] * plan["slot_bytes"]
    out = []
    for n in rounds(per_cu, occ["waves_per_cu"]):
        key = (kernel.name, most, len(seq))
        rb = n * most * tile_bytes
        clk, why, bounds = settle(chain(seq, latency, n, key, kernel.lds_degrees), rb, bandwidth)
        out.append(round_out(n, clk, why, bounds, rb, latency))
    hbm = B * Hk * L * plan["slot_bytes"] + B * QL * Hk * P * shape["qg"] * (2 * plan["head_dim"] + 8)
    return finish(out, hbm, bandwidth, {"workgroups": workgroups, "waves_per_cu_max": per_cu,
                                        "resident": occ["waves_per_cu"], "tiles_per_workgroup": most,
                                        "kernel": kernel.name})


# ---------------------------------------------------------------- reducer
def predict_reduce(kernel, plan, shape, latency, bandwidth):
    """Workgroups (b, hq, chunk) of kernel.waves_per_workgroup waves; each wave runs round 1,
    ceil(live / slots / batch) batches (live: the partitions that hold tokens, which are
    p < the sequence's tile-groups) and the epilogue. With shape["query_len"] tokens a sequence
    (spec §5.9) it has a row per query token."""
    B, Hk, qg = shape["num_seqs"] * shape.get("query_len", 1), shape["num_kv_heads"], shape["qg"]
    P = plan["partitions"]
    live = sum(1 for p in range(P) if decode_tiles(shape["seq_len"], P, plan["tgpp"], p) > 0)
    slots = plan["reduce_slots"]
    steps = math.ceil(live / slots)
    batches = math.ceil(steps / kernel.loads_per_batch) if steps else 0
    seq = kernel.prologue.insns + kernel.batch.insns * batches + kernel.epilogue.insns
    workgroups = B * Hk * qg * (plan["head_dim"] // plan["reduce_chunk"])
    per_cu = math.ceil(workgroups / hw.CUS)
    occ = hw.occupancy(kernel.notes["vgprs"], kernel.notes["lds"], kernel.waves_per_workgroup)
    # partial rows of the partitions with tokens, their m and l, the out row
    hbm = B * Hk * qg * (live * 2 * plan["head_dim"] + P * 8 + 2 * plan["head_dim"])
    out = []
    for wg in rounds(per_cu, occ["workgroups_per_cu"]):
        n = wg * kernel.waves_per_workgroup
        rb = wg * hbm / workgroups
        key = (kernel.name, P, live, len(seq))
        clk, why, bounds = settle(chain(seq, latency, n, key, kernel.lds_degrees), rb, bandwidth)
        out.append(round_out(n, clk, why, bounds, rb, latency))
    return finish(out, hbm, bandwidth, {"workgroups": workgroups, "workgroups_per_cu": workgroups / hw.CUS,
                                        "batches": batches, "live": live})


# ---------------------------------------------------------------- scorer
def predict_score(kernel, plan, shape, latency, bandwidth):
    reqs, blocks = shape["num_reqs"], shape["max_blocks"]
    chunk, splits, unit = plan["chunk"], plan["splits"], plan["unit"]
    workgroups = plan["grid"]
    per_cu_wg = math.ceil(workgroups / hw.CUS)
    occ = hw.occupancy(kernel.notes["vgprs"], kernel.notes["lds"], 4)
    units = math.ceil(blocks / unit)
    units_per_wg = math.ceil(units / splits) if not plan["per_wave"] else math.ceil(units / (splits * 4))
    positions = units_per_wg * unit
    pages_per_position = min(chunk, reqs)  # every request of the chunk needs a page of its own
    pages_per_wave = pages_per_position // 4 if not plan["per_wave"] else pages_per_position
    position_plan = {kernel.dedup_loop.header: (pages_per_position, {}),
                     kernel.page_loop.header: (pages_per_wave, {})}
    unit_plan = {kernel.position_loop.header: (unit, position_plan)}
    if plan["buffered"] and kernel.flush_loop is not None:
        items = chunk * plan["padded_columns"] * 4
        unit_plan[kernel.flush_loop.header] = (math.ceil(items / 256), {})
    one_unit = expand(kernel.regions, kernel.unit_loop, unit_plan)
    seq = kernel.prologue.insns + one_unit * units_per_wg
    out = []
    for wg in rounds(per_cu_wg, occ["workgroups_per_cu"]):
        n = 4 * wg
        key = (kernel.name, units_per_wg, unit, pages_per_position, len(seq))
        rb = wg * positions * pages_per_position * plan["page_bytes"]
        clk, why, bounds = settle(chain(seq, latency, n, key, kernel.lds_degrees), rb, bandwidth)
        out.append(round_out(n, clk, why, bounds, rb, latency))
    hbm = reqs * blocks * plan["page_bytes"] + reqs * shape["query_len"] * shape["heads"] * blocks * 4
    return finish(out, hbm, bandwidth, {"workgroups": workgroups, "positions_per_workgroup": positions,
                                        "pages_per_wave_per_position": pages_per_wave,
                                        "occupancy": occ})
