#!/usr/bin/env python3
"""Where a kernel's warps stall, by SASS line, from an Nsight Compute source page.

Make the page on the GPU machine:
    ncu --clock-control none -k regex:pipelined -c 1 --section SourceCounters -o rep ./bench ...
    ncu -i rep.ncu-rep --page source --print-source sass --csv > src.csv
then here:
    tools/ncu-sass-stalls.py src.csv                 # samples by execution count (one role's loop
                                                     # runs a fixed number of times: a group each)
    tools/ncu-sass-stalls.py src.csv --count 133712  # that group's lines, with their top stalls
    tools/ncu-sass-stalls.py src.csv --count 133712 --cuts 0x92f0 0x9950  # its samples between cuts
"""
import argparse
import collections
import csv


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv", help="ncu --page source --print-source sass --csv output")
    parser.add_argument("--count", type=int, help="list the lines executed this many times")
    parser.add_argument("--cuts", nargs="*", default=[], help="address cuts (hex, low 24 bits) for --count")
    args = parser.parse_args()

    table = list(csv.reader(open(args.csv)))
    header = table[1]
    column = {name: i for i, name in enumerate(header)}
    stalls = [h for h in header if h.startswith("stall_") and "(Not Issued)" not in h]
    lines = []
    for row in table[2:]:
        if len(row) < len(header):
            continue
        lines.append({
            "address": row[column["Address"]],
            "source": row[column["Source"]],
            "samples": number(row[column["# Samples"]]),
            "count": int(number(row[column["Instructions Executed"]])),
            "stalls": {s[len("stall_"):]: number(row[column[s]]) for s in stalls},
        })
    total = sum(line["samples"] for line in lines) or 1.0
    print(f"{total:.0f} samples, {sum(line['count'] for line in lines):.0f} warp instructions")

    if args.count is None:
        groups = collections.defaultdict(lambda: [0, 0.0, collections.Counter()])
        for line in lines:
            group = groups[line["count"]]
            group[0] += 1
            group[1] += line["samples"]
            group[2].update(line["stalls"])
        for count, (n, samples, reasons) in sorted(groups.items(), key=lambda g: -g[1][1])[:14]:
            top = ", ".join(f"{r} {v / samples * 100:.0f}%" for r, v in reasons.most_common(5) if samples)
            print(f"  executed {count:>9} x: {n:4} lines, {samples / total * 100:5.1f}% of samples  {top}")
        return

    cuts = [int(c, 16) for c in args.cuts]
    phases = [0.0] * (len(cuts) + 1)
    for line in lines:
        if line["count"] != args.count:
            continue
        phase = sum((int(line["address"], 16) & 0xFFFFFF) >= c for c in cuts)
        phases[phase] += line["samples"]
        top = " ".join(f"{r}:{v:.0f}" for r, v in sorted(line["stalls"].items(), key=lambda kv: -kv[1])[:3] if v)
        print(f"{line['address']:>16} {line['samples']:6.0f}  {line['source'][:64]:64} {top}")
    if cuts:
        group = sum(phases) or 1.0
        print("phases:", ", ".join(f"{p / group * 100:.0f}%" for p in phases))


if __name__ == "__main__":
    main()
