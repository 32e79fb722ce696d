// What a selected column of an indexer score row stands for (the top-k's maps, device/topk.hpp):
// a position of a compact candidate row, or a cache slot through the block table. Rows are
// counted from the first row of a chunk: the pointers here are already offset to it.
#pragma once

#include <cstdint>

#include "mxi/config.hpp"
#include "mxi/device/row_info.hpp"

namespace mxi::device {

/// Column of a compact candidate row -> position.
struct candidate_positions {
  const int32_t* ids;
  int64_t stride;
  int cbs;
  MXI_HOST_DEVICE int64_t position(int64_t row, int64_t column) const {
    return static_cast<int64_t>(ids[row * stride + column / cbs]) * cbs + column % cbs;
  }
  MXI_DEVICE int32_t operator()(int64_t row, int64_t column) const {
    return static_cast<int32_t>(position(row, column));
  }
};

/// Position -> cache slot: block_table[request][pos / BS] * BS + pos % BS. The ids were checked by
/// row_info for every page a computed row can see.
template <class Positions>
struct cache_slots {
  Positions positions;
  const row_info* rows;
  const int32_t* block_table;
  int64_t block_table_stride;
  int block_size;
  MXI_DEVICE int32_t operator()(int64_t row, int64_t column) const {
    const int64_t pos = positions(row, column);
    const int64_t page = block_table[rows[row].request * block_table_stride + pos / block_size];
    return static_cast<int32_t>(page * block_size + pos % block_size);
  }
};

}  // namespace mxi::device
