#!/usr/bin/env python3
"""gfx950 performance model from the compiled code objects — a model, not a
measurement: no AMD GPU was available, nothing here ran on gfx950.

    python3 perf/gfx950_model.py --objects <build>/arch --plan <build>/arch/gfx950_plan
                                 [--banks <build>/arch/gfx950_lds_banks] [--markdown FILE]
                                 [--json FILE] [--no-mca] [--check]

Reads uq_gfx950_{decode,decode_queries,reduce,score}_isa.co (llvm-objdump-22, llvm-readelf-22), finds each
kernel's steady-state loops, counts their instructions by unit, times one iteration with a
one-wave issue simulation and with llvm-mca-22 (LLVM's gfx950 scheduling model), and predicts
the headline shapes' times against the MI355X's memory bandwidth (method and sources:
docs/perf-log/2026-12-01-gfx950-model.md and 2026-12-05-gfx950-speed.md). The decode kernels' LDS bank-conflict degrees come from the wavefront
emulator (--banks: perf/gfx950_lds_banks.cpp, by default beside --plan). --json FILE: one
record per (operation, shape, bandwidth, latency, clock): {"op", "shape", "partition_us",
"reducer_us", "total_us", "bandwidth_TBps", "latency_us", "clock_GHz", "binds", ...}.
--check: exit non-zero if a kernel or loop is missing (CI)."""
import argparse
import functools
import json
import math
import os
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True  # CI runs this from the source tree: leave no __pycache__ there
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from gfx950 import disasm, hardware as hw, predict  # noqa: E402
from gfx950.kernels import DecodeKernel, ModelError, ReduceKernel, ScoreKernel  # noqa: E402

# The headline shapes: decode with one KV head per GPU (the seed's TP = 8 setting),
# block size 64; the scorer's served shapes, 128-token blocks.
DECODE_SHAPES = [
    {"label": "4 x 75k, QG 6", "num_seqs": 4, "seq_len": 75000, "qg": 6, "num_kv_heads": 1, "block_size": 64},
    {"label": "16 x 131k, QG 6", "num_seqs": 16, "seq_len": 131072, "qg": 6, "num_kv_heads": 1, "block_size": 64},
    {"label": "1 x 131k, QG 6", "num_seqs": 1, "seq_len": 131072, "qg": 6, "num_kv_heads": 1, "block_size": 64},
]
SCORE_SHAPES = [
    {"label": "32 x 128k, 4 rows x 1 head", "num_reqs": 32, "max_blocks": 1024, "query_len": 4, "heads": 1},
    {"label": "32 x 128k, 8 rows x 4 heads", "num_reqs": 32, "max_blocks": 1024, "query_len": 8, "heads": 4},
]
# Several query tokens per sequence (spec §5.9, the uniform form of QL tokens): the headline
# decode shape at QL 1 (the one-token kernel), 2 (the multi-token kernel, one N tile: QL x QG <=
# 16) and 4 (two N tiles: QL x QG <= 32; more is refused by the gfx950 launcher).
QUERIES_SHAPES = [dict(DECODE_SHAPES[0], qg=qg, label=f"4 x 75k, QG {qg}") for qg in (6, 8)]
QUERY_LENS = (1, 2, 4)
BANDWIDTHS = [("8.0 TB/s peak", hw.HBM_PEAK_BYTES_S),
              ("6.6 TB/s measured", sum(hw.HBM_MEASURED_BYTES_S) / 2)]


def tool(name, given):
    path = given or shutil.which(name) or shutil.which(name.rsplit("-", 1)[0])
    if not path:
        raise SystemExit(f"gfx950_model: {name} not found")
    return path


