#include "workspace_op.hpp"

#include "op_bodies.hpp"

namespace mxi_torch {
namespace {

mxi::backend backend_of(const at::Tensor& kv_cache) {
  return kv_cache.device().is_cpu() ? mxi::backend::cpu : mxi::backend::gpu;
}

template <class Args>
int64_t bytes_of(const Args& a, const at::Tensor& kv_cache) {
  size_t bytes = 0;
  throw_if_failed(mxi::workspace_bytes(a, backend_of(kv_cache), bytes));
  return static_cast<int64_t>(bytes);
}

}  // namespace

int64_t indexer_workspace_bytes(const at::Tensor& q_values, const at::Tensor& q_scales,
                                const at::Tensor& weights, const at::Tensor& kv_cache,
                                const at::Tensor& query_start_loc, const at::Tensor& seq_lens,
                                const at::Tensor& block_table, const at::Tensor& topk_indices,
                                const at::Tensor& error_word, int64_t topk, int64_t max_model_len,
                                int64_t compress_ratio, c10::optional<int64_t> block_size,
                                const std::string& layout, bool cache_slots, bool score_order,
                                const c10::optional<at::Tensor>& logits, bool clean_logits,
                                const c10::optional<at::Tensor>& candidate_blocks,
                                int64_t candidate_block_size) {
  const indexer_tensors t{q_values,    q_scales,       weights,       kv_cache,   query_start_loc,
                          seq_lens,    block_table,    topk_indices,  error_word, block_size,
                          layout,      compress_ratio, max_model_len, topk,       cache_slots,
                          score_order};
  return bytes_of(indexer_args_of(t, logits, clean_logits, candidate_blocks, candidate_block_size,
                                  pointers::placeholder),
                  kv_cache);
}

int64_t candidate_indexer_workspace_bytes(
    const at::Tensor& q_values, const at::Tensor& q_scales, const at::Tensor& weights,
    const at::Tensor& kv_cache, const at::Tensor& query_start_loc, const at::Tensor& seq_lens,
    const at::Tensor& block_table, const at::Tensor& candidate_blocks, const at::Tensor& topk_indices,
    const at::Tensor& error_word, int64_t topk, int64_t max_model_len, int64_t candidate_block_size,
    int64_t compress_ratio, c10::optional<int64_t> block_size, const std::string& layout,
    bool cache_slots, bool score_order) {
  const indexer_tensors t{q_values,    q_scales,       weights,       kv_cache,   query_start_loc,
                          seq_lens,    block_table,    topk_indices,  error_word, block_size,
                          layout,      compress_ratio, max_model_len, topk,       cache_slots,
                          score_order};
  return bytes_of(
      candidate_indexer_args_of(t, candidate_blocks, candidate_block_size, pointers::placeholder),
      kv_cache);
}

}  // namespace mxi_torch
