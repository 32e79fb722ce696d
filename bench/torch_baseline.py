#!/usr/bin/env python3
"""The PyTorch eager baseline for bench_indexer's decode case.

What an engine without mxi would run on the same workload: gather the paged MXFP4 cache through
the block table, dequantize it in PyTorch, then matmul, relu, weight and sum over heads, then
torch.topk; and torch.topk alone on scores of the same shape. Timed as bench_indexer times the
public calls: CUDA events around one call, L2 flushed before each by reading 256 MiB, median of
the runs. Needs torch with CUDA (the H200 has it); run it on the machine and build that ran
bench_indexer, right after it, so the two are comparable:

    python3 bench/torch_baseline.py --json torch_baseline.json

The workload follows bench_indexer's: keys and queries N(0, 1) quantized to MXFP4 (E2M1 codes,
E8M0 block scales, ceil rule), weights N(0, 0.125^2), pages of 64 tokens with shuffled ids,
contexts uniform in 0.7-1.3x, H 64, D 128, k 2048, linear layout.
"""
import argparse
import json
import statistics

import torch

E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def quantize_mxfp4(x):
    """x [..., D] fp32 -> (codes [..., D] uint8 in 0..15, scales [..., D/32] uint8 E8M0), ceil rule:
    the block's scale is the smallest power of two that brings its largest magnitude to <= 6."""
    blocks = x.reshape(*x.shape[:-1], -1, 32)
    amax = blocks.abs().amax(dim=-1).clamp_min(2.0**-126)
    exponent = torch.ceil(torch.log2(amax / 6.0)).clamp(-127, 127)
    scaled = blocks / torch.exp2(exponent).unsqueeze(-1)
    grid = torch.tensor(E2M1, device=x.device)
    magnitude = (scaled.abs().unsqueeze(-1) - grid).abs().argmin(dim=-1)
    codes = magnitude + 8 * (scaled < 0).to(magnitude.dtype)
    return codes.reshape(x.shape).to(torch.uint8), (exponent + 127).to(torch.uint8)


def pack_codes(codes):
    """[..., D] codes -> [..., D/2] bytes, element 2i in the low nibble of byte i."""
    return codes[..., 0::2] | (codes[..., 1::2] << 4)


def make_workload(batch, context, heads, block_size, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    lens = (context * (0.7 + 0.6 * torch.rand(batch, generator=g, device="cuda"))).long().clamp_min(1)
    pages_of = (lens + block_size - 1) // block_size
    max_pages = int(pages_of.max())
    num_pages = int(pages_of.sum())
    keys = torch.randn(num_pages * block_size, 128, generator=g, device="cuda")
    codes, scales = quantize_mxfp4(keys)
    values = pack_codes(codes).reshape(num_pages, block_size * 64)
    cache = torch.cat([values, scales.reshape(num_pages, block_size * 4)], dim=1)  # linear pages
    order = torch.randperm(num_pages, generator=g, device="cuda").to(torch.int32)
    table = torch.full((batch, max_pages), -1, dtype=torch.int32, device="cuda")
    start = 0
    for r, n in enumerate(pages_of.tolist()):
        table[r, :n] = order[start:start + n]
        start += n
    q_codes, q_scales = quantize_mxfp4(torch.randn(batch, heads, 128, generator=g, device="cuda"))
    weights = 0.125 * torch.randn(batch, heads, generator=g, device="cuda")
    return dict(cache=cache, table=table, lens=lens, q_codes=q_codes, q_scales=q_scales,
                weights=weights, block_size=block_size)


def dequantize(codes, scales):
    """codes [..., D] (0..15), scales [..., D/32] E8M0 -> fp32 [..., D]."""
    table = torch.tensor(E2M1 + [-v for v in E2M1], device=codes.device)
    values = table[codes.long()].reshape(*codes.shape[:-1], -1, 32)
    return (values * torch.exp2(scales.float() - 127).unsqueeze(-1)).reshape(codes.shape)


def eager_indexer(w, k):
    """Top-k positions of sum_h w * relu(q . k) per request, in PyTorch eager."""
    bs = w["block_size"]
    table = w["table"].clamp_min(0).long()
    pages = w["cache"][table]  # [B, P, page bytes]
    batch, max_pages = table.shape
    packed = pages[..., :bs * 64].reshape(batch, max_pages * bs, 64)
    scales = pages[..., bs * 64:].reshape(batch, max_pages * bs, 4)
    codes = torch.stack([packed & 0xF, packed >> 4], dim=-1).reshape(batch, max_pages * bs, 128)
    keys = dequantize(codes, scales)  # [B, S, D]
    q = dequantize(w["q_codes"], w["q_scales"])  # [B, H, D]
    scores = (torch.relu(torch.bmm(q, keys.transpose(1, 2))) * w["weights"].unsqueeze(-1)).sum(1)
    positions = torch.arange(scores.shape[1], device="cuda")
    scores = scores.masked_fill(positions >= w["lens"].unsqueeze(1), float("-inf"))
    return torch.topk(scores, min(k, scores.shape[1]), dim=1).indices


def timed(fn, flush, iterations):
    """Median of `iterations` CUDA-event timings of fn(), each after an L2 flush, in us."""
    times = []
    for _ in range(iterations + 1):  # the first is a warm-up
        flush()
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(stop) * 1000.0)
    return statistics.median(times[1:])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--context", type=int, default=32768)
    p.add_argument("--heads", type=int, default=64)
    p.add_argument("--k", type=int, default=2048)
    p.add_argument("--block-size", type=int, default=64)
    p.add_argument("--iterations", type=int, default=20)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", help="write the results here")
    a = p.parse_args()

    flush_buffer = torch.ones(64 << 20, device="cuda")  # 256 MiB, read by the flush
    sink = torch.empty((), device="cuda")
    flush = lambda: sink.copy_(flush_buffer.sum())  # noqa: E731

    w = make_workload(a.batch, a.context, a.heads, a.block_size, a.seed)
    eager_us = timed(lambda: eager_indexer(w, a.k), flush, a.iterations)
    scores = torch.randn(a.batch, a.context, device="cuda")
    topk_us = timed(lambda: torch.topk(scores, a.k, dim=1), flush, a.iterations)
    results = {
        "torch": torch.__version__, "device": torch.cuda.get_device_name(),
        "batch": a.batch, "context": a.context, "heads": a.heads, "k": a.k,
        "eager_indexer_us": eager_us, "torch_topk_us": topk_us,
    }
    print(f"| PyTorch eager decode {a.batch} x {a.context // 1024}K (gather, dequant, bmm, relu-weight,"
          f" topk) | {eager_us:.1f} us |")
    print(f"| torch.topk {a.batch} x {a.context}, k {a.k} | {topk_us:.1f} us |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
