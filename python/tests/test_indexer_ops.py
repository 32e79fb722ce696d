"""The two indexer ops against the float64 model: every row accepted by the contract's rule,
every layout and tensor form giving the same bits, the outputs written only where they should."""

import pytest
import torch

import mxi_torch
import reference
from conftest import LAYOUTS, make_batch, run_indexer


def assert_rows_accepted(b, out, k, order="position"):
    for t in range(b.tokens):
        exact, scale = b.exact(t)
        why = reference.check_topk_row(out[t, :k], exact, scale, k, order)
        assert why == "", f"row {t}: {why}"
    assert bool((out[b.tokens:] == -7).all()) and bool((out[:, k:] == -7).all())  # untouched


@pytest.mark.parametrize("order", ["position", "score"])
def test_indexer_rows_meet_the_contract(layout, order):
    b = make_batch(layout, seed=1)
    out, word = run_indexer(b, 64, score_order=order == "score")
    assert word == 0
    assert_rows_accepted(b, out, 64, order)


def test_every_layout_and_page_padding_give_the_same_bits():
    results = [run_indexer(make_batch(layout, seed=2), 48)[0] for layout in LAYOUTS]
    results.append(run_indexer(make_batch("aiter32", seed=2, padding=48), 48)[0])
    for r in results[1:]:
        assert torch.equal(r, results[0])


def test_ties_go_to_the_smaller_position():
    b = make_batch("aiter16", distinct_keys=3, seed=3)  # every key one of three: ties everywhere
    out, _ = run_indexer(b, 40)
    assert_rows_accepted(b, out, 40)


