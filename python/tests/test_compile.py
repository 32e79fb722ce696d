"""torch.compile(fullgraph=True) of a layer and torch.library.opcheck of every op, where the
installed torch has them (torch 2): on the CPU, and on CUDA where a device is present."""

import pytest
import torch

import mxi_torch
from conftest import make_batch

HAS_COMPILE = hasattr(torch, "compile")
HAS_OPCHECK = hasattr(torch.library, "opcheck")
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def layer_and_inputs(device, layout="aiter32"):
    b = make_batch(layout, seed=21).to(device)
    meta = mxi_torch.IndexerMetadata(b.block_table, b.seq_lens, b.query_start_loc)
    topk = torch.full((b.tokens, 32), -7, dtype=torch.int32, device=device)
    layer = mxi_torch.SparseAttnIndexer(
        mxi_torch.KCache(b.pages, block_size=b.block_size, layout=layout), 32, 128,
        b.max_model_len, topk, meta)
    return layer, b


@pytest.mark.skipif(not HAS_COMPILE, reason=f"torch {torch.__version__} has no torch.compile")
@pytest.mark.parametrize("device", DEVICES)
def test_compiled_layer_equals_eager(device):
    torch._dynamo.reset()
    layer, b = layer_and_inputs(device)
    q = (b.q_values, b.q_scales)
    layer(None, q, None, b.weights)
    want = layer.topk_indices_buffer.clone()
    layer.topk_indices_buffer.fill_(-7)
    # Inductor on CUDA; on the CPU AOTAutograd's eager backend (the same tracing and
    # functionalization, without needing a compiler for generated C++).
    compiled = torch.compile(layer, fullgraph=True,
                             backend="inductor" if device == "cuda" else "aot_eager")
    compiled(None, q, None, b.weights)
    assert torch.equal(layer.topk_indices_buffer, want)
    # New metadata in the same buffers: the compiled graph reads them afresh.
    b.seq_lens.sub_(5)
    layer(None, q, None, b.weights)
    want = layer.topk_indices_buffer.clone()
    layer.topk_indices_buffer.fill_(-7)
    compiled(None, q, None, b.weights)
    assert torch.equal(layer.topk_indices_buffer, want)
    layer.raise_on_error()


def op_samples(device):
    b = make_batch("aiter16", seed=22).to(device)
    word = torch.zeros(1, dtype=torch.int32, device=device)
    out = torch.empty(b.tokens, 16, dtype=torch.int32, device=device)
    common = (b.q_values, b.q_scales, b.weights, b.pages, b.query_start_loc, b.seq_lens, b.block_table)
    pool = torch.zeros(b.tokens, 4, dtype=torch.int32, device=device)
    k = torch.randn(5, 128, device=device)
    q = torch.randn(2, 16, 128, device=device)
    return [
        (torch.ops.mxi.indexer.default, common + (out, word),
         dict(topk=16, max_model_len=b.max_model_len, block_size=b.block_size, layout=b.layout)),
        (torch.ops.mxi.indexer.default, common + (out, word),
         dict(topk=16, max_model_len=b.max_model_len, block_size=b.block_size, layout=b.layout,
              logits=torch.empty(b.tokens, b.max_model_len, device=device), candidate_blocks=pool)),
        (torch.ops.mxi.candidate_indexer.default, common + (pool, out, word),
         dict(topk=16, max_model_len=b.max_model_len, candidate_block_size=8,
              block_size=b.block_size, layout=b.layout)),
        (torch.ops.mxi.write_k_cache.default,
         (k, torch.arange(5, device=device), b.pages.clone(), word),
         dict(block_size=b.block_size, layout=b.layout)),
        (torch.ops.mxi.quantize_q.default,
         (q, torch.empty(2, 16, 64, dtype=torch.uint8, device=device),
          torch.empty(2, 16, 4, dtype=torch.uint8, device=device)), {}),
    ]


@pytest.mark.skipif(not HAS_OPCHECK, reason=f"torch {torch.__version__} has no torch.library.opcheck")
@pytest.mark.parametrize("device", DEVICES)
def test_opcheck_every_op(device):
    for op, args, kwargs in op_samples(device):
        torch.library.opcheck(op, args, kwargs)
