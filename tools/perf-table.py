#!/usr/bin/env python3
"""Renders a GPU benchmark's JSON output (--benchmark_out of bench_indexer, bench_topk or
bench_logits) as the markdown tables of docs/performance.md, and with --plot FILE.png (needs
matplotlib; bench_indexer only) the decode time and fraction of the gather floor against context.

    tools/perf-table.py docs/perf/bench_indexer-h200-a6dee3c.json [--base OLD.json] [--plot out.png]
"""
import argparse
import json
import re
import sys


def load(path):
    with open(path) as f:
        runs = json.load(f)["benchmarks"]
    return {re.sub(r"(/iterations:\d+|/min_time:[\d.]+)?/manual_time$", "", b["name"]): b
            for b in runs}


def fields(name):
    """'decode/batch:64/ctx:32768/...' -> ('decode', {'batch': 64, ...})."""
    kind, *parts = name.split("/")
    return kind, {k: int(v) for k, v in (p.split(":") for p in parts if ":" in p)}


def label(name):
    kind, f = fields(name)
    if kind == "decode":
        extra = {0: "", 1: ", logits out", 2: ", publishing"}[f["extra"]]
        flush = ", memset flush" if f["memset"] else ""
        return (f"decode {f['batch']} x {f['ctx'] // 1024}K, next_n {f['next_n']}, "
                f"mml {f['mml'] // 1024}K, k {f['k']}{extra}{flush}")
    if kind == "candidate":
        return f"candidate {f['batch']} x {f['ctx'] // 1024}K, pool {f['ncb']} x 8"
    if kind == "prefill":
        return f"prefill {f['T'] // 1024}K causal"
    if kind in ("write_cache", "write_cache_pages"):
        slots = ", whole pages shuffled" if kind == "write_cache_pages" else ", tokens shuffled"
        return f"write_k_cache {f['tokens'] / 2**20:.1f}M tokens {'bf16' if f['bf16'] else 'fp32'}{slots}"
    if kind == "quantize":
        return f"quantize_q {f['tokens']} x {f['heads']} x 128"
    if kind == "quantize_floor":
        return f"quantize_q's floor (bytes moved, no arithmetic) {f['tokens']} x {f['heads']} x 128"
    if kind == "copy":
        return "copy 1 GiB (ceiling)"
    if kind == "launch":
        return "empty kernel"
    if kind == "bench_topk":  # bench_topk/VARIANT/rows/cols/k/width
        variant, rows, cols, k, width = name.split("/")[1:6]
        return (f"top-k {variant} {rows} x {cols}, k {k}, width "
                f"{int(width) // 1024}K" if int(width) % 1024 == 0 else
                f"top-k {variant} {rows} x {cols}, k {k}, width {width}")
    if kind == "bench_logits":  # bench_logits/VARIANT/batch/ctx/next_n (next_n 0: causal prefill)
        variant, batch, ctx, next_n = name.split("/")[1:5]
        what = f"next_n {next_n}" if int(next_n) else "causal"
        return f"logits {variant} {batch} x {int(ctx) // 1024}K, {what}"
    return name


def time_us(b):
    return b["real_time"] * {"us": 1, "ms": 1e3, "ns": 1e-3, "s": 1e6}[b["time_unit"]]


def counter(b):
    for key in ("x_floor", "TFLOP/s", "in+out_GB/s", "read+write_TB/s", "pool_GB/s"):
        if key in b:
            return f"{key} {b[key]:.3g}"
    if "FLOP/s" in b:
        return f"TFLOP/s {b['FLOP/s'] * 1e-12:.3g}"
    if "bytes_per_second" in b:
        return f"GB/s {b['bytes_per_second'] * 1e-9:.3g}"
    return ""


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("json")
    p.add_argument("--base", help="an earlier run: its times go in a second column")
    p.add_argument("--plot", help="write decode time and fraction of floor against context here")
    a = p.parse_args()
    now = load(a.json)
    base = load(a.base) if a.base else {}
    print("| case | time | " + ("before | " if base else "") + "floor (same run) | counter |")
    print("|---|---|" + ("---|" if base else "") + "---|---|")
    for name, b in now.items():
        before = f"{time_us(base[name]):.1f} us | " if name in base else ("| " if base else "")
        floor = f"{b['floor_us']:.1f} us" if "floor_us" in b else ""
        print(f"| {label(name)} | {time_us(b):.1f} us | {before}{floor} | {counter(b)} |")
    if a.plot:
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            sys.exit("perf-table: --plot needs matplotlib (apt-get install python3-matplotlib)")
        sweep = sorted((fields(n)[1]["ctx"], time_us(b), b["floor_us"]) for n, b in now.items()
                       if fields(n)[0] == "decode" and fields(n)[1]["batch"] == 64
                       and fields(n)[1]["next_n"] == 1 and fields(n)[1]["mml"] == 2**20
                       and fields(n)[1]["k"] == 2048 and not fields(n)[1]["memset"]
                       and not fields(n)[1]["extra"])
        ctx = [s[0] for s in sweep]
        fig, (t, f) = plt.subplots(1, 2, figsize=(10, 4))
        t.plot(ctx, [s[1] for s in sweep], "o-", label="run_indexer")
        t.plot(ctx, [s[2] for s in sweep], "s--", label="paged gather floor")
        t.set(xscale="log", xlabel="context (tokens), 64 requests", ylabel="us", title="decode time")
        t.legend()
        f.plot(ctx, [s[2] / s[1] for s in sweep], "o-")
        f.set(xscale="log", xlabel="context (tokens)", ylabel="floor / time", title="fraction of floor",
              ylim=(0, 1))
        fig.tight_layout()
        fig.savefig(a.plot, dpi=100)


if __name__ == "__main__":
    main()
