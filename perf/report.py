#!/usr/bin/env python3
"""Turn Google Benchmark JSON from the uq bench programs into a Markdown table, and (if
matplotlib is importable: Debian's python3-matplotlib) a PNG of GB/s against context
length for each path.

    python3 perf/report.py build/cuda/bench/*.json [--png decode_gbs.png]
"""
import json
import re
import sys


def load(paths):
    rows, context = [], {}
    for p in paths:
        with open(p) as f:
            data = json.load(f)
        context = data.get("context", {})
        for b in data.get("benchmarks", []):
            if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
                continue
            rows.append(b)
    return rows, context


def table(rows, context):
    out = []
    out.append(f"Execution space: {context.get('uq_execution_space', '?')}, device: {context.get('uq_device', '?')}, "
               f"copy bandwidth {float(context.get('copy_GB/s', 'nan')):.1f} GB/s, host {context.get('host_name', '?')}, "
               f"{context.get('date', '?')}")
    out.append("")
    out.append("| benchmark | path | time (µs) | GB/s | % of copy | partitions |")
    out.append("|---|---|---:|---:|---:|---:|")
    for b in rows:
        t = b["real_time"]
        unit = b.get("time_unit", "us")
        t_us = t * {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}[unit]
        out.append("| {} | {} | {:.1f} | {:.1f} | {:.1f} | {} |".format(
            b["name"].split("/manual_time")[0], b.get("label", ""), t_us, b.get("FOM: GB/s", 0.0) / 1.0,
            b.get("pct_copy", 0.0), int(b["partitions"]) if "partitions" in b else ""))
    return "\n".join(out)


def plot(rows, png):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not available (apt-get install python3-matplotlib); no plot", file=sys.stderr)
        return
    series = {}
    for b in rows:
        # the full decode (partitions + reducer) of each path and device; not the stages
        m = re.match(r"(decode|decode_generic)/B(\d+)/ctx(\d+)/QG(\d+)", b["name"])
        if not m:
            continue
        key = f"B={m.group(2)} QG={m.group(4)}: {b.get('label', m.group(1))}"
        series.setdefault(key, []).append((int(m.group(3)), b.get("FOM: GB/s", 0.0)))
    fig, ax = plt.subplots(figsize=(8, 5))
    for key, pts in sorted(series.items()):
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=key)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")  # CPU and GPU paths differ by three orders of magnitude
    ax.set_xlabel("context (tokens per sequence)")
    ax.set_ylabel("GB/s (cache bytes / time)")
    ax.legend(fontsize=7)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    print(f"wrote {png}", file=sys.stderr)


def main(argv):
    png = None
    paths = []
    it = iter(argv)
    for a in it:
        if a == "--png":
            png = next(it)
        else:
            paths.append(a)
    if not paths:
        print(__doc__)
        return 2
    rows, context = load(paths)
    print(table(rows, context))
    if png:
        plot(rows, png)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
