"""Predicted time of a launch at a shape: the one-wave path times (kernels.py) combined with
the CU's shared pipes, the per-CU share of HBM bandwidth, occupancy and the grid.

Per unit of work (a decode tile, a scorer page) with n waves of the kernel resident on a CU
(k = ceil(n / 4) per SIMD), a wave takes the longest of
  * its own path time with memory latency (sim.py: issue, unit occupancy, waits);
  * k x the SIMD's VALU time and k x its matrix-core time for one unit (waves of a SIMD share them);
  * n x the CU's LDS time and n x its vector-memory time for one unit.
A workgroup's chain is its fixed parts (prologue, per-position overheads) plus its units at that
rate. The CU's time for a round of resident workgroups is the longer of that chain and the
round's HBM bytes over the CU's share of bandwidth (BW / 256): waves overlap each other's
latencies perfectly in this bound, so it is optimistic where chain and bandwidth are close.
The binding resource is the larger bound (for a chain: its largest part). Workgroups are
spread evenly over the CUs (the busiest CU decides); when a CU has more workgroups than it
can hold, they run in rounds of the occupancy, the last round with the rest."""
import math
from dataclasses import dataclass
from gfx950 import hardware as hw


@dataclass
class UnitTime:
    clk: float
    binding: str
    terms: dict


def unit_time(path, latency, n_waves):
    k = math.ceil(n_waves / hw.SIMDS_PER_CU)
    per_iter = path.units_per_iteration
    t = path.timing[latency]
    one_wave = "memory latency (one wave)" if t.stall_clk_per_iteration > t.issue_clk_per_iteration else "issue (one wave)"
    terms = {
        one_wave: path.time(latency) / per_iter,
        "VALU (SIMD)": k * path.pipes["valu"] / per_iter,
        "MFMA (SIMD)": k * path.pipes["mfma"] / per_iter,
        "LDS (CU)": n_waves * path.pipes["lds"] / per_iter,
        "vector memory path (CU)": n_waves * path.pipes["vmem"] / per_iter,
    }
    binding = max(terms, key=terms.get)
    return UnitTime(terms[binding], binding, terms)


def cu_bytes_per_clk(bandwidth):
    return bandwidth / hw.CUS / hw.CLOCK_HZ


def settle(parts, round_bytes, bandwidth):
    """A round's time: the longer of the workgroup chain (sum of `parts`, name -> clk) and the
    round's HBM bytes on the CU at its bandwidth share; what binds it; the bandwidth time."""
    chain = sum(parts.values())
    bw = round_bytes / cu_bytes_per_clk(bandwidth)
    if bw >= chain:
        return bw, "HBM bandwidth", bw
    return chain, max(parts, key=parts.get), bw


def rounds(workgroups_per_cu, resident):
    """Workgroups resident per round on the busiest CU: full rounds, then the rest."""
    full, rest = divmod(workgroups_per_cu, resident)
    return [resident] * full + ([rest] if rest else [])


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
    B, L, Hk = shape["num_seqs"], shape["seq_len"], shape["num_kv_heads"]
    P, tgpp = plan["partitions"], plan["tgpp"]
    tiles = [decode_tiles(L, P, tgpp, p) for p in range(P)]
    nonempty = [t for t in tiles if t > 0]
    workgroups = B * Hk * len(nonempty)
    occ = hw.occupancy(kernel.notes["vgprs"], kernel.notes["lds"], 1)
    resident = occ["waves_per_cu"]
    per_cu = math.ceil(workgroups / hw.CUS)
    tile_bytes = plan["tile_tokens"] * plan["slot_bytes"]
    pro = kernel.prologue.timing[latency].clk_per_iteration
    total, binding, detail = 0.0, {}, []
    for n in rounds(per_cu, resident):
        u = unit_time(kernel.loop, latency, n)
        parts = {"prologue (latency chain)": pro, u.binding: max(nonempty) * u.clk}
        t, why, bw_clk = settle(parts, n * max(nonempty) * tile_bytes, bandwidth)
        total += t
        binding[why] = binding.get(why, 0.0) + t
        detail.append({"waves_per_cu": n, "tile_clk": u.clk, "binding": why, "parts": parts, "bandwidth_clk": bw_clk})
    hbm = B * Hk * L * plan["slot_bytes"] + B * Hk * P * shape["qg"] * (2 * plan["head_dim"] + 8)
    floor = hbm / bandwidth
    t_s = max(hw.seconds(total), floor)
    return {"seconds": t_s, "hbm_bytes": hbm, "binding": max(binding, key=binding.get) if hw.seconds(total) >= floor
            else "HBM bandwidth", "workgroups": workgroups, "waves_per_cu_max": per_cu, "resident": resident,
            "tiles_per_workgroup": max(nonempty), "prologue_clk": pro, "rounds": detail, "occupancy": occ}


