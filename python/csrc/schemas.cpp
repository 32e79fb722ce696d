// The ops' schemas (torch.ops.mxi.*). Outputs are caller buffers marked mutable (Tensor(a!)) and
// the ops return nothing, as vLLM's kernels do, so an engine keeps every buffer across steps and
// CUDA graphs stay valid. Kernels: cpu_ops.cpp (CPU and Meta), cuda_ops.cpp (CUDA).
#include <torch/library.h>

#include <string>

#include "mxi/mxi.hpp"

#include "workspace_op.hpp"

namespace {

std::string describe_device_errors(int64_t word) {
  return mxi::describe_device_errors(static_cast<uint32_t>(word));
}

}  // namespace

TORCH_LIBRARY(mxi, m) {
  m.def(
      "indexer(Tensor q_values, Tensor q_scales, Tensor weights, Tensor kv_cache, "
      "Tensor query_start_loc, Tensor seq_lens, Tensor block_table, Tensor(a!) topk_indices, "
      "Tensor(b!) error_word, *, int topk, int max_model_len, int compress_ratio=1, "
      "int? block_size=None, str layout=\"linear\", bool cache_slots=False, bool score_order=False, "
      "Tensor(c!)? logits=None, bool clean_logits=False, Tensor(d!)? candidate_blocks=None, "
      "int candidate_block_size=8, Tensor(e!)? workspace=None) -> ()");
  m.def(
      "candidate_indexer(Tensor q_values, Tensor q_scales, Tensor weights, Tensor kv_cache, "
      "Tensor query_start_loc, Tensor seq_lens, Tensor block_table, Tensor candidate_blocks, "
      "Tensor(a!) topk_indices, Tensor(b!) error_word, *, int topk, int max_model_len, "
      "int candidate_block_size, int compress_ratio=1, int? block_size=None, "
      "str layout=\"linear\", bool cache_slots=False, bool score_order=False, "
      "Tensor(c!)? workspace=None) -> ()");
  m.def(
      "write_k_cache(Tensor k, Tensor slot_mapping, Tensor(a!) kv_cache, Tensor(b!) error_word, *, "
      "int? block_size=None, str layout=\"linear\", str rule=\"ceil\") -> ()");
  m.def("quantize_q(Tensor q, Tensor(a!) q_values, Tensor(b!) q_scales, *, str rule=\"ceil\") -> ()");
  // Bytes of workspace an indexer call needs where its tensors live (0 on the CPU), from shapes
  // alone; for callers that pass `workspace` themselves.
  m.def(
      "indexer_workspace_bytes(Tensor q_values, Tensor q_scales, Tensor weights, Tensor kv_cache, "
      "Tensor query_start_loc, Tensor seq_lens, Tensor block_table, Tensor topk_indices, "
      "Tensor error_word, *, int topk, int max_model_len, int compress_ratio=1, "
      "int? block_size=None, str layout=\"linear\", bool cache_slots=False, bool score_order=False, "
      "Tensor? logits=None, bool clean_logits=False, Tensor? candidate_blocks=None, "
      "int candidate_block_size=8) -> int",
      &mxi_torch::indexer_workspace_bytes);
  m.def(
      "candidate_indexer_workspace_bytes(Tensor q_values, Tensor q_scales, Tensor weights, "
      "Tensor kv_cache, Tensor query_start_loc, Tensor seq_lens, Tensor block_table, "
      "Tensor candidate_blocks, Tensor topk_indices, Tensor error_word, *, int topk, "
      "int max_model_len, int candidate_block_size, int compress_ratio=1, int? block_size=None, "
      "str layout=\"linear\", bool cache_slots=False, bool score_order=False) -> int",
      &mxi_torch::candidate_indexer_workspace_bytes);
  // The bits of an error word in words ("" for none).
  m.def("describe_device_errors(int word) -> str", &describe_device_errors);
}

// The ops have no gradient on any device: their autograd keys fall through to the kernels. Left
// to torch 2's own autograd fallback, every call would box each argument to look for gradients.
TORCH_LIBRARY_IMPL(mxi, Autograd, m) {
  for (const char* op : {"indexer", "candidate_indexer", "write_k_cache", "quantize_q"})
    m.impl(op, torch::CppFunction::makeFallthrough());
}
