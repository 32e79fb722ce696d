// The candidate pool of the two-level indexer (docs/semantics.md, entry point B and publishing).
//   publish: a block's key is the max key over its visible positions (NaN lowest), the block
//            holding position visible-1 counts as +inf; the NCB live blocks with the largest keys
//            (ties to the smaller id) are written ascending, -1 after. The block keys go through
//            the same exact select as the top-k (device/topk.hpp).
//   prep:    for entry point B, a caller's pool row becomes its live blocks, ascending and unique
//            (-1, negative ids, repeats and blocks past the visible range dropped), -1 after, plus
//            their count: what paged_logits' candidate mode reads. Since only the newest block
//            can be partial, the valid columns of a compact candidate row [block slot][cbs] are
//            one prefix (candidate_columns in select_rows.hpp), and column order is position
//            order: the top-k runs on it unchanged.
#pragma once

#include <cstdint>
#include <type_traits>

#include "mxi/block/block_radix_sort.hpp"
#include "mxi/block/block_scan.hpp"
#include "mxi/block/radix_key.hpp"
#include "mxi/platform/launch.hpp"
#include "mxi/platform/runtime.hpp"

namespace mxi::device {

inline constexpr int candidate_max_blocks = 4096;  ///< NCB the prep kernel sorts in one block

namespace detail {

/// keys[row][j] for the live blocks j < ceil(visible / cbs) of each row.
template <int Threads, class Keys, class Visible>
__global__ __launch_bounds__(Threads) void candidate_block_keys_kernel(Keys keys, Visible visible,
                                                                      int cbs, uint32_t* out,
                                                                      int64_t out_stride) {
  const int64_t row = blockIdx.x;
  const int64_t v = visible(row);
  const int64_t j = static_cast<int64_t>(blockIdx.y) * Threads + threadIdx.x;
  if (v <= 0 || j >= (v + cbs - 1) / cbs) return;
  const int64_t lo = j * cbs;
  const int64_t hi = lo + cbs < v ? lo + cbs : v;
  uint32_t best = 0;
  for (int64_t p = lo; p < hi; ++p) {
    const uint32_t key = keys(row, p);
    best = key > best ? key : best;
  }
  out[row * out_stride + j] = hi == v ? block::key_positive_infinity : best;
}

/// One block per row: sort, dedupe and compact the row's live ids; `counts[row]` gets how many.
/// Live ids are below 2^id_bits - 1, which stands for "none" and sorts after them: the sort
/// looks at id_bits bits only.
template <int Threads, int Items, class Visible>
__global__ __launch_bounds__(Threads) void candidate_prep_kernel(
    const int32_t* ids, int64_t ids_stride, int num_blocks, int cbs, Visible visible, int id_bits,
    int32_t* prepared, int64_t prepared_stride, int32_t* counts) {
  using sort = block::block_radix_sort<uint32_t, Threads, Items>;
  using scan = block::block_scan<uint32_t, Threads>;
  platform::wait_for_prior_grid();  // launched chained
  platform::allow_next_grid();
  const uint32_t none = (1u << id_bits) - 1;
  __shared__ union {  // the sorted ids replace the sort's storage once it is done
    typename sort::storage_type sort;
    uint32_t sorted[Threads * Items];
  } shared;
  __shared__ typename scan::storage_type scan_storage;
  uint32_t* sorted = shared.sorted;

  const int64_t row = blockIdx.x;
  const int64_t v = visible(row);
  uint32_t id[Items];
#pragma unroll
  for (int j = 0; j < Items; ++j) {
    const int i = static_cast<int>(threadIdx.x) * Items + j;
    const int64_t b = i < num_blocks ? ids[row * ids_stride + i] : -1;
    id[j] = b >= 0 && b * cbs < v && b < none ? static_cast<uint32_t>(b) : none;
  }
  sort::sort(id, shared.sort, 0, id_bits);
  __syncthreads();
#pragma unroll
  for (int j = 0; j < Items; ++j) sorted[threadIdx.x * Items + j] = id[j];
  __syncthreads();

  uint32_t keep = 0;
#pragma unroll
  for (int j = 0; j < Items; ++j) {
    const int i = static_cast<int>(threadIdx.x) * Items + j;
    keep += id[j] != none && (i == 0 || sorted[i - 1] != id[j]);
  }
  uint32_t slot, count;
  scan::exclusive_sum(keep, slot, count, scan_storage);
  int32_t* out = prepared + row * prepared_stride;
#pragma unroll
  for (int j = 0; j < Items; ++j) {
    const int i = static_cast<int>(threadIdx.x) * Items + j;
    if (id[j] == none || (i != 0 && sorted[i - 1] == id[j])) continue;
    out[slot++] = static_cast<int32_t>(id[j]);
  }
  for (int i = static_cast<int>(count) + threadIdx.x; i < num_blocks; i += Threads) out[i] = -1;
  if (threadIdx.x == 0) counts[row] = static_cast<int32_t>(count);
}

template <int Threads, class Visible>
platform::error_t launch_prep(const int32_t* ids, int64_t ids_stride, int64_t rows, int num_blocks,
                              int cbs, Visible visible, int id_bits, int32_t* prepared,
                              int64_t prepared_stride, int32_t* counts, platform::stream_t stream) {
  return platform::launch(&candidate_prep_kernel<Threads, 4, Visible>,
                          {dim3(static_cast<unsigned>(rows)), Threads, 0, 1, /*chained=*/true},
                          stream, ids, ids_stride, num_blocks, cbs, visible, id_bits, prepared,
                          prepared_stride, counts);
}

/// Calls f(std::integral_constant<int, T>{}) with the fewest threads T, a power of two from 128
/// to 1024, whose four ids each hold a row of num_blocks (<= candidate_max_blocks) ids.
template <int Threads = 128, class F>
platform::error_t with_prep_threads(int num_blocks, F&& f) {
  if constexpr (Threads < 1024) {
    if (num_blocks > 4 * Threads) return with_prep_threads<2 * Threads>(num_blocks, f);
  }
  return f(std::integral_constant<int, Threads>{});
}

}  // namespace detail

/// Live blocks of a row of `visible` positions.
MXI_HOST_DEVICE int64_t candidate_live_blocks(int64_t visible, int cbs) {
  return visible <= 0 ? 0 : (visible + cbs - 1) / cbs;
}

/// Row lengths for the block select: live blocks, -1 for a broken row.
template <class Visible>
struct live_block_lengths {
  Visible visible;
  int cbs;
  MXI_DEVICE int64_t operator()(int64_t row) const {
    const int64_t v = visible(row);
    return v < 0 ? -1 : candidate_live_blocks(v, cbs);
  }
};

/// Block keys of `rows` rows into keys[row][0, live blocks); `width` bounds the live blocks.
template <class Keys, class Visible>
platform::error_t launch_candidate_block_keys(int64_t rows, int64_t width, Keys keys,
                                              Visible visible, int cbs, uint32_t* out,
                                              int64_t out_stride, platform::stream_t stream) {
  constexpr int threads = 256;
  if (rows == 0 || width == 0) return platform::success;
  const dim3 grid(static_cast<unsigned>(rows), static_cast<unsigned>((width + threads - 1) / threads));
  detail::candidate_block_keys_kernel<threads><<<grid, threads, 0, stream>>>(keys, visible, cbs, out,
                                                                            out_stride);
  return platform::last_error();
}

/// Prepares `rows` pool rows of `num_blocks` ids (<= candidate_max_blocks) into `prepared`
/// ([rows][prepared_stride], ascending, -1 after) and `counts` ([rows]). Every row's visible
/// length is at most `max_visible` (the call's max_model_len), so no live id reaches
/// ceil(max_visible / cbs), and the sort needs only the bits below it.
template <class Visible>
platform::error_t launch_candidate_prep(const int32_t* ids, int64_t ids_stride, int64_t rows,
                                        int num_blocks, int cbs, Visible visible,
                                        int64_t max_visible, int32_t* prepared,
                                        int64_t prepared_stride, int32_t* counts,
                                        platform::stream_t stream) {
  if (rows == 0) return platform::success;
  const int64_t limit = candidate_live_blocks(max_visible, cbs);  // live ids < limit <= none
  int id_bits = 1;
  while (id_bits < 31 && (int64_t{1} << id_bits) <= limit) ++id_bits;
  return detail::with_prep_threads(num_blocks, [&](auto threads) {
    return detail::launch_prep<decltype(threads)::value>(ids, ids_stride, rows, num_blocks, cbs,
                                                         visible, id_bits, prepared,
                                                         prepared_stride, counts, stream);
  });
}

}  // namespace mxi::device
