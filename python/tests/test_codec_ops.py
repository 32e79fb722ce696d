"""The K-cache writer and the Q quantizer against the float64 model, byte for byte."""

import pytest
import torch

import mxi_torch
import reference
from conftest import LAYOUTS


def awkward_rows(n, d, seed):
    """Gaussian rows at many scales, plus blocks the rules treat specially: zeros, tiny values,
    exact ties between codes, a NaN, an infinity, negative zeros."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g) * torch.pow(2.0, torch.randint(-20, 20, (n, 1), generator=g))
    x[0, :32] = 0.0
    x[1, :32] = 1e-38
    x[2, :32] = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 6.0] * 4)  # halfway points
    x[3, 5] = float("nan")
    x[4, 40] = float("inf")
    x[5, :32] = -0.0
    return x


@pytest.mark.parametrize("rule", ["ceil", "floor"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_quantize_q_matches_the_model(rule, dtype):
    q = awkward_rows(6 * 16, 128, 1).reshape(6, 16, 128).to(dtype)
    values, scales = mxi_torch.quantize_q(q, rule=rule)
    want_values, want_scales = reference.quantize(q, rule)
    assert torch.equal(values, want_values)
    assert torch.equal(scales, want_scales)


def test_quantize_q_writes_deepgemm_forms():
    q = torch.randn(2, 3, 16, 128)  # [B, next_n, H, D]
    values, scales = mxi_torch.quantize_q(q, scales_as_int32=True)
    want_values, want_scales = reference.quantize(q)
    assert values.shape == (2, 3, 16, 64) and scales.shape == (2, 3, 16)
    assert scales.dtype == torch.int32
    assert torch.equal(values, want_values)
    assert torch.equal(scales, reference.pack_scales_int32(want_scales))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("rule", ["ceil", "floor"])
def test_write_k_cache_matches_the_model(layout, rule):
    bs, d, pages = 32, 128, 5
    k = awkward_rows(70, d, 2)
    slots = torch.randperm(pages * bs, generator=torch.Generator().manual_seed(3))[:70]
    slots[::9] = -1
    page_bytes = bs * 68 + 16  # padded pages
    cache = torch.full((pages, page_bytes), 0xA5, dtype=torch.uint8)
    expect = cache.clone()
    mxi_torch.write_k_cache(k, slots, cache, block_size=bs, layout=layout, rule=rule)
    values, scales = reference.quantize(k, rule)
    reference.write_tokens(expect, layout, bs, d, slots, values, scales)
    assert torch.equal(cache, expect)  # every byte: the rows' own, nothing else


def test_write_k_cache_into_every_cache_form():
    bs, d = 64, 128
    k = torch.randn(40, 1, d).to(torch.bfloat16)  # [N, 1, D] as a model emits one key head
    slots = torch.arange(40, dtype=torch.int64) * 3
    want = torch.zeros(3, bs * 68, dtype=torch.uint8)
    mxi_torch.write_k_cache(k, slots, want, block_size=bs)
    for shape in [(3, bs, 1, 68), (3, bs, 68)]:
        cache = torch.zeros(shape, dtype=torch.uint8)
        mxi_torch.write_k_cache(k, slots, cache)  # the page size from the shape
        assert torch.equal(cache.view(3, -1), want)


def test_write_k_cache_flags_a_bad_slot_and_writes_the_rest():
    cache = torch.zeros(2, 32 * 68, dtype=torch.uint8)
    k = torch.randn(3, 128)
    slots = torch.tensor([0, 64, 5])  # 64 is past the 2 x 32 slots
    word = mxi_torch.new_error_word("cpu")
    mxi_torch.write_k_cache(k, slots, cache, block_size=32, error_word=word)
    assert int(word) == 1 << 4
    expect = torch.zeros_like(cache)
    values, scales = reference.quantize(k)
    reference.write_tokens(expect, "linear", 32, 128, torch.tensor([0, -1, 5]), values, scales)
    assert torch.equal(cache, expect)
    with pytest.raises(mxi_torch.MxiDataError, match="slot_mapping entry is outside"):
        mxi_torch.write_k_cache(k, slots, cache, block_size=32)  # no error word: raised at once
