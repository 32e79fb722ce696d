// The CPU kernels (mxi's threaded backend, torch's thread count) and the Meta kernels, which run
// every check the real ones do on shapes, dtypes and strides, then return: the ops write only
// caller buffers, so a fake call has nothing to produce (torch.compile traces through them).
#include <ATen/Parallel.h>
#include <torch/library.h>

#include "op_bodies.hpp"

namespace mxi_torch {
namespace {

struct cpu_device {
  explicit cpu_device(const at::Tensor&) {}
  mxi::execution execution() const {
    mxi::execution e;
    e.where = mxi::backend::cpu;
    e.num_threads = at::get_num_threads();
    return e;
  }
};

void indexer_meta(const at::Tensor& q_values, const at::Tensor& q_scales, const at::Tensor& weights,
                  const at::Tensor& kv_cache, const at::Tensor& query_start_loc,
                  const at::Tensor& seq_lens, const at::Tensor& block_table,
                  const at::Tensor& topk_indices, const at::Tensor& error_word, int64_t topk,
                  int64_t max_model_len, int64_t compress_ratio, c10::optional<int64_t> block_size,
                  const std::string& layout, bool cache_slots, bool score_order,
                  const c10::optional<at::Tensor>& logits, bool clean_logits,
                  const c10::optional<at::Tensor>& candidate_blocks, int64_t candidate_block_size,
                  const c10::optional<at::Tensor>&) {
  const indexer_tensors t{q_values,    q_scales,       weights,       kv_cache,   query_start_loc,
                          seq_lens,    block_table,    topk_indices,  error_word, block_size,
                          layout,      compress_ratio, max_model_len, topk,       cache_slots,
                          score_order};
  size_t bytes = 0;
  throw_if_failed(mxi::workspace_bytes(
      indexer_args_of(t, logits, clean_logits, candidate_blocks, candidate_block_size,
                      pointers::placeholder),
      mxi::backend::cpu, bytes));
}

void candidate_indexer_meta(const at::Tensor& q_values, const at::Tensor& q_scales,
                            const at::Tensor& weights, const at::Tensor& kv_cache,
                            const at::Tensor& query_start_loc, const at::Tensor& seq_lens,
                            const at::Tensor& block_table, const at::Tensor& candidate_blocks,
                            const at::Tensor& topk_indices, const at::Tensor& error_word,
                            int64_t topk, int64_t max_model_len, int64_t candidate_block_size,
                            int64_t compress_ratio, c10::optional<int64_t> block_size,
                            const std::string& layout, bool cache_slots, bool score_order,
                            const c10::optional<at::Tensor>&) {
  const indexer_tensors t{q_values,    q_scales,       weights,       kv_cache,   query_start_loc,
                          seq_lens,    block_table,    topk_indices,  error_word, block_size,
                          layout,      compress_ratio, max_model_len, topk,       cache_slots,
                          score_order};
  size_t bytes = 0;
  throw_if_failed(mxi::workspace_bytes(
      candidate_indexer_args_of(t, candidate_blocks, candidate_block_size, pointers::placeholder),
      mxi::backend::cpu, bytes));
}

// The writer's and quantizer's own rules run through an empty call (no rows: nothing is read or
// written), as mxi-run's cache check does.
void write_k_cache_meta(const at::Tensor& k, const at::Tensor& slot_mapping, const at::Tensor& kv_cache,
                        const at::Tensor& error_word, c10::optional<int64_t> block_size,
                        const std::string& layout, const std::string& rule) {
  mxi::k_cache_write_args a = k_cache_write_args_of(k, slot_mapping, kv_cache, error_word, block_size,
                                                    layout, rule, pointers::placeholder);
  a.num_tokens = 0;
  throw_if_failed(mxi::write_k_cache(a, mxi::execution{}));
}

void quantize_q_meta(const at::Tensor& q, const at::Tensor& q_values, const at::Tensor& q_scales,
                     const std::string& rule) {
  mxi::q_quantize_args a = q_quantize_args_of(q, q_values, q_scales, rule, pointers::placeholder);
  a.num_tokens = 0;
  throw_if_failed(mxi::quantize_q(a, mxi::execution{}));
}

}  // namespace
}  // namespace mxi_torch

TORCH_LIBRARY_IMPL(mxi, CPU, m) {
  using mxi_torch::cpu_device;
  m.impl("indexer", &mxi_torch::indexer_op<cpu_device>);
  m.impl("candidate_indexer", &mxi_torch::candidate_indexer_op<cpu_device>);
  m.impl("write_k_cache", &mxi_torch::write_k_cache_op<cpu_device>);
  m.impl("quantize_q", &mxi_torch::quantize_q_op<cpu_device>);
}

TORCH_LIBRARY_IMPL(mxi, Meta, m) {
  m.impl("indexer", &mxi_torch::indexer_meta);
  m.impl("candidate_indexer", &mxi_torch::candidate_indexer_meta);
  m.impl("write_k_cache", &mxi_torch::write_k_cache_meta);
  m.impl("quantize_q", &mxi_torch::quantize_q_meta);
}
