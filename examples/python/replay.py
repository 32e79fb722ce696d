#!/usr/bin/env python3
"""A worked example, from float tensors to a replayed indexer call.

Builds a small batch from float keys and queries with numpy, the way an engine would dump one:
quantizes them to MXFP4 (mxfp4.py), assembles the paged cache in both layouts (pages.py), writes
problem.json and the NPY files mxi-run reads, then runs `mxi-run index` on every backend
present and compares each with the reference backend and with scores computed here in float64
from the same bytes. Along the way it checks that its own quantizer and page assembler write the
bytes `mxi-run quantize` and `mxi-run convert-cache` write. Exits 1 on any disagreement.

    python3 examples/python/replay.py --mxi-run build/tests/tools/mxi-run [--keep DIR]
"""
import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import mxfp4
import pages

H, D, BS, K = 16, 128, 64, 32     # heads, head dim, tokens a page, top-k
PAGE_STRIDE = BS * pages.token_bytes(D) + 16  # 16 padding bytes a page: any multiple of 16 works
MAX_MODEL_LEN = 256
SEQ_LENS = [150, 40, 90]          # tokens of each request so far, its query tokens included
QUERY_LENS = [1, 3, 20]           # a decode token, 3 draft tokens, the last chunk of a prefill


def run(mxi_run, *args):
    """Runs mxi-run; returns (exit status, stderr)."""
    done = subprocess.run([str(mxi_run), *map(str, args)], capture_output=True, text=True)
    return done.returncode, done.stderr.strip()