# ---------------------------------------------------------------- reducer
def predict_reduce(kernel, plan, shape, latency, bandwidth):
    B, Hk, qg = shape["num_seqs"], shape["num_kv_heads"], shape["qg"]
    P = plan["partitions"]
    nonempty = sum(1 for p in range(P) if decode_tiles(shape["seq_len"], P, plan["tgpp"], p) > 0)
    waves = B * Hk * qg * (plan["head_dim"] // plan["reduce_chunk"])
    per_lane = math.ceil(P / 64)
    x8, rest = divmod(per_lane, 8) if kernel.pass1x8 else (0, per_lane)
    t = rest * kernel.pass1.time(latency) + (x8 * kernel.pass1x8.time(latency) if x8 else 0)
    rounds_256 = math.ceil(P / 256)
    t += rounds_256 * kernel.weights.time(latency)
    listed = 0
    for r in range(rounds_256):
        in_round = max(0, min(nonempty - 256 * r, 256))
        listed += math.ceil(in_round / kernel.list_per_iteration)
    t += listed * kernel.list.time(latency)
    hbm = B * Hk * qg * (P * (2 * plan["head_dim"] + 8) + 2 * plan["head_dim"])
    floor = hbm / bandwidth
    t_s = max(hw.seconds(t), floor)
    return {"seconds": t_s, "hbm_bytes": hbm, "binding": "memory latency (serial round trips)" if hw.seconds(t) >= floor
            else "HBM bandwidth", "waves": waves, "waves_per_cu": waves / hw.CUS,
            "iterations": {"pass1": rest, "pass1x8": x8, "weights": rounds_256, "list": listed}}


# ---------------------------------------------------------------- scorer
def predict_score(kernel, plan, shape, latency, bandwidth):
    reqs, blocks = shape["num_reqs"], shape["max_blocks"]
    chunk, splits, unit = plan["chunk"], plan["splits"], plan["unit"]
    workgroups = plan["grid"]
    waves = 4 * workgroups
    per_cu_wg = math.ceil(workgroups / hw.CUS)
    occ = hw.occupancy(kernel.notes["vgprs"], kernel.notes["lds"], 4)
    resident_wg = occ["workgroups_per_cu"]
    # Positions a workgroup walks: units split, split + splits, ... of `unit` positions each.
    units = math.ceil(blocks / unit)
    units_per_wg = math.ceil(units / splits) if not plan["per_wave"] else math.ceil(units / (splits * 4))
    positions = units_per_wg * unit
    pages_per_position = min(chunk, reqs)  # every request of the chunk needs its own page
    pages_per_wave = pages_per_position / 4 if not plan["per_wave"] else pages_per_position
    dedup = pages_per_position
    total, binding, detail = 0.0, {}, []
    for wg in rounds(per_cu_wg, resident_wg):
        n = 4 * wg
        u = unit_time(kernel.page, latency, n)
        # per position: its own code (table entry load, ballots), the de-duplication, and its
        # first page, which is not prefetched (one latency)
        overhead = kernel.position.time(latency) + dedup * kernel.dedup.time(latency) + latency
        flush = 0.0
        if plan["buffered"] and kernel.flush:
            items = chunk * plan["padded_columns"] * 4
            flush = math.ceil(items / 256) * kernel.flush.time(latency)
        parts = {"prologue (Q staging)": kernel.prologue.time(latency),
                 "per-position overhead": positions * overhead + units_per_wg * flush,
                 u.binding: positions * pages_per_wave * u.clk}
        t, why, bw_clk = settle(parts, wg * positions * pages_per_position * plan["page_bytes"], bandwidth)
        total += t
        binding[why] = binding.get(why, 0.0) + t
        detail.append({"waves_per_cu": n, "page_clk": u.clk, "binding": why, "parts": parts, "bandwidth_clk": bw_clk})
    hbm = reqs * blocks * plan["page_bytes"] + reqs * shape["query_len"] * shape["heads"] * blocks * 4
    floor = hbm / bandwidth
    t_s = max(hw.seconds(total), floor)
    return {"seconds": t_s, "hbm_bytes": hbm, "binding": max(binding, key=binding.get) if hw.seconds(total) >= floor
            else "HBM bandwidth", "workgroups": workgroups, "positions_per_workgroup": positions,
            "pages_per_wave_per_position": pages_per_wave, "rounds": detail, "occupancy": occ}
