"""mxi's sparse-attention indexer over a paged MXFP4 K cache, as PyTorch custom ops.

torch.ops.mxi.{indexer, candidate_indexer, write_k_cache, quantize_q} write caller buffers and
return nothing (CPU, CUDA and Meta kernels: CUDA-graph capture and torch.compile work); the
functions below wrap them with defaults, and the layers are shaped like a serving engine's."""

from ._library import load as _load

_load()

from .engine import rocm_mxfp4_sparse_attn_indexer, rocm_mxfp4_sparse_mqa_indexer  # noqa: E402
from .errors import MxiDataError, describe, new_error_word, raise_on_error  # noqa: E402
from .layer import IndexerMetadata, KCache, SparseAttnIndexer, SparseMQAIndexer  # noqa: E402
from .ops import candidate_indexer, indexer, quantize_q, write_k_cache  # noqa: E402

LAYOUTS = ("linear", "mfma16", "aiter32", "aiter16")

__all__ = [
    "IndexerMetadata", "KCache", "LAYOUTS", "MxiDataError", "SparseAttnIndexer",
    "SparseMQAIndexer", "candidate_indexer", "describe", "indexer", "new_error_word",
    "quantize_q", "raise_on_error", "rocm_mxfp4_sparse_attn_indexer",
    "rocm_mxfp4_sparse_mqa_indexer", "write_k_cache",
]