def test_compress_ratio_and_cache_slots():
    b = make_batch("aiter32", seq_lens=(400, 90), query_lens=(3, 2), compress_ratio=4, seed=4)
    positions, _ = run_indexer(b, 32)
    assert_rows_accepted(b, positions, 32)
    slots, _ = run_indexer(b, 32, cache_slots=True)
    for t, (r, _) in enumerate(b.rows()):
        row = positions[t, :32].long()
        want = torch.where(row >= 0, b.block_table[r, row.clamp(min=0) // b.block_size].long() *
                           b.block_size + row.clamp(min=0) % b.block_size, row)
        assert torch.equal(slots[t, :32].long(), want)


def test_logits_within_tolerance_and_cleaned():
    b = make_batch("mfma16", seed=5)
    logits = torch.full((b.tokens, b.max_model_len + 5), 7.0)
    run_indexer(b, 16, logits=logits, clean_logits=True)
    for t, (_, v) in enumerate(b.rows()):
        exact, scale = b.exact(t)
        assert bool(((logits[t, :v].double() - exact).abs() <= 1e-5 * scale + 1e-30).all())
        assert bool((logits[t, v:b.max_model_len] == float("-inf")).all())
        assert bool((logits[t, b.max_model_len:] == 7.0).all())


def published(logits_row, visible, cbs, ncb):
    """The contract's pool from a row's fp32 logits: live blocks by their largest logit (NaN
    lowest), the newest block +inf, ties to the smaller id; ids ascending, then -1."""
    blocks = (visible + cbs - 1) // cbs
    score = []
    for j in range(blocks):
        part = logits_row[j * cbs:min(visible, (j + 1) * cbs)].double()
        best = part[~torch.isnan(part)].max().item() if bool((~torch.isnan(part)).any()) else None
        score.append(float("inf") if j == blocks - 1 else best)
    order = sorted(range(blocks), key=lambda j: (1, 0.0, j) if score[j] is None else (0, -score[j], j))
    keep = sorted(order[:ncb])
    return keep + [-1] * (ncb - len(keep))


def test_publishing_follows_the_logits():
    b = make_batch("aiter32", seed=6)
    logits = torch.empty(b.tokens, b.max_model_len)
    pool = torch.full((b.tokens, 5), -7, dtype=torch.int32)
    run_indexer(b, 16, logits=logits, candidate_blocks=pool, candidate_block_size=8)
    for t, (_, v) in enumerate(b.rows()):
        assert pool[t].tolist() == published(logits[t], v, 8, 5)


def test_candidate_indexer_scores_only_the_pool():
    b = make_batch("aiter16", seed=7)
    cbs, ncb = 8, 6
    g = torch.Generator().manual_seed(8)
    pool = torch.randint(-1, 45, (b.tokens, ncb), generator=g, dtype=torch.int32)
    pool[:, 1] = pool[:, 0]  # repeated ids count once
    out = torch.full((b.tokens, 20), -7, dtype=torch.int32)
    word = torch.zeros(1, dtype=torch.int32)
    torch.ops.mxi.candidate_indexer(b.q_values, b.q_scales, b.weights, b.pages, b.query_start_loc,
                                    b.seq_lens, b.block_table, pool, out, word, topk=20,
                                    max_model_len=b.max_model_len, candidate_block_size=cbs,
                                    block_size=b.block_size, layout=b.layout)
    assert int(word) == 0
    for t, (_, v) in enumerate(b.rows()):
        exact, scale = b.exact(t)
        members = sorted({p for j in pool[t].tolist() if j >= 0
                          for p in range(j * cbs, (j + 1) * cbs) if p < v})
        row = out[t].tolist()
        chosen = [p for p in row if p >= 0]
        assert set(chosen) <= set(members) and chosen == sorted(chosen)
        assert len(chosen) == min(20, len(members))
        if len(members) > 20:  # the contract's rule over the candidate set
            lo = min(exact[p] + 1e-5 * scale[p] for p in chosen)
            hi = max(exact[p] - 1e-5 * scale[p] for p in set(members) - set(chosen))
            assert lo >= hi


def test_deepgemm_query_and_cache_forms_read_in_place():
    b = make_batch("linear", seq_lens=(200, 130), query_lens=(2, 2), block_size=64, seed=9)
    want, _ = run_indexer(b, 32)
    # [B, next_n, H, D/2] values, [B, next_n, H] int32 scales, [B, next_n, H] weights, and the
    # cache as [pages, page_size, 1, 68]: views of the same storage, no copies.
    values = b.q_values.view(2, 2, 16, 64)
    scales = reference.pack_scales_int32(b.q_scales).view(2, 2, 16)
    weights = b.weights.view(2, 2, 16)
    cache = b.cache4d()
    assert cache.data_ptr() == b.pages.data_ptr()
    out = torch.full_like(want, -7)
    word = torch.zeros(1, dtype=torch.int32)
    torch.ops.mxi.indexer(values, scales, weights, cache, b.query_start_loc, b.seq_lens,
                          b.block_table, out, word, topk=32, max_model_len=b.max_model_len)
    assert torch.equal(out, want)


def test_bad_metadata_gives_minus_one_rows_and_a_bit():
    b = make_batch("aiter32", seed=10)
    b.block_table[1, 0] = 10_000  # request 1's first page: outside the cache
    out, word = run_indexer(b, 16)
    assert word == mxi_torch.errors.BLOCK_TABLE
    qsl = b.query_start_loc.tolist()
    assert bool((out[qsl[1]:qsl[2], :16] == -1).all())
    assert bool((out[:qsl[1], 0] >= 0).all())  # the other requests are served
    with pytest.raises(mxi_torch.MxiDataError, match="block-table page id"):
        mxi_torch.indexer(b.q_values, b.q_scales, b.weights, b.pages, b.query_start_loc,
                          b.seq_lens, b.block_table, out, topk=16, max_model_len=b.max_model_len,
                          block_size=b.block_size, layout=b.layout)


def test_workspace_bytes_on_the_cpu_is_zero():
    b = make_batch()
    out = torch.empty(b.tokens, 8, dtype=torch.int32)
    word = torch.zeros(1, dtype=torch.int32)
    n = torch.ops.mxi.indexer_workspace_bytes(b.q_values, b.q_scales, b.weights, b.pages,
                                              b.query_start_loc, b.seq_lens, b.block_table, out,
                                              word, topk=8, max_model_len=b.max_model_len,
                                              block_size=b.block_size)
    assert n == 0
