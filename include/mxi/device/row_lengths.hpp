// The lengths of the indexer's score rows as the select sees them (device/topk.hpp): from row_info
// (dense) or from a prepared candidate list. Rows are counted from the first row of a chunk: the
// pointers here are already offset to it.
#pragma once

#include <cstdint>

#include "mxi/config.hpp"
#include "mxi/device/row_info.hpp"

namespace mxi::device {

/// Dense rows: the visible length (-1: broken row).
struct visible_lengths {
  const row_info* rows;
  MXI_DEVICE int64_t operator()(int64_t row) const { return rows[row].visible; }
};

/// Valid columns of a prepared candidate row (ids ascending, unique, live; `count` of them): a
/// prefix of the compact row, since only the newest block can be partly visible. Device and host.
MXI_HOST_DEVICE int64_t candidate_columns(const int32_t* ids, int count, int cbs, int64_t visible) {
  if (count <= 0 || visible <= 0) return 0;
  const int64_t tail = visible - static_cast<int64_t>(ids[count - 1]) * cbs;
  return static_cast<int64_t>(count - 1) * cbs + (tail < 0 ? 0 : (tail > cbs ? cbs : tail));
}

/// Candidate rows: the valid columns of the prepared list; -1 for a broken row.
struct candidate_lengths {
  const row_info* rows;
  const int32_t* ids;  ///< prepared: ascending, unique, live, -1 after counts[row]
  int64_t stride;
  const int32_t* counts;
  int cbs;
  MXI_DEVICE int64_t operator()(int64_t row) const {
    const int64_t visible = rows[row].visible;
    return visible < 0 ? -1 : candidate_columns(ids + row * stride, counts[row], cbs, visible);
  }
};

}  // namespace mxi::device
