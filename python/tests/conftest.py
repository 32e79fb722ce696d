"""Batches for the op tests: a paged cache written by the float64 model (reference.py), not by
the op under test, and the metadata an engine would pass."""

import os
import sys
from dataclasses import dataclass, field

import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))

import mxi_torch  # noqa: E402,F401  (loads torch.ops.mxi)
import reference  # noqa: E402

LAYOUTS = ("linear", "mfma16", "aiter32", "aiter16")


@dataclass
class Batch:
    """One indexer call's inputs in mxi's own tensor forms, on the CPU."""

    q_values: torch.Tensor  # uint8 [T, H, D/2]
    q_scales: torch.Tensor  # uint8 [T, H, D/32]
    weights: torch.Tensor  # float32 [T, H]
    pages: torch.Tensor  # uint8 [NB, page bytes]
    query_start_loc: torch.Tensor
    seq_lens: torch.Tensor
    block_table: torch.Tensor
    layout: str
    block_size: int
    head_dim: int
    max_model_len: int
    compress_ratio: int = 1
    keys: torch.Tensor = field(default=None)  # float64 [NB * BS, D], row = cache slot

    @property
    def tokens(self):
        return self.q_values.shape[0]

    @property
    def heads(self):
        return self.q_values.shape[1]

    def cache4d(self):
        """The same bytes as DeepGEMM's [pages, page_size, 1, D/2 + D/32] (unpadded pages)."""
        return self.pages.view(self.pages.shape[0], self.block_size, 1, -1)

    def to(self, device):
        moved = {k: (v.to(device) if isinstance(v, torch.Tensor) and k != "keys" else v)
                 for k, v in self.__dict__.items()}
        return Batch(**moved)

    def rows(self):
        return reference.rows(self.query_start_loc, self.seq_lens, self.compress_ratio)

    def exact(self, t):
        """float64 scores of token t's visible positions and their tolerance scales."""
        r, v = self.rows()[t]
        q = reference.decode(self.q_values[t], self.q_scales[t])
        exact, scale, _ = reference.scores(q, self.weights[t].double(), self.keys, self.block_table,
                                           self.block_size, r, v)
        return exact, scale


def make_batch(layout="linear", *, seq_lens=(300, 150, 70), query_lens=(2, 1, 3), heads=16,
               head_dim=128, block_size=32, compress_ratio=1, distinct_keys=0, seed=0,
               padding=0):
    """A batch whose pages hold quantized Gaussian keys (or `distinct_keys` repeated ones, for
    ties) at shuffled pages; queries and weights random."""
    g = torch.Generator().manual_seed(seed)
    max_len = max(seq_lens) // compress_ratio
    cols = (max_len + block_size - 1) // block_size
    num_pages = cols * len(seq_lens) + 2
    tokens = num_pages * block_size
    if distinct_keys:
        rows = torch.randn(distinct_keys, head_dim, generator=g)
        k = rows[torch.randint(0, distinct_keys, (tokens,), generator=g)]
    else:
        k = torch.randn(tokens, head_dim, generator=g)
    k_values, k_scales = reference.quantize(k)
    page_bytes = block_size * (head_dim // 2 + head_dim // 32) + padding
    garbage = torch.Generator().manual_seed(seed + 1000)  # the padding's bytes: never read
    pages = torch.randint(0, 256, (num_pages, page_bytes), generator=garbage, dtype=torch.uint8)
    slots = torch.arange(tokens)
    reference.write_tokens(pages, layout, block_size, head_dim, slots, k_values, k_scales)
    keys = reference.decode(k_values, k_scales)
    order = torch.randperm(num_pages, generator=g)[: cols * len(seq_lens)]
    block_table = order.reshape(len(seq_lens), cols).to(torch.int32)
    t = sum(query_lens)
    q = torch.randn(t, heads, head_dim, generator=g)
    q_values, q_scales = reference.quantize(q)
    weights = torch.randn(t, heads, generator=g) / heads
    qsl = torch.tensor([0] + list(torch.tensor(query_lens).cumsum(0).tolist()), dtype=torch.int32)
    return Batch(q_values, q_scales, weights, pages, qsl, torch.tensor(seq_lens, dtype=torch.int32),
                 block_table, layout, block_size, head_dim, max(max_len, 1), compress_ratio, keys)


def run_indexer(b: Batch, topk, *, cache=None, q=None, **options):
    """torch.ops.mxi.indexer on a batch; returns (topk_indices, error word)."""
    device = b.pages.device
    out = torch.full((b.tokens + 1, topk + 3), -7, dtype=torch.int32, device=device)  # wider
    word = torch.zeros(1, dtype=torch.int32, device=device)
    q_values, q_scales = q if q is not None else (b.q_values, b.q_scales)
    torch.ops.mxi.indexer(q_values, q_scales, b.weights, b.pages if cache is None else cache,
                          b.query_start_loc, b.seq_lens, b.block_table, out, word, topk=topk,
                          max_model_len=b.max_model_len, compress_ratio=b.compress_ratio,
                          block_size=b.block_size, layout=b.layout, **options)
    return out, int(word.item())


@pytest.fixture(params=LAYOUTS)
def layout(request):
    return request.param
