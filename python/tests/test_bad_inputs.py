"""Bad arguments are refused before anything runs, with a ValueError naming the argument and the
rule, by the ops and by the engine-signature functions; the Meta kernels refuse the same."""

import pytest
import torch

import mxi_torch
from conftest import make_batch


def indexer_args(b, **change):
    out = torch.empty(b.tokens, 16, dtype=torch.int32)
    args = dict(q_values=b.q_values, q_scales=b.q_scales, weights=b.weights, kv_cache=b.pages,
                query_start_loc=b.query_start_loc, seq_lens=b.seq_lens,
                block_table=b.block_table, topk_indices=out,
                error_word=torch.zeros(1, dtype=torch.int32), topk=16,
                max_model_len=b.max_model_len, block_size=b.block_size, layout=b.layout)
    args.update(change)
    return args


def call_indexer(args):
    a = dict(args)
    positional = [a.pop(k) for k in ("q_values", "q_scales", "weights", "kv_cache",
                                     "query_start_loc", "seq_lens", "block_table", "topk_indices",
                                     "error_word")]
    torch.ops.mxi.indexer(*positional, **a)


B = make_batch("aiter32", seed=1)
T, H = B.tokens, B.heads

INDEXER_CASES = [
    (dict(q_values=B.q_values.float()), "q_values must be uint8 or int8 or float4_e2m1fn_x2, got float32"),
    (dict(q_values=B.q_values[:, :, :32].contiguous()), "q_scales must have shape [6, 16, 2]"),
    (dict(q_values=B.q_values.transpose(0, 1)), "q_values must be contiguous"),
    (dict(q_scales=B.q_scales[:, :8]), "q_scales must have shape [6, 16, 4]"),
    (dict(q_scales=torch.zeros(T, H, 4, dtype=torch.int64)), "q_scales must be uint8 or float8_e8m0fnu or int32, got int64"),
    (dict(weights=B.weights.double()), "weights must be float32, got float64"),
    (dict(weights=B.weights[:, :8]), "weights must have shape [6, 16] or [6, 16], got [6, 8]"),
    (dict(kv_cache=B.pages.view(torch.int8)), "kv_cache must be uint8, got int8"),
    (dict(kv_cache=B.pages[0]), "kv_cache must be [pages, page_size, 1, head_dim/2 + head_dim/32]"),
    (dict(block_size=None), "block_size is required with a 2-D kv_cache"),
    (dict(kv_cache=B.pages.view(B.pages.shape[0], 32, 68), block_size=64), "block_size must equal kv_cache.shape[1] = 32, got 64"),
    (dict(kv_cache=B.pages[:, :100]), "kv_cache.shape[1] must be >= block_size * (head_dim/2 + head_dim/32) = 2176 bytes, got 100"),
    (dict(kv_cache=B.pages.view(-1, 32, 1, 68)[:, :, :, :64]), "kv_cache.shape[-1] must be head_dim/2 + head_dim/32 = 68"),
    (dict(layout="tiled"), "layout must be linear, mfma16, aiter32 or aiter16, got 'tiled'"),
    (dict(layout="aiter32", kv_cache=B.pages.view(-1, 16, 68), block_size=None), "mxi: cache.block_size must be a multiple of 32 with layout aiter32, got 16"),
    (dict(seq_lens=B.seq_lens.long()), "seq_lens must be int32, got int64"),
    (dict(query_start_loc=B.query_start_loc[:-1]), "query_start_loc must have R + 1 = 4 entries"),
    (dict(block_table=B.block_table[:2]), "block_table must have at least R = 3 rows, got 2"),
    (dict(block_table=B.block_table[:, :3]), "block_table's rows must follow one another"),
    (dict(block_table=B.block_table.t().contiguous().t()), "block_table must have contiguous rows"),
    (dict(topk_indices=torch.empty(T - 1, 16, dtype=torch.int32)), "topk_indices must have at least T = 6 rows, got 5"),
    (dict(topk_indices=torch.empty(T, 8, dtype=torch.int32)), "topk_indices.shape[1] must be >= topk = 16, got 8"),
    (dict(topk_indices=torch.empty(T, 16, dtype=torch.int64)), "topk_indices must be int32, got int64"),
    (dict(error_word=torch.zeros(2, dtype=torch.int32)), "error_word must hold one int32, got shape [2]"),
    (dict(error_word=torch.zeros(1, dtype=torch.int64)), "error_word must be int32, got int64"),
    (dict(topk=0, topk_indices=torch.empty(T, 16, dtype=torch.int32)), "topk must be >= 1, got 0"),
    (dict(topk=5000, topk_indices=torch.empty(T, 5000, dtype=torch.int32)), "mxi: topk.k must be in [1, 4096], got 5000"),
    (dict(max_model_len=0), "mxi: max_model_len must be >= 1"),
    (dict(compress_ratio=0), "mxi: compress_ratio must be >= 1, got 0"),
    (dict(logits=torch.empty(T, 10)), "logits.shape[1] must be >= max_model_len"),
    (dict(candidate_blocks=torch.empty(T, 4, dtype=torch.int32), candidate_block_size=0), "mxi: candidates.block_size must be >= 1, got 0"),
]


