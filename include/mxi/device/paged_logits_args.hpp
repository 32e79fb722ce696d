// The logits kernels' arguments (device/paged_logits.hpp, device/logits_plan.hpp).
#pragma once

#include <cstdint>

#include "mxi/device/row_info.hpp"
#include "mxi/types.hpp"

namespace mxi::device {

/// Everything the logits kernels read and write (device pointers).
struct paged_logits_args {
  const uint8_t* q_values = nullptr;  ///< [T][H][D/2]
  const uint8_t* q_scales = nullptr;  ///< [T][H][D/32]
  const float* weights = nullptr;     ///< [T][H]
  int num_heads = 64;                 ///< H: 16..128, a multiple of 16
  const uint8_t* cache = nullptr;
  int64_t num_pages = 0;  ///< NB: the dense kernels' page reads stay in [0, NB) (0: unchecked)
  int64_t page_stride = 0;
  int block_size = 64;  ///< BS (D = 128)
  cache_layout layout = cache_layout::linear;
  const int32_t* block_table = nullptr;
  int64_t block_table_stride = 0;
  const int32_t* query_start_loc = nullptr;  ///< [R + 1]
  const int32_t* seq_lens = nullptr;         ///< [R]: the plan's row lengths
  int compress_ratio = 1;
  /// The kernel the launch follows on its stream neither writes what the plan reads
  /// (query_start_loc, seq_lens) nor touches the plan's part of the workspace, so the plan may
  /// overlap it (launch_plan). The GPU backend sets it after row_info and after candidate
  /// prep; leave it false otherwise.
  bool plan_overlaps_prior = false;
  int num_requests = 0;
  const row_info* rows = nullptr;  ///< [T] from launch_row_info
  int64_t row_begin = 0, row_end = 0;
  float* out = nullptr;
  int64_t ld = 0;      ///< row stride of out, in floats
  int64_t width = 0;   ///< dense + clean: columns of out to fill
  bool clean = false;  ///< dense: -inf on [visible, width); invalid rows get -inf throughout
  // Candidate mode when candidate_ids is set: [T][candidate_stride] ids, candidate_counts[T].
  const int32_t* candidate_ids = nullptr;
  int64_t candidate_stride = 0;
  const int32_t* candidate_counts = nullptr;
  int candidate_block_size = 8;
  /// sm90 candidate mode: each column's page id and token as launch_candidate_prep writes them
  /// (candidate_slot_sink: int32 pairs, [row - row_begin][candidate_stride x
  /// candidate_block_size]); null: the launch resolves them itself, in a kernel before the logits.
  const int32_t* candidate_slots = nullptr;
};

}  // namespace mxi::device
