// Which key each column of a logits row scores (device/paged_logits.hpp): dense rows score the
// positions in order; candidate rows score the blocks of their prepared candidate list.
#pragma once

#include <cstdint>

#include "mxi/config.hpp"
#include "mxi/device/column_maps.hpp"
#include "mxi/device/row_lengths.hpp"
#include "mxi/platform/runtime.hpp"

namespace mxi::device::detail {

#if MXI_GPU_COMPILER

/// Keys a group's row scores: its visible length (dense) or valid candidate columns.
struct dense_keys {
  static constexpr bool candidate = false;
  MXI_DEVICE int64_t columns(int64_t, int64_t visible) const { return visible; }
  /// At least columns(t, visible) for a row of `visible` positions, without reading what the
  /// kernels before the plan write (the plan sizes its items by it).
  MXI_DEVICE int64_t column_bound(int64_t visible, int64_t table_keys) const {
    return min(visible, table_keys);
  }
  MXI_DEVICE int64_t position(int64_t, int64_t col) const { return col; }
};
struct candidate_keys {
  static constexpr bool candidate = true;
  candidate_positions positions;  ///< ids, stride, cbs
  const int32_t* counts;
  /// sm90: each column's page id and token (token -1 past the valid ones), row t at
  /// (t - row_begin) * slot_stride: from candidate prep, or candidate_slots_kernel.
  const int2* slots = nullptr;
  int64_t slot_stride = 0;
  MXI_DEVICE int64_t columns(int64_t t, int64_t visible) const {
    return candidate_columns(positions.ids + t * positions.stride, counts[t], positions.cbs,
                             visible);
  }
  /// The valid columns are a prefix of the NCB x cbs a row holds, and each is a visible position.
  MXI_DEVICE int64_t column_bound(int64_t visible, int64_t) const {
    return min(visible, positions.stride * positions.cbs);
  }
  MXI_DEVICE int64_t position(int64_t t, int64_t col) const { return positions.position(t, col); }
};

#endif  // MXI_GPU_COMPILER

}  // namespace mxi::device::detail
