// Tensors as engines hold them, read as mxi's argument structs: the paged cache as [pages,
// page_size, 1, 68], [pages, page_size, 68] or [pages, page bytes] uint8; queries as mxi's
// [T, H, D/2] + [T, H, D/32] or DeepGEMM's [B, next_n, H, D/2] + [B, next_n, H] int32 (four E8M0
// bytes); metadata as int32 vectors. Every rule is checked from shapes, dtypes, strides and
// devices alone, so the Meta kernels run the same checks as the real ones (with placeholder
// pointers: see `pointers`). A broken rule throws c10::ValueError (Python: ValueError) naming the
// argument and the rule. Nothing is copied: a tensor that would need a copy is refused.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Optional.h>

#include <cstdint>
#include <string>

#include "mxi/mxi.hpp"

namespace mxi_torch {

/// Whether the views get the tensors' data pointers (real kernels) or placeholders that pass
/// mxi's null and alignment checks without being read (Meta kernels, where data is absent).
enum class pointers { real, placeholder };

/// The indexer's tensors and options, as the ops receive them.
struct indexer_tensors {
  const at::Tensor& q_values;
  const at::Tensor& q_scales;
  const at::Tensor& weights;
  const at::Tensor& kv_cache;
  const at::Tensor& query_start_loc;
  const at::Tensor& seq_lens;
  const at::Tensor& block_table;
  const at::Tensor& topk_indices;
  const at::Tensor& error_word;
  c10::optional<int64_t> block_size;
  std::string layout;
  int64_t compress_ratio;
  int64_t max_model_len;
  int64_t topk;
  bool cache_slots;
  bool score_order;
};

/// Entry point A's arguments from its tensors; `logits` and `candidates` optional outputs.
mxi::indexer_args indexer_args_of(const indexer_tensors& t, const c10::optional<at::Tensor>& logits,
                                  bool clean_logits, const c10::optional<at::Tensor>& candidates,
                                  int64_t candidate_block_size, pointers p);

/// Entry point B's arguments: `candidates` int32 [>= T, NCB], the pool to score.
mxi::candidate_indexer_args candidate_indexer_args_of(const indexer_tensors& t,
                                                      const at::Tensor& candidates,
                                                      int64_t candidate_block_size, pointers p);

/// The K-cache writer's: k [N, D] (or [N, 1, D]) fp32 or bf16, slot_mapping int64 [N].
mxi::k_cache_write_args k_cache_write_args_of(const at::Tensor& k, const at::Tensor& slot_mapping,
                                              const at::Tensor& kv_cache, const at::Tensor& error_word,
                                              c10::optional<int64_t> block_size,
                                              const std::string& layout, const std::string& rule,
                                              pointers p);

/// The Q quantizer's: q [T, H, D] or [B, next_n, H, D] fp32 or bf16 into values and scales of
/// either query form.
mxi::q_quantize_args q_quantize_args_of(const at::Tensor& q, const at::Tensor& q_values,
                                        const at::Tensor& q_scales, const std::string& rule,
                                        pointers p);

/// The error word's address: int32, one element, on the cache's device.
uint32_t* error_word_of(const at::Tensor& error_word, const at::Tensor& like, pointers p);

/// Throws the exception a failed mxi::status calls for: ValueError for invalid_argument,
/// NotImplementedError for unsupported, RuntimeError otherwise ("mxi: " and its message).
void throw_if_failed(const mxi::status& s);

}  // namespace mxi_torch
