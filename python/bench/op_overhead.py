#!/usr/bin/env python3
"""Host time a call of torch.ops.mxi.indexer against mxi::run_indexer called from C++ on the same
tensors (bench/cpp_call.cpp, built with -DMXI_TORCH_BENCH=ON).

On CUDA the GPU is first kept busy (torch.cuda._sleep), so that the calls' launches queue up and
the time measured is the host's alone; on the CPU the call's work is tiny and the same on both
sides. The figure wanted: the op's host time less the C++ call's (target: <= 3 us).

    PYTHONPATH=build/torch python3 python/bench/op_overhead.py --device cuda
"""

import argparse
import statistics
import sys
import time

import torch

import mxi_torch


def batch(device, heads, seq_len, requests, topk, page=64):
    g = torch.Generator().manual_seed(0)
    cols = (seq_len + page - 1) // page
    pages = requests * cols
    cache = torch.zeros(pages, page, 1, 68, dtype=torch.uint8, device=device)
    mxi_torch.write_k_cache(torch.randn(pages * page, 128, generator=g).to(device),
                            torch.arange(pages * page, device=device), cache)
    q_values, q_scales = mxi_torch.quantize_q(torch.randn(requests, heads, 128, generator=g).to(device))
    return dict(
        q_values=q_values, q_scales=q_scales,
        weights=torch.randn(requests, heads, generator=g).to(device),
        kv_cache=cache,
        query_start_loc=torch.arange(requests + 1, dtype=torch.int32, device=device),
        seq_lens=torch.full((requests,), seq_len, dtype=torch.int32, device=device),
        block_table=torch.arange(pages, dtype=torch.int32, device=device).view(requests, cols),
        topk_indices=torch.empty(requests, topk, dtype=torch.int32, device=device),
        error_word=torch.zeros(1, dtype=torch.int32, device=device)), cols * page


def host_us(device, calls, iterations, repeats):
    """Least and median host microseconds a call over `repeats` runs of calls(iterations), which
    returns its own figure (the C++ loop) or None (timed here)."""
    samples = []
    for _ in range(repeats):
        if device == "cuda":
            torch.cuda.synchronize()
            torch.cuda._sleep(200_000_000)  # ~0.1 s of GPU time: the launches only queue
        start = time.perf_counter()
        inner = calls(iterations)
        spent = (time.perf_counter() - start) * 1e6 / iterations
        samples.append(inner if inner is not None else spent)
        if device == "cuda":
            torch.cuda.synchronize()
    return min(samples), statistics.median(samples)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--iterations", type=int, default=64, help="calls a timed run")
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    dev = args.device
    try:
        torch.ops.mxi_bench.cpp_indexer_loop
    except (AttributeError, RuntimeError):
        sys.exit("op_overhead: the ops library has no C++ side of this bench; configure the "
                 "extension with -DMXI_TORCH_BENCH=ON")

    # A decode step of DeepSeek's shape on the GPU; a small one on the CPU, where the call's
    # compute runs inside the timed loop on both sides.
    shape = dict(heads=64, seq_len=4096, requests=2, topk=2048) if dev == "cuda" else \
        dict(heads=16, seq_len=64, requests=1, topk=16)
    if dev == "cpu":
        torch.set_num_threads(1)  # the work is tiny; threads would only add noise
    t, max_model_len = batch(dev, **shape)
    k = shape["topk"]
    positional = [t[n] for n in ("q_values", "q_scales", "weights", "kv_cache", "query_start_loc",
                                 "seq_lens", "block_table", "topk_indices", "error_word")]
    need = torch.ops.mxi.indexer_workspace_bytes(*positional, topk=k, max_model_len=max_model_len)
    workspace = torch.empty(max(need, 1), dtype=torch.uint8, device=dev)
    op = torch.ops.mxi.indexer.default

    def cpp(n):
        return torch.ops.mxi_bench.cpp_indexer_loop(*positional, workspace, k, max_model_len, None,
                                                    "linear", n)

    def cpp_op(n):
        return torch.ops.mxi_bench.cpp_op_loop(*positional, workspace, k, max_model_len, None,
                                               "linear", n)

    def op_workspace(n):
        for _ in range(n):
            op(*positional, topk=k, max_model_len=max_model_len, workspace=workspace)

    def op_allocator(n):
        for _ in range(n):
            op(*positional, topk=k, max_model_len=max_model_len)

    def op_inference(n):  # as engines serve: the autograd keys excluded from dispatch
        with torch.inference_mode():
            for _ in range(n):
                op(*positional, topk=k, max_model_len=max_model_len, workspace=workspace)

    def engine_call(n):
        for _ in range(n):
            mxi_torch.rocm_mxfp4_sparse_attn_indexer(
                None, "", t["kv_cache"], t["q_values"], t["q_scales"], t["weights"], k, 128,
                max_model_len, t["topk_indices"], block_table=t["block_table"],
                seq_lens=t["seq_lens"], query_start_loc=t["query_start_loc"],
                error_word=t["error_word"], workspace=workspace)

    def parts(device_part):
        def run(n):
            return torch.ops.mxi_bench.cpp_op_parts_loop(*positional, k, max_model_len, None,
                                                         "linear", device_part, n)
        return run

    for f in (cpp, cpp_op, op_workspace, op_allocator, op_inference, engine_call):  # warm-up
        f(4)
    rows = [("mxi::run_indexer from C++", cpp), ("the op from C++ (dispatcher), workspace given", cpp_op),
            ("torch.ops.mxi.indexer, workspace given", op_workspace),
            ("torch.ops.mxi.indexer, caching allocator", op_allocator),
            ("torch.ops.mxi.indexer, inference_mode", op_inference),
            ("rocm_mxfp4_sparse_attn_indexer (Python checks)", engine_call)]
    print(f"host time a call on {dev} ({torch.__version__}), {shape}, "
          f"min / median of {args.repeats} runs of {args.iterations} calls")
    results = {}
    for name, f in rows:
        low, mid = host_us(dev, f, args.iterations, args.repeats)
        results[name] = low
        print(f"  {name:48s} {low:7.2f} us  ({mid:.2f})")
    base = results[rows[0][0]]
    for name, label in ((rows[1][0], "the op from C++"), (rows[2][0], "the op from Python")):
        over = results[name] - base
        print(f"{label}: {over:+.2f} us a call over the C++ call (target <= 3 us): "
              f"{'met' if over <= 3.0 else 'NOT met'}")
    # Where the op's time over the C++ call goes, from C++: its own work before the call, and the
    # rest (the dispatcher's).
    own = host_us(dev, parts(False), args.iterations, args.repeats)[0]
    device = host_us(dev, parts(True), args.iterations, args.repeats)[0] if dev == "cuda" else 0.0
    over = results[rows[1][0]] - base
    print(f"  of the op's {over:+.2f} us from C++: reading the arguments and sizing the workspace "
          f"{own:.2f} us, device guard and stream {device:.2f} us, the dispatcher and the rest "
          f"{over - own - device:+.2f} us")
    if t["error_word"].item() != 0:
        raise SystemExit("the bench's batch set error bits: " + mxi_torch.describe(t["error_word"].item()))


if __name__ == "__main__":
    main()
