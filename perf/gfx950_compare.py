#!/usr/bin/env python3
"""Measured against modelled: the MI355X suite's benchmark JSON beside the gfx950 model's.

    python3 perf/gfx950_compare.py --model MODEL.json --bench bench_decode.json [bench_score.json ...]
                                   [--bandwidth 6.6] [--low 0.7] [--high 1.5]

MODEL.json: `./uq model --json` (perf/gfx950_model.py; records {"op", "shape", "total_us",
"bandwidth_TBps", "latency_us", "clock_GHz", ...}). The benchmarks: Google Benchmark JSON of
perf/bench_decode and perf/bench_score (names decode/B4/ctx75000/QG6/Hk1/BS64 and
score/B32/ctx131072/QL4/H1, manual time per iteration = one call). For every benchmark the
model has, prints measured / model against the model's record at --bandwidth TB/s, 1 us HBM
latency and 2.4 GHz, and PASS inside [--low, --high], INVESTIGATE outside. Exit 0 either way (the
verdict is a report for a person); 2 when a file cannot be read or nothing matches.
"""
import argparse
import json
import re
import sys

sys.dont_write_bytecode = True


def model_key(record):
    return (record["op"], record["shape"])


def bench_key(name):
    """decode/B4/ctx75000/QG6/Hk1/BS64 -> ("decode", "4x75000 QG6 Hk1 BS64");
    score/B32/ctx131072/QL4/H1 -> ("score", "32x131072 QL4 H1"); None for other rows."""
    m = re.fullmatch(r"decode/B(\d+)/ctx(\d+)/QG(\d+)/Hk(\d+)/BS(\d+)", name)
    if m:
        b, ctx, qg, hk, bs = m.groups()
        return ("decode", f"{b}x{ctx} QG{qg} Hk{hk} BS{bs}")
    m = re.fullmatch(r"score/B(\d+)/ctx(\d+)/QL(\d+)/H(\d+)", name)
    if m:
        b, ctx, ql, h = m.groups()
        return ("score", f"{b}x{ctx} QL{ql} H{h}")
    return None


def to_us(value, unit):
    return value * {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}[unit]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--bench", required=True, nargs="+")
    ap.add_argument("--bandwidth", type=float, default=6.6, help="TB/s of the model's records to compare with")
    ap.add_argument("--low", type=float, default=0.7)
    ap.add_argument("--high", type=float, default=1.5)
    args = ap.parse_args()
    try:
        with open(args.model) as f:
            records = json.load(f)
        runs = []
        for path in args.bench:
            with open(path) as f:
                runs += json.load(f).get("benchmarks", [])
    except (OSError, ValueError) as e:
        print(f"gfx950_compare: {e}", file=sys.stderr)
        return 2
    model = {}
    for r in records:
        if r["bandwidth_TBps"] == args.bandwidth and r["latency_us"] == 1.0 and r["clock_GHz"] == 2.4:
            model[model_key(r)] = r
    rows = []
    for run in runs:
        key = bench_key(run.get("name", "").split("/manual_time")[0])
        if key is None or key not in model or run.get("run_type") == "aggregate":
            continue
        measured = to_us(run["real_time"], run.get("time_unit", "us"))
        expected = model[key]["total_us"]
        ratio = measured / expected if expected > 0 else float("inf")
        verdict = "PASS" if args.low <= ratio <= args.high else "INVESTIGATE"
        rows.append((key, measured, expected, ratio, verdict, run.get("label", "")))
    if not rows:
        print("gfx950_compare: no benchmark matches a modelled shape", file=sys.stderr)
        return 2
    print(f"| op | shape | measured us | model us ({args.bandwidth} TB/s, 1 us, 2.4 GHz) | measured / model | verdict "
          f"[{args.low}, {args.high}] | path |")
    print("|---|---|---:|---:|---:|---|---|")
    for (op, shape), measured, expected, ratio, verdict, label in rows:
        print(f"| {op} | {shape} | {measured:.1f} | {expected:.1f} | {ratio:.2f} | {verdict} | {label} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
