"""The engine-signature functions and the indexer layers: the same bits as the ops, the two-level
flow (a source layer publishes, a consumer scores the pool), bad metadata surfaced."""

import pytest
import torch

import mxi_torch
import reference
from conftest import make_batch, run_indexer


def metadata(b, slot_mapping=None):
    return mxi_torch.IndexerMetadata(b.block_table, b.seq_lens, b.query_start_loc, slot_mapping)


def test_attn_indexer_function_equals_the_op(layout):
    b = make_batch(layout, seed=11)
    want, _ = run_indexer(b, 24)
    out = torch.full_like(want, -7)
    got = mxi_torch.rocm_mxfp4_sparse_attn_indexer(
        torch.empty(b.tokens, 32), "model.layers.0.indexer", b.pages, b.q_values, b.q_scales,
        b.weights, 24, 128, b.max_model_len, out, block_table=b.block_table, seq_lens=b.seq_lens,
        query_start_loc=b.query_start_loc, block_size=b.block_size, layout=layout)
    assert got is out
    assert torch.equal(out, want)


def test_layers_write_k_quantize_q_and_index_like_the_ops():
    bs, d, heads = 32, 128, 16
    b = make_batch("aiter32", seed=12)
    g = torch.Generator().manual_seed(13)
    k_new = torch.randn(b.tokens, d, generator=g)  # this step's keys: the last position of each token
    rows = b.rows()
    slots = torch.tensor([int(b.block_table[r, (v - 1) // bs]) * bs + (v - 1) % bs for r, v in rows])
    q = torch.randn(b.tokens, heads, d, generator=g)
    cache = mxi_torch.KCache(b.pages.clone(), block_size=bs, layout="aiter32")
    topk = torch.full((b.tokens + 2, 20), -7, dtype=torch.int32)
    pool = torch.full((b.tokens, 4), -7, dtype=torch.int32)
    source = mxi_torch.SparseAttnIndexer(cache, 20, d, b.max_model_len, topk, metadata(b, slots),
                                         candidate_blocks=pool, candidate_block_size=8,
                                         candidate_write=True)
    out = source(torch.empty(b.tokens, 8), q, k_new, b.weights)
    assert out is topk
    source.raise_on_error()

    # The same step through the ops.
    pages = b.pages.clone()
    mxi_torch.write_k_cache(k_new, slots, pages, block_size=bs, layout="aiter32")
    assert torch.equal(pages, cache.kv_cache)
    qv, qs = mxi_torch.quantize_q(q)
    b.pages = pages
    want, _ = run_indexer(b, 20, q=(qv, qs))
    assert torch.equal(topk[:b.tokens], want[:b.tokens, :20])
    assert bool((topk[b.tokens:] == -7).all())
    assert bool((pool >= -1).all()) and bool((pool[:, 0] >= 0).all())

    # A consumer layer scores the published pool (entry B).
    consumed = torch.full((b.tokens, 20), -7, dtype=torch.int32)
    consumer = mxi_torch.SparseMQAIndexer(cache, 20, d, b.max_model_len, consumed, pool, 8, metadata(b))
    consumer(None, (qv, qs), None, b.weights)
    consumer.raise_on_error()
    for t, (_, v) in enumerate(rows):
        members = {p for j in pool[t].tolist() if j >= 0 for p in range(8 * j, 8 * j + 8) if p < v}
        chosen = [p for p in consumed[t].tolist() if p >= 0]
        assert set(chosen) <= members and len(chosen) == min(20, len(members))


def test_deepgemm_query_form_through_the_function():
    b = make_batch("linear", seq_lens=(90, 200), query_lens=(2, 2), block_size=64, seed=14)
    want, _ = run_indexer(b, 16)
    out = torch.full_like(want, -7)
    mxi_torch.rocm_mxfp4_sparse_attn_indexer(
        None, "", b.cache4d(), b.q_values.view(2, 2, 16, 64),
        reference.pack_scales_int32(b.q_scales).view(2, 2, 16), b.weights, 16, 128,
        b.max_model_len, out, block_table=b.block_table, seq_lens=b.seq_lens,
        query_start_loc=b.query_start_loc)
    assert torch.equal(out, want)


def test_layer_collects_bad_metadata_until_asked():
    b = make_batch("mfma16", seed=15)
    b.seq_lens[2] = 1  # below request 2's three query tokens
    topk = torch.empty(b.tokens, 8, dtype=torch.int32)
    layer = mxi_torch.SparseAttnIndexer(mxi_torch.KCache(b.pages, block_size=b.block_size,
                                                         layout="mfma16"),
                                        8, 128, b.max_model_len, topk, metadata(b))
    layer(None, (b.q_values, b.q_scales), None, b.weights)  # no exception: the word holds it
    assert int(layer.error_word) == mxi_torch.errors.SEQ_LEN
    with pytest.raises(mxi_torch.MxiDataError, match="seq_lens entry is below"):
        layer.raise_on_error()
    assert int(layer.error_word) == 0  # reset for the next steps
    assert bool((topk[b.query_start_loc[2]:] == -1).all())