@pytest.mark.parametrize("change,message", INDEXER_CASES, ids=[m[:40] for _, m in INDEXER_CASES])
def test_indexer_refuses(change, message):
    with pytest.raises(ValueError) as e:
        call_indexer(indexer_args(B, **change))
    assert message in str(e.value)


@pytest.mark.parametrize("change,message", INDEXER_CASES[:10], ids=[m[:40] for _, m in INDEXER_CASES[:10]])
def test_meta_kernel_refuses_alike(change, message):
    args = {k: (v.to("meta") if isinstance(v, torch.Tensor) else v)
            for k, v in indexer_args(B, **change).items()}
    with pytest.raises(ValueError) as e:
        call_indexer(args)
    assert message in str(e.value)


def test_meta_kernel_accepts_a_good_call():
    call_indexer({k: (v.to("meta") if isinstance(v, torch.Tensor) else v)
                  for k, v in indexer_args(B).items()})


def test_writer_and_quantizer_refuse():
    cache = torch.zeros(4, 32 * 68, dtype=torch.uint8)
    k, slots = torch.randn(3, 128), torch.arange(3)
    cases = [
        (lambda: mxi_torch.write_k_cache(k.double(), slots, cache, block_size=32), "k must be float32 or bfloat16, got float64"),
        (lambda: mxi_torch.write_k_cache(k, slots.int(), cache, block_size=32), "slot_mapping must be int64, got int32"),
        (lambda: mxi_torch.write_k_cache(k, slots[:2], cache, block_size=32), "slot_mapping must have N = k.shape[0] = 3 entries, got 2"),
        (lambda: mxi_torch.write_k_cache(torch.randn(3, 256), slots, cache, block_size=32), "kv_cache.shape[1] must be >= block_size * (head_dim/2 + head_dim/32) = 4352 bytes, got 2176"),
        (lambda: mxi_torch.write_k_cache(k, slots, cache, block_size=32, rule="round"), "rule must be ceil or floor, got 'round'"),
        (lambda: mxi_torch.write_k_cache(k.view(3, 2, 64), slots, cache, block_size=32), "k.shape[1] must be 1 (one key head), got 2"),
        (lambda: mxi_torch.quantize_q(torch.randn(2, 8, 128)), "mxi: num_heads must be a multiple of 16 in [16, 128], got 8"),
        (lambda: mxi_torch.quantize_q(torch.randn(2, 16, 64), scales_as_int32=True), "q_scales as int32 packs four E8M0 bytes a head, so head_dim must be 128, got 64"),
        (lambda: mxi_torch.quantize_q(torch.randn(2, 16, 128), torch.empty(2, 16, 32, dtype=torch.uint8)), "q_values must have shape [2, 16, 64]"),
    ]
    for call, message in cases:
        with pytest.raises(ValueError) as e:
            call()
        assert message in str(e.value)


def test_engine_functions_refuse():
    b = B
    out = torch.empty(b.tokens, 16, dtype=torch.int32)
    meta = dict(block_table=b.block_table, seq_lens=b.seq_lens, query_start_loc=b.query_start_loc,
                block_size=b.block_size, layout=b.layout)
    hidden = torch.empty(b.tokens, 8)

    def attn(**change):
        a = dict(hidden_states=hidden, k_cache_prefix="layer.0", kv_cache=b.pages,
                 q_values=b.q_values, q_scale=b.q_scales, weights=b.weights, topk_tokens=16,
                 head_dim=128, max_model_len=b.max_model_len, topk_indices_buffer=out)
        a.update(change)
        mxi_torch.rocm_mxfp4_sparse_attn_indexer(**a, **meta)

    def mqa(**change):
        a = dict(hidden_states=hidden, k_cache_prefix="layer.1", kv_cache=b.pages,
                 q_values=b.q_values, q_scale=b.q_scales, weights=b.weights, topk_tokens=16,
                 head_dim=128, max_model_len=b.max_model_len, topk_indices_buffer=out,
                 compress_ratio=1, candidate_blocks=torch.zeros(b.tokens, 4, dtype=torch.int32),
                 candidate_block_size=8, num_candidate_cols=32)
        a.update(change)
        mxi_torch.rocm_mxfp4_sparse_mqa_indexer(**a, **meta)

    cases = [
        (lambda: attn(head_dim=64), "q_values.shape[-1] must be head_dim/2 = 32 (two E2M1 codes a byte), got 64"),
        (lambda: attn(topk_tokens=0), "topk_tokens must be an int >= 1, got 0"),
        (lambda: attn(max_model_len=2.5), "max_model_len must be an int >= 1, got 2.5"),
        (lambda: attn(hidden_states=torch.empty(2, 8)), "hidden_states.shape[0] must be the query tokens T = 6, got 2"),
        (lambda: attn(candidate_write=True), "candidate_write needs candidate_blocks"),
        (lambda: attn(weights=b.weights.half()), "weights must be float32, got float16"),
        (lambda: mqa(num_candidate_cols=30), "num_candidate_cols must be candidate_blocks.shape[1] * candidate_block_size = 32, got 30"),
        (lambda: mqa(candidate_blocks=None), "candidate_blocks must be an int32 tensor [T, NCB]"),
        (lambda: mqa(compress_ratio=0), "compress_ratio must be an int >= 1, got 0"),
    ]
    for call, message in cases:
        with pytest.raises(ValueError) as e:
            call()
        assert message in str(e.value)
