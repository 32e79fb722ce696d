#!/usr/bin/env python3
"""One DeepSeek-shaped decode step through mxi's PyTorch ops, as a serving engine makes it.

The indexer's K cache is paged MXFP4 in DeepGEMM's [pages, 64, 1, 68] uint8 form. A step: each
request's new key is quantized into its slot (write_k_cache with a slot mapping), the step's
queries are quantized into DeepGEMM's FP4 form (packed values plus int32 scales), and
rocm_mxfp4_sparse_attn_indexer (vLLM's call, mxi behind it) writes the 2048 best positions of
every query token into the engine's persistent top-k buffer.

    PYTHONPATH=build/torch python3 examples/python/torch_decode.py [--device cuda] [--layout aiter32]
"""

import argparse
import time

import torch

import mxi_torch

HEADS, HEAD_DIM, TOPK, PAGE = 64, 128, 2048, 64  # DeepSeek V3.2's indexer


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", help="cpu or cuda (default cpu)")
    parser.add_argument("--layout", default="linear", choices=mxi_torch.LAYOUTS,
                        help="the cache's page order (aiter32: vLLM's ROCm MXFP4 cache)")
    parser.add_argument("--steps", type=int, default=3, help="decode steps to run (default 3)")
    args = parser.parse_args()
    dev = torch.device(args.device)
    g = torch.Generator().manual_seed(0)

    # The batch: four requests mid-generation, their pages scattered over the cache.
    seq_lens = torch.tensor([1500, 4096, 9000, 200], dtype=torch.int32)
    requests = len(seq_lens)
    cols = (int(seq_lens.max()) + 64 + PAGE - 1) // PAGE  # room for the steps' tokens
    pages = requests * cols + 8
    block_table = torch.randperm(pages, generator=g)[: requests * cols].view(requests, cols)
    block_table = block_table.to(torch.int32).to(dev)
    kv_cache = torch.zeros(pages, PAGE, 1, HEAD_DIM // 2 + HEAD_DIM // 32, dtype=torch.uint8,
                           device=dev)
    max_model_len = cols * PAGE

    # The history, as prefill wrote it: every earlier token's key at its slot.
    for r in range(requests):
        pos = torch.arange(int(seq_lens[r]) - 1, device=dev)
        slots = block_table[r, pos // PAGE].long() * PAGE + pos % PAGE
        keys = torch.randn(len(pos), HEAD_DIM, generator=g).to(torch.bfloat16).to(dev)
        mxi_torch.write_k_cache(keys, slots, kv_cache, layout=args.layout)

    # The engine's persistent buffers.
    seq_lens = seq_lens.to(dev)
    query_start_loc = torch.arange(requests + 1, dtype=torch.int32, device=dev)
    topk_indices = torch.full((256, TOPK), -1, dtype=torch.int32, device=dev)  # max batch 256
    error_word = mxi_torch.new_error_word(dev)

    for step in range(args.steps):
        start = time.perf_counter()
        # This step's token of each request: its key goes to position seq_len - 1.
        last = seq_lens.long() - 1
        slot_mapping = block_table.gather(1, (last // PAGE).view(-1, 1)).view(-1).long() * PAGE + last % PAGE
        k = torch.randn(requests, HEAD_DIM, generator=g).to(torch.bfloat16).to(dev)
        mxi_torch.write_k_cache(k, slot_mapping, kv_cache, layout=args.layout,
                                error_word=error_word)
        # Queries [B, next_n = 1, H, D] to DeepGEMM's FP4 form; the weights hold the softmax scale.
        q = torch.randn(requests, 1, HEADS, HEAD_DIM, generator=g).to(torch.bfloat16).to(dev)
        q_values, q_scale = mxi_torch.quantize_q(q, scales_as_int32=True)
        weights = (torch.randn(requests, HEADS, generator=g) * HEADS ** -0.5 * HEAD_DIM ** -0.5).to(dev)
        mxi_torch.rocm_mxfp4_sparse_attn_indexer(
            None, "model.layers.0.self_attn.indexer", kv_cache, q_values, q_scale, weights, TOPK,
            HEAD_DIM, max_model_len, topk_indices, block_table=block_table, seq_lens=seq_lens,
            query_start_loc=query_start_loc, layout=args.layout, error_word=error_word)
        mxi_torch.raise_on_error(error_word)  # the step synchronises here anyway
        ms = (time.perf_counter() - start) * 1e3

        rows = topk_indices[:requests].cpu()
        print(f"step {step} on {dev} ({args.layout} pages): {ms:.1f} ms")
        for r in range(requests):
            visible = int(seq_lens[r])
            chosen = rows[r][rows[r] >= 0]
            assert len(chosen) == min(visible, TOPK), "a row must hold min(V, 2048) positions"
            assert bool((chosen[1:] > chosen[:-1]).all()), "positions come ascending"
            assert int(chosen[-1]) == visible - 1 or visible > TOPK
            print(f"  request {r}: {visible:5d} visible, {len(chosen):4d} chosen, first "
                  f"{chosen[:5].tolist()}, last {chosen[-3:].tolist()}")
        seq_lens.add_(1)
    print("ok")


if __name__ == "__main__":
    main()
