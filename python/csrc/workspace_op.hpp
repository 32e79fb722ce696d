// Workspace sizes of the two indexer entry points for the tensors given (shapes only: no data is
// read, so the answer holds for any metadata of the same shapes).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Optional.h>
#include <string>

namespace mxi_torch {

int64_t indexer_workspace_bytes(const at::Tensor& q_values, const at::Tensor& q_scales,
                                const at::Tensor& weights, const at::Tensor& kv_cache,
                                const at::Tensor& query_start_loc, const at::Tensor& seq_lens,
                                const at::Tensor& block_table, const at::Tensor& topk_indices,
                                const at::Tensor& error_word, int64_t topk, int64_t max_model_len,
                                int64_t compress_ratio, c10::optional<int64_t> block_size,
                                const std::string& layout, bool cache_slots, bool score_order,
                                const c10::optional<at::Tensor>& logits, bool clean_logits,
                                const c10::optional<at::Tensor>& candidate_blocks,
                                int64_t candidate_block_size);

int64_t candidate_indexer_workspace_bytes(
    const at::Tensor& q_values, const at::Tensor& q_scales, const at::Tensor& weights,
    const at::Tensor& kv_cache, const at::Tensor& query_start_loc, const at::Tensor& seq_lens,
    const at::Tensor& block_table, const at::Tensor& candidate_blocks, const at::Tensor& topk_indices,
    const at::Tensor& error_word, int64_t topk, int64_t max_model_len, int64_t candidate_block_size,
    int64_t compress_ratio, c10::optional<int64_t> block_size, const std::string& layout,
    bool cache_slots, bool score_order);

}  // namespace mxi_torch
