// The one-block select (device/topk.hpp picks it when a row fits in shared memory): one block of
// Threads threads per row runs block::block_topk (block/block_topk.hpp) in one launch, with no
// workspace and no grid-wide dependency. The row is read once from global memory into keys in
// shared memory; the block writes the winners through `map`, then -1 up to k.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mxi/block/block_topk.hpp"

namespace mxi::device::detail {

/// Dynamic shared memory of one block, carved in order: the block_topk storage; the row's keys as
/// 16-byte vectors (the score sort reuses them); the staged winners (score order). SortItems: 0
/// for position order, else the winners a thread sorts.
template <int Threads, int SortItems>
struct row_select_smem {
  using topk = block::block_topk<Threads, SortItems>;

  MXI_HOST_DEVICE static constexpr size_t head_bytes() {
    return align_up(sizeof(typename topk::storage_type), 16);
  }
  MXI_HOST_DEVICE static constexpr size_t body_bytes(int64_t width) {
    const size_t tile = static_cast<size_t>(topk::row_vectors(width)) * 16;
    const size_t sort_bytes = SortItems == 0 ? 0 : sizeof(typename topk::sort_storage_type);
    return align_up(tile > sort_bytes ? tile : sort_bytes, 16);
  }
  MXI_HOST_DEVICE static constexpr size_t bytes(int64_t width, int k) {
    return head_bytes() + body_bytes(width) + (SortItems == 0 ? 0 : static_cast<size_t>(k) * 8);
  }
  /// The widest row that fits `limit` bytes (0 if none).
  static int64_t max_width(size_t limit, int k) {
    const size_t fixed = head_bytes() + (SortItems == 0 ? 0 : static_cast<size_t>(k) * 8);
    if (limit <= fixed) return 0;
    int64_t vectors = static_cast<int64_t>((limit - fixed) / 16);
    if (vectors > topk::max_vectors) vectors = topk::max_vectors;
    const int64_t width = 4 * vectors - 3;  // the largest width with row_vectors(width) == vectors
    return width > 0 && bytes(width, k) <= limit ? width : 0;
  }
};

/// One block per row of at most `width` columns (longer rows are left to the multi-block passes):
/// see the file comment.
template <int Threads, int SortItems, class Keys, class Lengths, class Map>
__global__ __launch_bounds__(Threads, 1) void row_select_kernel(Keys keys, Lengths lengths, int k,
                                                                int64_t width, Map map,
                                                                int32_t* out, int64_t out_stride) {
  using smem_t = row_select_smem<Threads, SortItems>;
  using topk = typename smem_t::topk;
  extern __shared__ __align__(16) unsigned char row_select_shared[];
  auto& storage = *reinterpret_cast<typename topk::storage_type*>(row_select_shared);
  uint4* tile = reinterpret_cast<uint4*>(row_select_shared + smem_t::head_bytes());

  const int64_t row = blockIdx.x;
  const int64_t length = lengths(row);
  if (length > width) return;  // a longer row: the multi-block passes select it
  int32_t* out_row = out + row * out_stride;
  if (length <= 0) {  // a broken or empty row: all -1
    for (int s = static_cast<int>(threadIdx.x); s < k; s += Threads) out_row[s] = -1;
    return;
  }
  const block::key_row keys_row = topk::load(
      keys.words(row), static_cast<int>(length), k, [](uint32_t w) { return Keys::key_of(w); },
      tile, storage);
  const auto emit = [&](int slot, int column) {
    out_row[slot] = column < 0 ? -1 : map(row, column);
  };
  if constexpr (SortItems == 0) {
    topk::select(keys_row, k, storage, emit);
  } else {
    auto* staged = reinterpret_cast<uint64_t*>(row_select_shared + smem_t::head_bytes() +
                                               smem_t::body_bytes(width));
    topk::select(keys_row, k, storage, staged,
                 *reinterpret_cast<typename topk::sort_storage_type*>(tile), emit);
  }
}

}  // namespace mxi::device::detail
