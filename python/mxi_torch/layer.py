"""Indexer layers shaped like the engine's: built once over persistent buffers (the K cache, the
top-k buffer, the batch metadata the engine refreshes in place every step), called with
(hidden_states, q_quant, k, weights). Nothing is allocated for the outputs and nothing waits for
the device, so a step can be captured in a CUDA graph and compiled with torch.compile."""

from dataclasses import dataclass
from typing import Optional

import torch
from torch import nn

from . import engine, errors, ops


@dataclass
class KCache:
    """The indexer's K cache as the engine holds it: uint8 pages in `layout` order."""

    kv_cache: torch.Tensor
    block_size: Optional[int] = None  # needed for a 2-D [pages, page bytes] cache
    layout: str = "linear"
    compress_ratio: int = 1
    prefix: str = ""  # the engine's layer name; unused here


@dataclass
class IndexerMetadata:
    """The batch, in persistent tensors the engine updates in place each step."""

    block_table: torch.Tensor  # int32 [R, pages a request]
    seq_lens: torch.Tensor  # int32 [R]
    query_start_loc: torch.Tensor  # int32 [R + 1]
    slot_mapping: Optional[torch.Tensor] = None  # int64 [T]: where forward's k rows go


class _Indexer(nn.Module):
    def __init__(self, k_cache: KCache, topk_tokens: int, head_dim: int, max_model_len: int,
                 topk_indices_buffer: torch.Tensor, metadata: IndexerMetadata, rule: str):
        super().__init__()
        self.k_cache = k_cache
        self.topk_tokens = topk_tokens
        self.head_dim = head_dim
        self.max_model_len = max_model_len  # compressed positions
        self.topk_indices_buffer = topk_indices_buffer
        self.metadata = metadata
        self.rule = rule
        # Bad metadata found on the device lands here; read it with raise_on_error().
        self.register_buffer("error_word", errors.new_error_word(k_cache.kv_cache.device),
                             persistent=False)

    def raise_on_error(self, reset: bool = True) -> None:
        """Raises MxiDataError if a step since the last reset met bad metadata (a host
        synchronisation on a GPU: call it where the engine synchronises anyway)."""
        errors.raise_on_error(self.error_word, reset)

    def _prepare(self, q_quant, k):
        if k is not None:  # the layer inserts the step's keys itself
            if self.metadata.slot_mapping is None:
                raise ValueError("forward got k rows but metadata.slot_mapping is None")
            torch.ops.mxi.write_k_cache(k, self.metadata.slot_mapping, self.k_cache.kv_cache,
                                        self.error_word, block_size=self.k_cache.block_size,
                                        layout=self.k_cache.layout, rule=self.rule)
        if isinstance(q_quant, torch.Tensor):  # float queries: quantized here
            return ops.quantize_q(q_quant, rule=self.rule)
        return q_quant


class SparseAttnIndexer(_Indexer):
    """Entry point A (vLLM's RocmSparseAttnIndexer): returns topk_indices_buffer, its first T rows
    the best positions of each query token; with candidate_write, also publishes each token's
    candidate pool into candidate_blocks."""

    def __init__(self, k_cache: KCache, topk_tokens: int, head_dim: int, max_model_len: int,
                 topk_indices_buffer: torch.Tensor, metadata: IndexerMetadata, *,
                 candidate_blocks: Optional[torch.Tensor] = None, candidate_block_size: int = 8,
                 candidate_write: bool = False, rule: str = "ceil"):
        super().__init__(k_cache, topk_tokens, head_dim, max_model_len, topk_indices_buffer,
                         metadata, rule)
        self.candidate_blocks = candidate_blocks
        self.candidate_block_size = candidate_block_size
        self.candidate_write = candidate_write

    def forward(self, hidden_states, q_quant, k, weights):
        q_values, q_scale = self._prepare(q_quant, k)
        m = self.metadata
        return engine.rocm_mxfp4_sparse_attn_indexer(
            hidden_states, self.k_cache.prefix, self.k_cache.kv_cache, q_values, q_scale, weights,
            self.topk_tokens, self.head_dim, self.max_model_len, self.topk_indices_buffer,
            compress_ratio=self.k_cache.compress_ratio, candidate_blocks=self.candidate_blocks,
            candidate_block_size=self.candidate_block_size, candidate_write=self.candidate_write,
            block_table=m.block_table, seq_lens=m.seq_lens, query_start_loc=m.query_start_loc,
            block_size=self.k_cache.block_size, layout=self.k_cache.layout,
            error_word=self.error_word)


class SparseMQAIndexer(_Indexer):
    """Entry point B (vLLM's RocmSparseMQAIndexer): scores only the candidate pool a source layer
    published into candidate_blocks."""

    def __init__(self, k_cache: KCache, topk_tokens: int, head_dim: int, max_model_len: int,
                 topk_indices_buffer: torch.Tensor, candidate_blocks: torch.Tensor,
                 candidate_block_size: int, metadata: IndexerMetadata, *, rule: str = "ceil"):
        super().__init__(k_cache, topk_tokens, head_dim, max_model_len, topk_indices_buffer,
                         metadata, rule)
        self.candidate_blocks = candidate_blocks
        self.candidate_block_size = candidate_block_size
        self.num_candidate_cols = candidate_blocks.shape[1] * candidate_block_size

    def forward(self, hidden_states, q_quant, k, weights):
        q_values, q_scale = self._prepare(q_quant, k)
        m = self.metadata
        return engine.rocm_mxfp4_sparse_mqa_indexer(
            hidden_states, self.k_cache.prefix, self.k_cache.kv_cache, q_values, q_scale, weights,
            self.topk_tokens, self.head_dim, self.max_model_len, self.topk_indices_buffer,
            self.k_cache.compress_ratio, self.candidate_blocks, self.candidate_block_size,
            self.num_candidate_cols, block_table=m.block_table, seq_lens=m.seq_lens,
            query_start_loc=m.query_start_loc, block_size=self.k_cache.block_size,
            layout=self.k_cache.layout, error_word=self.error_word)
