"""The two calls vLLM's ROCm MXFP4 indexer layers make, with mxi behind them.

Same positional arguments as the engine's functions; the batch metadata, which the engine reads
from its forward context, comes as keyword tensors: block_table int32 [R, pages a request],
seq_lens int32 [R] (tokens so far, uncompressed), query_start_loc int32 [R + 1]. max_model_len
counts compressed positions. topk_indices_buffer is written in place (its first T rows, T the
query tokens) and returned, as the engine expects."""

import torch

from . import ops


def _check_int(name, value, low=1):
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}")


def _check_call(hidden_states, q_values, head_dim, topk_tokens, max_model_len):
    if not isinstance(q_values, torch.Tensor) or q_values.dim() not in (3, 4):
        raise ValueError("q_values must be a tensor [T, H, head_dim/2] or [B, next_n, H, "
                         f"head_dim/2], got {getattr(q_values, 'shape', type(q_values))}")
    _check_int("head_dim", head_dim, 32)
    if 2 * q_values.shape[-1] != head_dim:
        raise ValueError(f"q_values.shape[-1] must be head_dim/2 = {head_dim // 2} (two E2M1 "
                         f"codes a byte), got {q_values.shape[-1]}")
    _check_int("topk_tokens", topk_tokens)
    _check_int("max_model_len", max_model_len)
    tokens = q_values.shape[0] * (q_values.shape[1] if q_values.dim() == 4 else 1)
    if hidden_states is not None and hidden_states.shape[0] != tokens:
        raise ValueError(f"hidden_states.shape[0] must be the query tokens T = {tokens}, got "
                         f"{hidden_states.shape[0]}")


def rocm_mxfp4_sparse_attn_indexer(hidden_states, k_cache_prefix, kv_cache, q_values, q_scale,
                                   weights, topk_tokens, head_dim, max_model_len,
                                   topk_indices_buffer, compress_ratio=1, candidate_blocks=None,
                                   candidate_block_size=8, candidate_write=False, *, block_table,
                                   seq_lens, query_start_loc, block_size=None, layout="linear",
                                   error_word=None, workspace=None):
    """Entry point A over the K cache the model wrote: the topk_tokens best positions of every
    query token; with candidate_write, also publishes each token's candidate pool into
    candidate_blocks (int32 [>= T, NCB]; blocks of candidate_block_size positions).

    k_cache_prefix (the engine's layer name) is not needed: the cache and the metadata are given.
    Pass error_word (int32 [1], zeroed) to collect bad-metadata bits without a synchronisation;
    without it the call checks (errors.check_now_or_on_device)."""
    _check_call(hidden_states, q_values, head_dim, topk_tokens, max_model_len)
    _check_int("compress_ratio", compress_ratio)
    if candidate_write and candidate_blocks is None:
        raise ValueError("candidate_write needs candidate_blocks, the int32 [T, NCB] pool to write")
    return ops.indexer(q_values, q_scale, weights, kv_cache, query_start_loc, seq_lens,
                       block_table, topk_indices_buffer, topk=topk_tokens,
                       max_model_len=max_model_len, compress_ratio=compress_ratio,
                       block_size=block_size, layout=layout,
                       candidate_blocks=candidate_blocks if candidate_write else None,
                       candidate_block_size=candidate_block_size, workspace=workspace,
                       error_word=error_word)


def rocm_mxfp4_sparse_mqa_indexer(hidden_states, k_cache_prefix, kv_cache, q_values, q_scale,
                                  weights, topk_tokens, head_dim, max_model_len,
                                  topk_indices_buffer, compress_ratio, candidate_blocks,
                                  candidate_block_size, num_candidate_cols, *, block_table,
                                  seq_lens, query_start_loc, block_size=None, layout="linear",
                                  error_word=None, workspace=None):
    """Entry point B: the topk_tokens best positions among the candidate blocks a source layer
    published (candidate_blocks int32 [>= T, NCB]); only those positions' bytes are read.
    num_candidate_cols is NCB * candidate_block_size, as the engine sizes it."""
    _check_call(hidden_states, q_values, head_dim, topk_tokens, max_model_len)
    _check_int("compress_ratio", compress_ratio)
    _check_int("candidate_block_size", candidate_block_size)
    if not isinstance(candidate_blocks, torch.Tensor) or candidate_blocks.dim() != 2:
        raise ValueError("candidate_blocks must be an int32 tensor [T, NCB], got "
                         f"{getattr(candidate_blocks, 'shape', type(candidate_blocks))}")
    if num_candidate_cols != candidate_blocks.shape[1] * candidate_block_size:
        raise ValueError("num_candidate_cols must be candidate_blocks.shape[1] * "
                         f"candidate_block_size = {candidate_blocks.shape[1] * candidate_block_size}"
                         f", got {num_candidate_cols}")
    return ops.candidate_indexer(q_values, q_scale, weights, kv_cache, query_start_loc, seq_lens,
                                 block_table, candidate_blocks, topk_indices_buffer,
                                 topk=topk_tokens, max_model_len=max_model_len,
                                 candidate_block_size=candidate_block_size,
                                 compress_ratio=compress_ratio, block_size=block_size,
                                 layout=layout, workspace=workspace, error_word=error_word)