def plan(binary, *args):
    out = subprocess.run([binary, *map(str, args)], capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def latency_clks():
    lo, hi = hw.HBM_LATENCY_RANGE_S
    return [round(hw.clk(x)) for x in (lo, hw.HBM_LATENCY_S, hi)]


def load_banks(args):
    """The emulator's LDS bank profile: {kernel: {"by_instruction": {kind: {...}}, "sites": [...]}}."""
    path = args.banks or os.path.join(os.path.dirname(os.path.abspath(args.plan)), "gfx950_lds_banks")
    if not os.path.exists(path):
        raise ModelError(f"{path} is missing (build the gfx950_lds_banks target)")
    out = subprocess.run([path], capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def load_kernels(args, banks):
    objdump, readelf = tool("llvm-objdump-22", args.objdump), tool("llvm-readelf-22", args.readelf)
    mca = None if args.no_mca else tool("llvm-mca-22", args.mca)
    objects = {k: os.path.join(args.objects, f"uq_gfx950_{k}_isa.co")
               for k in ("decode", "decode_queries", "reduce", "score")}
    for k, path in objects.items():
        if not os.path.exists(path):
            raise ModelError(f"code object {path} is missing (build the uq_gfx950_{k}_isa target)")
    want = {
        "decode": [("uq_gfx950_decode_qg6", DecodeKernel), ("uq_gfx950_decode_qg8", DecodeKernel),
                   ("uq_gfx950_decode_qg16", DecodeKernel)],
        "decode_queries": [(f"uq_gfx950_decode_queries_qg{qg}", DecodeKernel) for qg in (6, 8, 16)]
        + [(f"uq_gfx950_decode_queries_2tiles_qg{qg}", functools.partial(DecodeKernel, n_tiles=2)) for qg in (6, 8, 16)],
        "reduce": [("uq_gfx950_decode_reduce", ReduceKernel), ("uq_gfx950_decode_reduce_p4096", ReduceKernel)],
        "score": [(f"uq_gfx950_score_r{r}{b}", ScoreKernel) for r in (1, 2, 4, 8, 16, 32) for b in ("", "_buf")],
    }
    kernels = {}
    lats = latency_clks()
    for obj, names in want.items():
        found = disasm.load(objdump, readelf, objects[obj])
        for name, cls in names:
            if name not in found:
                raise ModelError(f"kernel {name} is not in {objects[obj]} (it has {sorted(found)})")
            k = cls(found[name])
            # the reducer's P <= 4096 build shares the P <= 1024 build's source and lane map
            profile = banks.get(name) or banks.get(name.replace("_p4096", ""))
            if profile:
                k.lds_degrees = {kind: v["degree64"] for kind, v in profile["by_instruction"].items()}
            for p in k.paths():
                p.analyse(mca, lats, k.lds_degrees)
            kernels[name] = k
    return kernels


# ---------------------------------------------------------------- report
def fmt_counts(c, per):
    f = lambda key: c.get(key, 0) / per  # noqa: E731
    mf = ", ".join(f"{v / per:g} x {k.split(':', 1)[1]}" for k, v in sorted(c.items()) if k.startswith("mfma:"))
    return {
        "VALU (full/packed/trans/quarter/cross)": "/".join(f"{f('valu.' + s):g}" for s in ("full", "packed", "trans", "quarter", "cross")),
        "SALU / SMEM": f"{f('salu'):g} / {f('smem'):g}",
        "VMEM loads (B) / stores (B)": f"{f('vmem.load'):g} ({f('vmem.load.bytes'):g}) / {f('vmem.store'):g} ({f('vmem.store.bytes'):g})",
        "LDS reads (B) / writes (B) / swizzles": f"{f('lds.load'):g} ({f('lds.load.bytes'):g}) / {f('lds.store'):g} ({f('lds.store.bytes'):g}) / {f('lds.swizzle'):g}",
        "MFMA": mf or "0",
        "waits vmcnt / lgkmcnt; barriers; nops": f"{f('wait.vmcnt'):g} / {f('wait.lgkmcnt'):g}; {f('barrier'):g}; {f('nop'):g}",
        "instructions": f"{f('insns'):g}",
    }


def path_rows(kname, p, per_unit, unit_name, lat):
    per = per_unit
    t = p.timing[lat]
    row = {"kernel": kname, "path": p.name, "per": unit_name}
    row.update(fmt_counts(p.counter, per))
    row["issue clk (hand)"] = f"{t.issue_clk_per_iteration / per:.0f}"
    row["VALU / MFMA clk (SIMD)"] = f"{p.pipes['valu'] / per:.0f} / {p.pipes['mfma'] / per:.0f}"
    row["LDS / VMEM clk (CU)"] = f"{p.pipes['lds'] / per:.0f} / {p.pipes['vmem'] / per:.0f}"
    if p.mca:
        row["llvm-mca clk (x4)"] = f"{4 * p.mca['cycles_per_iteration'] / per:.0f}"
        pr = p.mca["pressure"]
        row["llvm-mca XDL / VALU clk"] = f"{4 * pr.get('HWXDL', 0) / per:.0f} / {4 * pr.get('HWVALU', 0) / per:.0f}"
    row[f"one wave, latency {hw.seconds(lat) * 1e6:.1f} us"] = f"{t.clk_per_iteration / per:.0f}"
    return row


def parts_text(rounds):
    """Each round's bounds (us), largest first."""
    out = []
    for r in rounds:
        b = sorted(r["bounds"].items(), key=lambda kv: -kv[1])[:3]
        out.append(f"{r['waves_per_cu']} waves/CU: " + ", ".join(f"{k} {hw.seconds(v) * 1e6:.1f}" for k, v in b))
    return "; then ".join(out)


def markdown_table(rows):
    if not rows:
        return ""
    keys = list(rows[0].keys())
    for r in rows[1:]:
        for k in r:
            if k not in keys:
                keys.append(k)
    out = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    for r in rows:
        out.append("| " + " | ".join(str(r.get(k, "")) for k in keys) + " |")
    return "\n".join(out)


def queries_kernel(shape):
    """The multi-token kernel the gfx950 launcher takes for QL x QG rows (decode_queries.hip):
    one 16-column N tile up to 16 rows, two up to 32."""
    two = shape["query_len"] * shape["qg"] > 16
    return f"uq_gfx950_decode_queries_{'2tiles_' if two else ''}qg{shape['qg']}"


def decode_record(kernels, plan_json, shape, latency_s, bandwidth, queries=False):
    """Partition kernel + reducer of a decode shape at one latency (seconds) and bandwidth,
    at the current clock; `queries`: the multi-token kernel (shape["query_len"] tokens a sequence)."""
    k = kernels[queries_kernel(shape) if queries else f"uq_gfx950_decode_qg{shape['qg']}"]
    red = kernels["uq_gfx950_decode_reduce" if plan_json["partitions"] <= 1024 else "uq_gfx950_decode_reduce_p4096"]
    lat = round(hw.clk(latency_s))
    d = predict.predict_decode(k, plan_json, shape, lat, bandwidth)
    r = predict.predict_reduce(red, plan_json, shape, lat, bandwidth)
    return d, r


def queries_section(args, kernels):
    """Several query tokens per sequence: the headline shape at QL 1, 2 and 4, each against the
    one-token call (QL 1), or the launcher's refusal where the gfx950 kernel cannot take it."""
    lines = [f"\n## Several query tokens per sequence (spec §5.9, uniform form; HBM latency "
             f"{hw.HBM_LATENCY_S * 1e6:.1f} us, {hw.CLOCK_HZ / 1e9:.1f} GHz, gfx950 partition rule)\n",
             "QL 1 is the one-token kernel (a plan without several query tokens); QL > 1 the multi-token kernel "
             "(uq_gfx950_decode_queries_qg*: one N tile of 16 MFMA columns holds the QL x QG query rows; "
             "uq_gfx950_decode_queries_2tiles_qg*: two, up to 32 rows), where "
             "the gfx950 launcher takes it; ratio: decode + reduce over the QL 1 call's.\n"]
    rows = []
    for s in QUERIES_SHAPES:
        for bw_name, bw in BANDWIDTHS:
            base = None
            for ql in QUERY_LENS:
                pl = plan(args.plan, "queries", s["num_seqs"], s["seq_len"], s["qg"], s["num_kv_heads"],
                          s["block_size"], ql)
                row = {"shape": s["label"], "bandwidth": bw_name, "QL": ql,
                       "plan": f"P {pl['partitions']}, TGPP {pl['tgpp']}, reducer rows {pl['reduce_grid'][0]}"}
                if not pl["tuned"]:
                    row["kernel"] = "refused: generic Kokkos kernels (not modelled)"
                    row["why"] = pl["refusal"]
                    rows.append(row)
                    continue
                shape = dict(s, query_len=ql)
                d, r = decode_record(kernels, pl, shape, hw.HBM_LATENCY_S, bw, queries=ql > 1)
                total = d["seconds"] + r["seconds"]
                base = total if ql == 1 else base
                row.update({"kernel": d["kernel"], "partition kernel us": f"{d['seconds'] * 1e6:.1f}",
                            "binds": d["binding"], "reducer us": f"{r['seconds'] * 1e6:.1f}",
                            "decode + reduce us": f"{total * 1e6:.1f}",
                            "ratio to QL 1": f"{total / base:.3f}" if base else "",
                            "HBM floor us": f"{(d['hbm_bytes'] + r['hbm_bytes']) / bw * 1e6:.1f}"})
                rows.append(row)
    lines.append(markdown_table(rows))
    lines.append("\nQL 4 at QG 6 or 8 (24 or 32 query rows) takes the two-N-tile kernel; more than 32 rows "
                 "is refused by the launcher and the dispatch runs the generic path (path_reason() says why).\n")
    return "\n".join(lines)


def shape_name(s):
    return f"{s['num_seqs']}x{s['seq_len']} QG{s['qg']} Hk{s['num_kv_heads']} BS{s['block_size']}"


def score_name(s):
    return f"{s['num_reqs']}x{s['max_blocks'] * 128} QL{s['query_len']} H{s['heads']}"


def kb(x):
    return f"{x / 1024:.0f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--objects", required=True, help="folder with uq_gfx950_{decode,reduce,score}_isa.co")
    ap.add_argument("--plan", required=True, help="the gfx950_plan program (perf/gfx950_plan.cpp)")
    ap.add_argument("--banks", help="the gfx950_lds_banks program (default: beside --plan)")
    ap.add_argument("--objdump"), ap.add_argument("--readelf"), ap.add_argument("--mca")
    ap.add_argument("--no-mca", action="store_true")
    ap.add_argument("--markdown", help="also write the report to this file")
    ap.add_argument("--json", help="also write the predictions as a JSON list to this file")
    ap.add_argument("--check", action="store_true", help="CI: fail on a missing kernel or loop")
    ap.add_argument("--rule", choices=("gfx950", "spec"), default="gfx950",
                    help="the decode plans' partition choice: the gfx950 path's rule (default) or the spec's")
    args = ap.parse_args()
    try:
        banks = load_banks(args)
        kernels = load_kernels(args, banks)
    except ModelError as e:
        print(f"gfx950_model: {e}", file=sys.stderr)
        return 1
    lat = round(hw.clk(hw.HBM_LATENCY_S))
    lines = []
    say = lines.append
    say("## Kernels: resources and occupancy (from the code objects' notes)\n")
    res = []
    for name, k in kernels.items():
        occ = hw.occupancy(k.notes["vgprs"], k.notes["lds"], k.waves_per_workgroup, k.notes["sgprs"] or 0)
        res.append({"kernel": name, "VGPRs": k.notes["vgprs"], "SGPRs": k.notes["sgprs"], "LDS B": k.notes["lds"],
                    "waves/workgroup": k.waves_per_workgroup, "waves/CU": occ["waves_per_cu"], "limit": occ["limit"]})
    say(markdown_table(res))

    say("\n## LDS bank conflicts (wavefront emulator, every lane's address; 64 banks, 32 for comparison)\n")
    rows = []
    for name, prof in banks.items():
        for site in prof["sites"]:
            rows.append({"kernel": name, "site": site["site"], "access": site["op"], "instances": site["instances"],
                         "cycles/phase (64 banks)": f"{site['degree64']:.2f}", "worst phase": site["max64"],
                         "cycles/phase (32 banks)": f"{site['degree32']:.2f}"})
    say(markdown_table(rows))

    say("\n## Steady-state paths, per unit of work (one wave; clk = 2.4 GHz clocks)\n")
    rows = []
    for name in ("uq_gfx950_decode_qg6", "uq_gfx950_decode_queries_qg6", "uq_gfx950_decode_queries_2tiles_qg6",
                 "uq_gfx950_decode_qg16"):
        k = kernels[name]
        for p in k.paths():
            per = k.tiles_per_iteration if p is k.loop else 1
            rows.append(path_rows(name, p, per, "16-token tile" if p is k.loop else p.per, lat))
    red = kernels["uq_gfx950_decode_reduce"]
    for p in red.paths():
        rows.append(path_rows(red.name, p, 1, p.per, lat))
    for name in ("uq_gfx950_score_r4", "uq_gfx950_score_r32_buf"):
        k = kernels[name]
        for p in k.paths():
            rows.append(path_rows(name, p, 1, p.per, lat))
    say(markdown_table(rows))

    records = []
    lo_s, hi_s = hw.HBM_LATENCY_RANGE_S
    say(f"\n## Predicted times (model; HBM latency {hw.HBM_LATENCY_S * 1e6:.1f} us; "
        f"range {lo_s * 1e6:.1f}-{hi_s * 1e6:.1f} us in brackets; {hw.CLOCK_HZ / 1e9:.1f} GHz; decode plans by "
        f"{'the gfx950 partition rule' if args.rule == 'gfx950' else 'the spec default'})\n")
    say("Little's law: KB a CU's waves keep in flight in the busiest round (what the code sustains "
        "with unlimited bandwidth) against the KB the CU's share of the bandwidth needs in flight, "
        f"at {lo_s * 1e6:.1f} / {hw.HBM_LATENCY_S * 1e6:.1f} / {hi_s * 1e6:.1f} us.\n")
    table = []
    plans = {}
    for s in DECODE_SHAPES:
        pl = plans[s["label"]] = plan(args.plan, "decode", s["num_seqs"], s["seq_len"], s["qg"], s["num_kv_heads"],
                                      s["block_size"], *([] if args.rule == "spec" else ["gfx950"]))
        for bw_name, bw in BANDWIDTHS:
            d, r = decode_record(kernels, pl, s, hw.HBM_LATENCY_S, bw)
            d_lo, r_lo = decode_record(kernels, pl, s, lo_s, bw)
            d_hi, r_hi = decode_record(kernels, pl, s, hi_s, bw)
            both = d["seconds"] + r["seconds"]
            need = [bw / hw.CUS * x for x in (lo_s, hw.HBM_LATENCY_S, hi_s)]
            have = [x["rounds"][0]["in_flight_bytes"] for x in (d_lo, d, d_hi)]
            table.append({
                "shape": s["label"], "bandwidth": bw_name, "plan": f"P {pl['partitions']}, TGPP {pl['tgpp']}, "
                f"{d['workgroups']} busy WGs ({d['tiles_per_workgroup']} tiles), {d['waves_per_cu_max']}/CU of {d['resident']}",
                "partition kernel us": f"{d['seconds'] * 1e6:.1f} [{d_lo['seconds'] * 1e6:.1f}-{d_hi['seconds'] * 1e6:.1f}]",
                "% of peak BW": f"{100 * d['hbm_bytes'] / d['seconds'] / hw.HBM_PEAK_BYTES_S:.0f}",
                "binds": d["binding"],
                "in flight / needed per CU, KB (Little)": "/".join(kb(x) for x in have) + " vs " + "/".join(kb(x) for x in need),
                "partition kernel, per round on the busiest CU (us)": parts_text(d["rounds"]),
                "reducer us": f"{r['seconds'] * 1e6:.1f} [{r_lo['seconds'] * 1e6:.1f}-{r_hi['seconds'] * 1e6:.1f}]",
                "reducer binds": r["binding"],
                "reducer bounds (us)": parts_text(r["rounds"]),
                "decode + reduce us": f"{both * 1e6:.1f}",
                "% of peak BW (both)": f"{100 * (d['hbm_bytes'] + r['hbm_bytes']) / both / hw.HBM_PEAK_BYTES_S:.0f}",
                "HBM floor us": f"{(d['hbm_bytes'] + r['hbm_bytes']) / bw * 1e6:.1f}",
            })
    say(markdown_table(table))

    # the JSON records and the clock sweep: every decode shape at both bandwidths, the nominal
    # latency and 1.5 us (no shape should be latency-bound there), at each clock of the sweep
    sweep = []
    for hz in hw.CLOCK_SWEEP_HZ:
        hw.set_clock(hz)
        for s in DECODE_SHAPES:
            pl = plans[s["label"]]
            for bw_name, bw in BANDWIDTHS:
                for lat_s in (hw.HBM_LATENCY_S, 1.5e-6):
                    d, r = decode_record(kernels, pl, s, lat_s, bw)
                    records.append({
                        "op": "decode", "shape": shape_name(s), "partition_us": round(d["seconds"] * 1e6, 2),
                        "reducer_us": round(r["seconds"] * 1e6, 2),
                        "total_us": round((d["seconds"] + r["seconds"]) * 1e6, 2),
                        "bandwidth_TBps": round(bw / 1e12, 2), "latency_us": round(lat_s * 1e6, 2),
                        "clock_GHz": round(hz / 1e9, 2), "binds": d["binding"], "reducer_binds": r["binding"],
                        "partitions": pl["partitions"], "tgpp": pl["tgpp"], "partition_rule": args.rule,
                        "hbm_floor_us": round((d["hbm_bytes"] + r["hbm_bytes"]) / bw * 1e6, 2)})
        hw.set_clock(hw.PEAK_CLOCK_HZ)
    for s in DECODE_SHAPES:
        row = {"shape": s["label"]}
        for bw_name, bw in BANDWIDTHS:
            for hz in hw.CLOCK_SWEEP_HZ:
                rec = next(x for x in records if x["shape"] == shape_name(s) and x["bandwidth_TBps"] == round(bw / 1e12, 2)
                           and x["clock_GHz"] == round(hz / 1e9, 2) and x["latency_us"] == 1.0)
                row[f"{bw / 1e12:.1f} TB/s, {hz / 1e9:.1f} GHz"] = f"{rec['partition_us']:.1f} + {rec['reducer_us']:.1f} = {rec['total_us']:.1f}"
        sweep.append(row)
    say(f"\n## Clock sweep: decode + reduce (us) at {hw.HBM_LATENCY_S * 1e6:.1f} us HBM latency\n")
    say(markdown_table(sweep))
    late = [x for x in records if x["latency_us"] == 1.5 and x["clock_GHz"] == 2.4]
    say("\nAt 1.5 us HBM latency, 2.4 GHz: " + "; ".join(
        f"{x['shape']} at {x['bandwidth_TBps']} TB/s {x['total_us']:.1f} us (partition kernel binds: {x['binds']})"
        for x in late) + ".\n")

    say(queries_section(args, kernels))

    table = []
    for s in SCORE_SHAPES:
        pl = plan(args.plan, "score", s["num_reqs"], s["max_blocks"], s["query_len"], s["heads"], hw.CUS)
        kname = f"uq_gfx950_score_r{pl['padded_columns']}{'_buf' if pl['buffered'] else ''}"
        k = kernels[kname]
        for bw_name, bw in BANDWIDTHS:
            p = predict.predict_score(k, pl, s, lat, bw)
            lo = predict.predict_score(k, pl, s, round(hw.clk(lo_s)), bw)["seconds"]
            hi = predict.predict_score(k, pl, s, round(hw.clk(hi_s)), bw)["seconds"]
            table.append({
                "shape": s["label"], "kernel": kname, "bandwidth": bw_name,
                "plan": f"chunk {pl['chunk']} x {pl['chunks']}, splits {pl['splits']}, unit {pl['unit']}, "
                f"{pl['grid']} WGs, {p['positions_per_workgroup']} positions/WG",
                "scorer us": f"{p['seconds'] * 1e6:.1f} [{lo * 1e6:.1f}-{hi * 1e6:.1f}]",
                "% of peak BW": f"{100 * p['hbm_bytes'] / p['seconds'] / hw.HBM_PEAK_BYTES_S:.0f}",
                "binds": p["binding"],
                "per round on the busiest CU (us)": parts_text(p["rounds"]),
                "HBM floor us": f"{p['hbm_bytes'] / bw * 1e6:.1f}",
            })
            records.append({"op": "score", "shape": score_name(s), "partition_us": round(p["seconds"] * 1e6, 2),
                            "reducer_us": 0.0, "total_us": round(p["seconds"] * 1e6, 2),
                            "bandwidth_TBps": round(bw / 1e12, 2), "latency_us": round(hw.HBM_LATENCY_S * 1e6, 2),
                            "clock_GHz": round(hw.CLOCK_HZ / 1e9, 2), "binds": p["binding"], "kernel": kname})
    say(markdown_table(table))
    text = "\n".join(lines) + "\n"
    print(text)
    if args.markdown:
        os.makedirs(os.path.dirname(os.path.abspath(args.markdown)), exist_ok=True)
        with open(args.markdown, "w") as f:
            f.write(text)
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(records, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
