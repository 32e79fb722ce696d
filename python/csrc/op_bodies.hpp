// The ops' bodies, once for every device: `Device` says how a call runs where the tensors live
// (cpu_ops.cpp: the threaded CPU backend; cuda_ops.cpp: the GPU backend on the current stream) and
// where the GPU workspace comes from. Each body reads the tensors as mxi arguments
// (tensor_args.hpp), makes the call and turns a failed status into an exception. Device-data
// errors (a page id, a seq_len) are OR-ed into the caller's `error_word` tensor, read by nobody
// here: no op synchronises.
#pragma once

#include <ATen/Functions.h>
#include <ATen/core/Tensor.h>
#include <c10/util/Optional.h>

#include <string>

#include "tensor_args.hpp"

namespace mxi_torch {

/// The workspace an indexer call needs: none on the CPU; on the GPU the caller's tensor when given
/// (uint8, enough bytes, 256-byte aligned, on the device), else one from torch's caching allocator
/// (stream-ordered, so it may be freed as soon as the call is enqueued; a captured graph keeps it).
template <class Args>
void attach_workspace(const Args& a, const c10::optional<at::Tensor>& given, const at::Tensor& like,
                      mxi::execution& exec, at::Tensor& held) {
  if (exec.where != mxi::backend::gpu) return;  // the CPU backends take none
  size_t bytes = 0;
  throw_if_failed(mxi::workspace_bytes(a, exec.where, bytes));
  if (bytes == 0) return;
  if (given) {
    const at::Tensor& w = *given;
    TORCH_CHECK_VALUE(w.scalar_type() == at::kByte, "workspace must be uint8, got ", w.scalar_type());
    TORCH_CHECK_VALUE(w.device() == like.device(), "workspace must be on kv_cache's device (",
                      like.device(), "), got ", w.device());
    TORCH_CHECK_VALUE(w.is_contiguous(), "workspace must be contiguous");
    TORCH_CHECK_VALUE(static_cast<size_t>(w.numel()) >= bytes, "workspace must hold >= ", bytes,
                      " bytes for this call (mxi_torch.indexer_workspace_bytes), got ", w.numel());
    TORCH_CHECK_VALUE(reinterpret_cast<uintptr_t>(w.data_ptr()) % 256 == 0,
                      "workspace must be 256-byte aligned");
    exec.workspace = w.data_ptr();
  } else {
    held = at::empty({static_cast<int64_t>(bytes)}, like.options().dtype(at::kByte));
    exec.workspace = held.data_ptr();
  }
  exec.workspace_bytes = given ? static_cast<size_t>(given->numel()) : bytes;
}

template <class Device>
void indexer_op(const at::Tensor& q_values, const at::Tensor& q_scales, const at::Tensor& weights,
                const at::Tensor& kv_cache, const at::Tensor& query_start_loc,
                const at::Tensor& seq_lens, const at::Tensor& block_table,
                const at::Tensor& topk_indices, const at::Tensor& error_word, int64_t topk,
                int64_t max_model_len, int64_t compress_ratio, c10::optional<int64_t> block_size,
                const std::string& layout, bool cache_slots, bool score_order,
                const c10::optional<at::Tensor>& logits, bool clean_logits,
                const c10::optional<at::Tensor>& candidate_blocks, int64_t candidate_block_size,
                const c10::optional<at::Tensor>& workspace) {
  const indexer_tensors t{q_values,    q_scales,       weights,       kv_cache,   query_start_loc,
                          seq_lens,    block_table,    topk_indices,  error_word, block_size,
                          layout,      compress_ratio, max_model_len, topk,       cache_slots,
                          score_order};
  const mxi::indexer_args a =
      indexer_args_of(t, logits, clean_logits, candidate_blocks, candidate_block_size, pointers::real);
  Device device(kv_cache);
  mxi::execution exec = device.execution();
  exec.error_word = error_word_of(error_word, kv_cache, pointers::real);
  at::Tensor held;
  attach_workspace(a, workspace, kv_cache, exec, held);
  throw_if_failed(mxi::run_indexer(a, exec));
}

template <class Device>
void candidate_indexer_op(const at::Tensor& q_values, const at::Tensor& q_scales,
                          const at::Tensor& weights, const at::Tensor& kv_cache,
                          const at::Tensor& query_start_loc, const at::Tensor& seq_lens,
                          const at::Tensor& block_table, const at::Tensor& candidate_blocks,
                          const at::Tensor& topk_indices, const at::Tensor& error_word, int64_t topk,
                          int64_t max_model_len, int64_t candidate_block_size,
                          int64_t compress_ratio, c10::optional<int64_t> block_size,
                          const std::string& layout, bool cache_slots, bool score_order,
                          const c10::optional<at::Tensor>& workspace) {
  const indexer_tensors t{q_values,    q_scales,       weights,       kv_cache,   query_start_loc,
                          seq_lens,    block_table,    topk_indices,  error_word, block_size,
                          layout,      compress_ratio, max_model_len, topk,       cache_slots,
                          score_order};
  const mxi::candidate_indexer_args a =
      candidate_indexer_args_of(t, candidate_blocks, candidate_block_size, pointers::real);
  Device device(kv_cache);
  mxi::execution exec = device.execution();
  exec.error_word = error_word_of(error_word, kv_cache, pointers::real);
  at::Tensor held;
  attach_workspace(a, workspace, kv_cache, exec, held);
  throw_if_failed(mxi::run_candidate_indexer(a, exec));
}

template <class Device>
void write_k_cache_op(const at::Tensor& k, const at::Tensor& slot_mapping, const at::Tensor& kv_cache,
                      const at::Tensor& error_word, c10::optional<int64_t> block_size,
                      const std::string& layout, const std::string& rule) {
  const mxi::k_cache_write_args a = k_cache_write_args_of(
      k, slot_mapping, kv_cache, error_word, block_size, layout, rule, pointers::real);
  Device device(kv_cache);
  mxi::execution exec = device.execution();
  exec.error_word = error_word_of(error_word, kv_cache, pointers::real);
  throw_if_failed(mxi::write_k_cache(a, exec));
}

template <class Device>
void quantize_q_op(const at::Tensor& q, const at::Tensor& q_values, const at::Tensor& q_scales,
                   const std::string& rule) {
  const mxi::q_quantize_args a = q_quantize_args_of(q, q_values, q_scales, rule, pointers::real);
  Device device(q);
  throw_if_failed(mxi::quantize_q(a, device.execution()));
}

}  // namespace mxi_torch
