"""The four ops with Python defaults, and the error word handled for callers that pass none.

Tensors (docs/api.md for the rules, docs/cache-layout.md for the cache's bytes):
  kv_cache     uint8 [pages, page_size, 1, D/2 + D/32], [pages, page_size, D/2 + D/32] or
               [pages, page bytes] (then block_size is needed); pages may be padded
  q_values     packed E2M1 codes, [T, H, D/2] or DeepGEMM's [B, next_n, H, D/2]
  q_scales     E8M0 bytes [T, H, D/32] (or [B, next_n, H, D/32]), or DeepGEMM's int32 [.., H]
               holding the four scales of a D = 128 head
  weights      float32 [T, H] or [B, next_n, H]
  query_start_loc int32 [R + 1], seq_lens int32 [R], block_table int32 [R, pages a request]
  topk_indices int32 [>= T, >= topk], written in place (rows T.. untouched)
Every op checks shapes, dtypes, devices and strides and raises ValueError naming the argument and
the rule; nothing is copied. `layout` is "linear" (vLLM's CUDA cache, DeepGEMM), "mfma16", or
"aiter32" / "aiter16" (vLLM's ROCm MXFP4 cache)."""

from typing import Optional

import torch

from . import errors

# The overloads themselves: a call skips the packet's overload resolution.
_WRITE_K_CACHE = torch.ops.mxi.write_k_cache.default
_QUANTIZE_Q = torch.ops.mxi.quantize_q.default
_INDEXER = torch.ops.mxi.indexer.default
_CANDIDATE_INDEXER = torch.ops.mxi.candidate_indexer.default


def _word(error_word: Optional[torch.Tensor], like: torch.Tensor):
    if error_word is not None:
        return error_word, False
    return errors.new_error_word(like.device), True


def write_k_cache(k, slot_mapping, kv_cache, *, block_size=None, layout="linear", rule="ceil",
                  error_word=None):
    """Quantizes rows of k (float32 or bfloat16 [N, D]) into kv_cache at slot_mapping (int64
    [N], page * page_size + offset; -1 skips a row)."""
    word, own = _word(error_word, kv_cache)
    _WRITE_K_CACHE(k, slot_mapping, kv_cache, word, block_size=block_size,
                   layout=layout, rule=rule)
    if own:
        errors.check_now_or_on_device(word)


def quantize_q(q, q_values=None, q_scales=None, *, rule="ceil", scales_as_int32=False):
    """Quantizes q (float32 or bfloat16 [T, H, D] or [B, next_n, H, D]) into MXFP4 values and
    scales, into the given tensors or new ones (int32 scales, DeepGEMM's form, with
    scales_as_int32). Returns (q_values, q_scales)."""
    lead, d = tuple(q.shape[:-1]), q.shape[-1]
    if q_values is None:
        q_values = torch.empty(lead + (d // 2,), dtype=torch.uint8, device=q.device)
    if q_scales is None:
        q_scales = (torch.empty(lead, dtype=torch.int32, device=q.device) if scales_as_int32 else
                    torch.empty(lead + (d // 32,), dtype=torch.uint8, device=q.device))
    _QUANTIZE_Q(q, q_values, q_scales, rule=rule)
    return q_values, q_scales


def indexer(q_values, q_scales, weights, kv_cache, query_start_loc, seq_lens, block_table,
            topk_indices, *, topk, max_model_len, compress_ratio=1, block_size=None,
            layout="linear", cache_slots=False, score_order=False, logits=None,
            clean_logits=False, candidate_blocks=None, candidate_block_size=8, workspace=None,
            error_word=None):
    """Entry point A: the topk best visible positions of each query token into topk_indices
    (ascending positions, -1 padded; score_order: descending score; cache_slots: page * page_size
    + offset); logits and a published candidate pool optionally. Returns topk_indices."""
    word, own = _word(error_word, kv_cache)
    _INDEXER(q_values, q_scales, weights, kv_cache, query_start_loc, seq_lens,
             block_table, topk_indices, word, topk=topk, max_model_len=max_model_len,
             compress_ratio=compress_ratio, block_size=block_size, layout=layout,
             cache_slots=cache_slots, score_order=score_order, logits=logits,
             clean_logits=clean_logits, candidate_blocks=candidate_blocks,
             candidate_block_size=candidate_block_size, workspace=workspace)
    if own:
        errors.check_now_or_on_device(word)
    return topk_indices


def candidate_indexer(q_values, q_scales, weights, kv_cache, query_start_loc, seq_lens,
                      block_table, candidate_blocks, topk_indices, *, topk, max_model_len,
                      candidate_block_size, compress_ratio=1, block_size=None, layout="linear",
                      cache_slots=False, score_order=False, workspace=None, error_word=None):
    """Entry point B: the topk best positions among each token's candidate blocks (int32
    [>= T, NCB] block ids of candidate_block_size positions). Returns topk_indices."""
    word, own = _word(error_word, kv_cache)
    _CANDIDATE_INDEXER(q_values, q_scales, weights, kv_cache, query_start_loc,
                       seq_lens, block_table, candidate_blocks, topk_indices, word,
                       topk=topk, max_model_len=max_model_len,
                       candidate_block_size=candidate_block_size,
                       compress_ratio=compress_ratio, block_size=block_size,
                       layout=layout, cache_slots=cache_slots,
                       score_order=score_order, workspace=workspace)
    if own:
        errors.check_now_or_on_device(word)
    return topk_indices