def make_batch(rng):
    """Float tensors, page bookkeeping, and each slot's quantized key."""
    num_pages = sum(-(-s // BS) for s in SEQ_LENS) + 2           # two pages nobody uses
    free = list(rng.permutation(num_pages))                     # pages in no particular order
    width = max(-(-s // BS) for s in SEQ_LENS)
    block_table = np.full((len(SEQ_LENS), width), -1, np.int32)  # -1: a column never read
    slot_values = np.zeros((num_pages * BS, D // 2), np.uint8)
    slot_scales = np.zeros((num_pages * BS, D // 32), np.uint8)
    keys = []
    for r, seq_len in enumerate(SEQ_LENS):
        block_table[r, :-(-seq_len // BS)] = [free.pop() for _ in range(-(-seq_len // BS))]
        k = rng.standard_normal((seq_len, D)) * rng.uniform(0.5, 2.0, (seq_len, 1))
        k = k.astype(np.float32)
        if r == 0:  # one block of exact rounding ties, and a negative that rounds to -0
            k[0, :16] = [6, 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5, -6, -0.25, -0.75, -1.25, -1.75,
                         -2.5, -3.5, -0.1]
        s = np.arange(seq_len)
        slots = block_table[r, s // BS].astype(np.int64) * BS + s % BS
        slot_values[slots], slot_scales[slots] = mxfp4.quantize(k)
        keys.append(k)
    t = sum(QUERY_LENS)
    q = rng.standard_normal((t, H, D)).astype(np.float32)
    q_values, q_scales = mxfp4.quantize(q)
    return {
        "keys": np.concatenate(keys),
        "block_table": block_table,
        "seq_lens": np.array(SEQ_LENS, np.int32),
        "query_start_loc": np.concatenate([[0], np.cumsum(QUERY_LENS)]).astype(np.int32),
        "q_values": q_values,
        "q_scales": q_scales,
        "weights": rng.uniform(0.05, 0.2, (t, H)).astype(np.float32),
        "slot_values": slot_values,
        "slot_scales": slot_scales,
    }


def write_case(directory, batch, layout):
    directory.mkdir(parents=True)
    kv_cache = pages.cache(batch["slot_values"], batch["slot_scales"], BS, layout, PAGE_STRIDE)
    for name in ["q_values", "q_scales", "weights", "block_table", "seq_lens", "query_start_loc"]:
        np.save(directory / f"{name}.npy", batch[name])
    np.save(directory / "kv_cache.npy", kv_cache)
    problem = {"num_heads": H, "head_dim": D, "block_size": BS, "topk": K,
               "max_model_len": MAX_MODEL_LEN, "layout": layout}
    (directory / "problem.json").write_text(json.dumps(problem, indent=2) + "\n")
    return kv_cache


def rows(batch):
    """(request, visible length) of every query token (docs/semantics.md, what a token sees)."""
    qsl, out = batch["query_start_loc"], []
    for r, seq_len in enumerate(batch["seq_lens"]):
        n = qsl[r + 1] - qsl[r]
        out += [(r, seq_len - n + i + 1) for i in range(n)]  # compress ratio 1: V = p + 1
    return out


def exact_scores(batch):
    """score[t][s] in float64 from the quantized bytes, and the tolerance scale of each."""
    q = mxfp4.dequantize(batch["q_values"], batch["q_scales"])            # [T, H, D]
    key = mxfp4.dequantize(batch["slot_values"], batch["slot_scales"])    # [slots, D]
    out = []
    for t, (r, visible) in enumerate(rows(batch)):
        s = np.arange(visible)
        slots = batch["block_table"][r, s // BS].astype(np.int64) * BS + s % BS
        terms = batch["weights"][t][:, None] * np.maximum(q[t] @ key[slots].T, 0)  # [H, V]
        out.append((terms.sum(axis=0), np.abs(terms).sum(axis=0)))
    return out


def row_accepted(got, want, score, scale):
    """Equal rows, or different choices only between positions whose scores are within 1e-5 of
    their terms (docs/semantics.md, numerics)."""
    if np.array_equal(got, want):
        return True
    a, b = set(got[got >= 0]) - set(want[want >= 0]), set(want[want >= 0]) - set(got[got >= 0])
    return len(a) == len(b) and all(
        score[x] >= score[y] - 1e-5 * max(scale[x], scale[y]) for x in a for y in b)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mxi-run", default="build/tests/tools/mxi-run", type=Path)
    parser.add_argument("--keep", type=Path, help="write the cases and outputs here and keep them")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="mxi-example-"))
    work.mkdir(parents=True, exist_ok=not args.keep)  # --keep: a new directory
    batch = make_batch(np.random.default_rng(2026))
    t = len(batch["weights"])
    print(f"batch: {len(SEQ_LENS)} requests (seq_lens {SEQ_LENS}), {t} query tokens, H={H}, "
          f"D={D}, {len(batch['slot_values']) // BS} pages of {BS} tokens, top-{K}")
    failures = []

    # Our quantizer against the library's, on the float keys.
    np.save(work / "keys.npy", batch["keys"])
    status, err = run(args.mxi_run, "quantize", work / "keys.npy", "--out", work / "keys_mx")
    same = status == 0 and all(
        np.array_equal(np.load(work / "keys_mx" / f), v)
        for f, v in zip(["values.npy", "scales.npy"], mxfp4.quantize(batch["keys"])))
    print(f"quantize: numpy and mxi-run quantize write the same bytes for {len(batch['keys'])} "
          f"keys: {same} {err}".rstrip())
    failures += [] if same else ["quantize"]

    # Both layouts assembled here; convert-cache must turn the linear case into our mfma16 one.
    caches = {layout: write_case(work / layout, batch, layout) for layout in ["linear", "mfma16"]}
    status, err = run(args.mxi_run, "convert-cache", work / "linear", "--to", "mfma16",
                      "--out", work / "converted")
    converted = np.load(work / "converted" / "kv_cache.npy") if status == 0 else None
    same = np.array_equal(converted, caches["mfma16"])
    print(f"pages: a {caches['linear'].shape} cache in both layouts; convert-cache agrees: "
          f"{same} {err}".rstrip())
    failures += [] if same else ["layouts"]

    exact = exact_scores(batch)
    for layout in ["linear", "mfma16"]:
        outputs = {}
        for backend in ["reference", "cpu", "gpu"]:
            out = work / f"out_{layout}_{backend}"
            extra = ["--logits"] if backend == "reference" else []
            status, err = run(args.mxi_run, "index", work / layout, "--out", out,
                              "--backend", backend, *extra)
            if status == 1 and backend == "gpu":
                print(f"index {layout:7} {backend:9}: skipped ({err})")
                continue
            if status != 0:
                print(f"index {layout:7} {backend:9}: FAILED, exit {status}: {err}")
                failures.append(f"{layout} {backend}")
                continue
            outputs[backend] = np.load(out / "topk_indices.npy")
            if backend == "reference":
                print(f"index {layout:7} {backend:9}: {t} rows, the ground truth")
                continue
            accepted = sum(row_accepted(outputs[backend][i], outputs["reference"][i], *exact[i])
                           for i in range(t))
            equal = int((outputs[backend] == outputs["reference"]).all(axis=1).sum())
            print(f"index {layout:7} {backend:9}: {equal}/{t} rows equal to the reference, "
                  f"{accepted}/{t} accepted")
            failures += [] if accepted == t else [f"{layout} {backend} rows"]
        # The reference's logits against the float64 scores computed here.
        logits = np.load(work / f"out_{layout}_reference" / "logits.npy")
        worst = max(np.max(np.abs(logits[i, :len(s)] - s) / np.maximum(scale, 1e-30))
                    for i, (s, scale) in enumerate(exact))
        print(f"logits  {layout:7} reference: largest difference from numpy's scores "
              f"{worst:.1e} of the absolute terms")
        failures += [] if worst <= 1e-5 else [f"{layout} logits"]

    # Top-k by the rules of docs/semantics.md, from the numpy scores, against the reference.
    want = np.full((t, K), -1, np.int32)
    for i, (score, _) in enumerate(exact):
        order = np.lexsort((np.arange(len(score)), -score))[:K]  # best first, ties to smaller
        want[i, :len(order)] = np.sort(order)                    # written in ascending order
    agree = sum(row_accepted(want[i], outputs["reference"][i], *exact[i]) for i in range(t))
    print(f"top-k:  numpy's own selection agrees with the reference on {agree}/{t} rows")
    failures += [] if agree == t else ["numpy selection"]

    if args.keep:
        print(f"files: {work}")
    else:
        shutil.rmtree(work)
    if failures:
        print("FAILED: " + ", ".join(failures))
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
