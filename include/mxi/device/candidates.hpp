// The candidate pool of the two-level indexer (docs/semantics.md, entry point B and publishing).
//   publish: a block's key is the max key over its visible positions (NaN lowest), the block
//            holding position visible-1 counts as +inf; the NCB live blocks with the largest keys
//            (ties to the smaller id) are written ascending, -1 after. The block keys go through
//            the same exact select as the top-k (device/topk.hpp).
//   prep:    for entry point B, a caller's pool row becomes its live blocks, ascending and unique
//            (-1, negative ids, repeats and blocks past the visible range dropped), -1 after, plus
//            their count: what paged_logits' candidate mode reads. Since only the newest block
//            can be partial, the valid columns of a compact candidate row [block slot][cbs] are
//            one prefix (candidate_columns in row_lengths.hpp), and column order is position
//            order: the top-k runs on it unchanged. A block a row (up to 8 in calls of few
//            rows, each doing the same): ids below 131072 go through a bitmap in shared memory
//            (a bit an id, then a scan of the words), others through a block radix sort; on sm90
//            each block then writes its share of the columns' pages and tokens.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "mxi/block/block_radix_sort.hpp"
#include "mxi/block/block_scan.hpp"
#include "mxi/block/radix_key.hpp"
#include "mxi/device/page_table.hpp"
#include "mxi/device/row_info.hpp"
#include "mxi/device/tuning.hpp"
#include "mxi/platform/dispatch.hpp"
#include "mxi/platform/divide.hpp"
#include "mxi/platform/intrinsics.hpp"
#include "mxi/platform/launch.hpp"
#include "mxi/platform/runtime.hpp"

namespace mxi::device {

/// NCB the prep kernel orders in one block: its widest block's ids (candidate_prep_config).
inline constexpr int candidate_max_blocks = 1024 * candidate_prep_config{}.items;

/// Where candidate prep also puts each column of a prepared row as a page id and a token (the
/// sm90 logits kernel's staging reads them: paged_logits_args::candidate_slots): row r's column c
/// at pairs[2 (r num_blocks cbs + c)], token -1 past the row's valid columns. Page ids are clamped
/// into [0, num_pages) (num_pages 0: only negative ones), so a row row_info rejects stages bytes
/// inside the cache too. Null pairs: not written.
struct candidate_slot_sink {
  int32_t* pairs = nullptr;
  const int32_t* block_table = nullptr;
  int64_t block_table_stride = 0;
  int block_size = 64;
  int64_t num_pages = 0;
};

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

/// What the prep kernel reads and writes (launch_candidate_prep), rows counted from the launch's
/// first.
struct candidate_prep_problem {
  const int32_t* ids;
  int64_t ids_stride;
  int num_blocks;
  int cbs;
  int id_bits;  ///< live ids are below 2^id_bits - 1
  int64_t max_visible;
  int32_t* prepared;
  int64_t prepared_stride;
  int32_t* counts;
  candidate_slot_sink slots;
  platform::divider by_cbs, by_block_size;
  bool overlap_prior;
  bool bitmap;  ///< every live id is below prep_bitmap_words x 32: dedupe through a bitmap
  int parts;    ///< blocks a row: each prepares the row alike and writes its share of the slots
};

/// Ids below this many words' bits are deduplicated and ordered through a bitmap in shared memory
/// (a bit set an id, then a scan of the words a row's length covers) instead of sorted
/// (candidate_prep_config::bitmap_words).
inline constexpr int prep_bitmap_words = candidate_prep_config{}.bitmap_words;

/// Block-wide: the slots of part `part` of the columns of row `row` (see candidate_slot_sink),
/// from its `count` kept ids in `kept`. Each thread resolves a batch of columns before it stores
/// any, so that their block-table loads are in flight together.
template <int Threads>
MXI_DEVICE void write_slots(const candidate_prep_problem& p, row_info info, uint32_t count,
                            const uint32_t* kept, int64_t row, int part) {
  constexpr int batch = candidate_prep_config{}.slot_batch;
  const candidate_slot_sink& sink = p.slots;
  const uint32_t columns = static_cast<uint32_t>(p.num_blocks) * static_cast<uint32_t>(p.cbs);
  // Valid columns end before the row's length (and max_visible, which bounds it for every row
  // row_info accepts); a table without columns has none.
  const int64_t end =
      sink.block_table_stride > 0 ? min(static_cast<int64_t>(info.visible), p.max_visible) : 0;
  const page_table table =
      page_table::of(sink.block_table, sink.block_table_stride, info.request, sink.num_pages);
  int2* out = reinterpret_cast<int2*>(sink.pairs) + row * static_cast<int64_t>(columns);
  const uint32_t per =
      (columns + static_cast<uint32_t>(p.parts) - 1) / static_cast<uint32_t>(p.parts);
  const uint32_t first = per * static_cast<uint32_t>(part);
  const uint32_t last = min(columns, first + per);
  for (uint32_t c0 = first + threadIdx.x; c0 < last; c0 += batch * Threads) {
    int2 s[batch];
#pragma unroll
    for (int b = 0; b < batch; ++b) {
      const uint32_t c = c0 + b * Threads;
      s[b] = make_int2(0, -1);
      if (c >= last) continue;
      const uint32_t block = p.by_cbs.quotient(c);
      if (block >= count) continue;
      const int64_t pos = static_cast<int64_t>(kept[block]) * p.cbs + p.by_cbs.remainder(c, block);
      if (pos >= end) continue;
      s[b] = table.slot(static_cast<uint32_t>(pos), p.by_block_size);
    }
#pragma unroll
    for (int b = 0; b < batch; ++b) {
      const uint32_t c = c0 + b * Threads;
      if (c < last) out[c] = s[b];
    }
  }
}

/// p.parts blocks a row, each: sort, dedupe and compact the row's live ids, the first block writing
/// them and `counts[row]`, how many; then, where asked, its part of the columns' page ids and
/// tokens. Live ids are below 2^id_bits - 1, which stands for "none" and sorts after them: the
/// sort looks at id_bits bits only.
template <int Threads, int Items, class Rows>
__global__ __launch_bounds__(Threads) void candidate_prep_kernel(candidate_prep_problem p,
                                                                 Rows rows) {
  using sort = block::block_radix_sort<uint32_t, Threads, Items>;
  using scan = block::block_scan<uint32_t, Threads>;
  // Launched chained: overlapped with the kernel before it where the caller says so (it writes
  // nothing this one reads or writes), waiting for it only before the end; else after it.
  if (!p.overlap_prior) platform::wait_for_prior_grid();
  platform::allow_next_grid();
  const uint32_t none = (1u << p.id_bits) - 1;
  __shared__ union {  // the kept ids replace the sort's storage or the bitmap once it is read
    typename sort::storage_type sort;
    uint32_t sorted[Threads * Items];
    uint32_t bitmap[prep_bitmap_words];
  } shared;
  __shared__ typename scan::storage_type scan_storage;
  __shared__ int cell;
  uint32_t* sorted = shared.sorted;

  const int64_t row = blockIdx.x / static_cast<unsigned>(p.parts);
  const int part = static_cast<int>(blockIdx.x % static_cast<unsigned>(p.parts));
  const bool writes_ids = part == 0;
  int32_t raw[Items];  // loaded before the row is located, so that both are in flight together
#pragma unroll
  for (int j = 0; j < Items; ++j) {
    const int i = static_cast<int>(threadIdx.x) * Items + j;
    raw[j] = i < p.num_blocks ? p.ids[row * p.ids_stride + i] : -1;
  }
  const row_info info = rows.locate(row, &cell);
  const int64_t v = info.visible;
  uint32_t id[Items];
#pragma unroll
  for (int j = 0; j < Items; ++j) {
    const int64_t b = raw[j];
    id[j] = b >= 0 && b * p.cbs < v && b < none ? static_cast<uint32_t>(b) : none;
  }
  int32_t* out = p.prepared + row * p.prepared_stride;
  const bool slots = p.slots.pairs != nullptr;
  uint32_t count;
  if (p.bitmap) {
    // A bit an id over the words the row's live ids need (its length's, not the call's).
    constexpr int words_a_thread = prep_bitmap_words / Threads;
    const int64_t live = v <= 0 ? 0 : (v + p.cbs - 1) / p.cbs;
    const int words = static_cast<int>(min(live, int64_t{prep_bitmap_words} * 32) + 31) / 32;
    for (int w = static_cast<int>(threadIdx.x); w < words; w += Threads) shared.bitmap[w] = 0;
    __syncthreads();
#pragma unroll
    for (int j = 0; j < Items; ++j)
      if (id[j] != none && id[j] < static_cast<uint32_t>(words) * 32)
        atomicOr(&shared.bitmap[id[j] / 32], 1u << (id[j] % 32));
    __syncthreads();
    uint32_t mine[words_a_thread], keep = 0;  // thread t: words [t w, t w + w), ids in order
#pragma unroll
    for (int q = 0; q < words_a_thread; ++q) {
      const int w = static_cast<int>(threadIdx.x) * words_a_thread + q;
      mine[q] = w < words ? shared.bitmap[w] : 0u;
      keep += static_cast<uint32_t>(platform::popcount(mine[q]));
    }
    uint32_t first;
    scan::exclusive_sum(keep, first, count, scan_storage);
    __syncthreads();  // every thread has read its words: the kept ids may replace the bitmap
    uint32_t slot = first;
#pragma unroll
    for (int q = 0; q < words_a_thread; ++q) {
      for (uint32_t bits = mine[q]; bits != 0; bits &= bits - 1) {
        const uint32_t kept =
            (threadIdx.x * words_a_thread + q) * 32 + static_cast<uint32_t>(__ffs(bits) - 1);
        if (writes_ids) out[slot] = static_cast<int32_t>(kept);
        if (slots) sorted[slot] = kept;
        ++slot;
      }
    }
  } else {
    sort::sort(id, shared.sort, 0, p.id_bits);
    __syncthreads();
#pragma unroll
    for (int j = 0; j < Items; ++j) sorted[threadIdx.x * Items + j] = id[j];
    __syncthreads();

    uint32_t keep = 0, kept = 0;  // kept: bit j for id[j]
#pragma unroll
    for (int j = 0; j < Items; ++j) {
      const int i = static_cast<int>(threadIdx.x) * Items + j;
      if (id[j] != none && (i == 0 || sorted[i - 1] != id[j])) {
        ++keep;
        kept |= 1u << j;
      }
    }
    uint32_t first;
    scan::exclusive_sum(keep, first, count, scan_storage);
    uint32_t slot = first;
#pragma unroll
    for (int j = 0; j < Items; ++j)
      if (writes_ids && (kept & (1u << j))) out[slot++] = static_cast<int32_t>(id[j]);
    if (slots) {
      __syncthreads();  // every thread's reads of `sorted` are done: it now takes the kept ids
      slot = first;
#pragma unroll
      for (int j = 0; j < Items; ++j)
        if (kept & (1u << j)) sorted[slot++] = id[j];
    }
  }
  if (writes_ids) {
    for (int i = static_cast<int>(count) + threadIdx.x; i < p.num_blocks; i += Threads) out[i] = -1;
    if (threadIdx.x == 0) p.counts[row] = static_cast<int32_t>(count);
  }
  if (slots) {
    __syncthreads();  // the kept ids are in
    write_slots<Threads>(p, info, count, sorted, row, part);
  }
  if (p.overlap_prior) platform::wait_for_prior_grid();
}

template <int Threads, class Rows>
platform::error_t launch_prep(const candidate_prep_problem& p, int64_t rows, Rows row_source,
                              platform::stream_t stream) {
  return platform::launch(
      &candidate_prep_kernel<Threads, candidate_prep_config{}.items, Rows>,
      {dim3(static_cast<unsigned>(rows * p.parts)), Threads, 0, 1, /*chained=*/true}, stream, p,
      row_source);
}

/// Calls f(std::integral_constant<int, T>{}) with the fewest threads T of min_threads, twice,
/// four and eight times as many (candidate_prep_config) whose ids each hold a row of num_blocks
/// (<= candidate_max_blocks) ids.
template <class F>
platform::error_t with_prep_threads(int num_blocks, F&& f) {
  constexpr int items = candidate_prep_config{}.items;
  constexpr int fewest = candidate_prep_config{}.min_threads;
  static_assert(fewest * 8 == 1024, "the widest block holds candidate_max_blocks");
  return platform::with_constant<1, 2, 4, 8>(
      [&](int times) { return num_blocks <= items * fewest * times; },
      [&](auto times) { return f(std::integral_constant<int, fewest * decltype(times)::value>{}); });
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
  constexpr int threads = candidate_prep_config{}.block_keys_threads;
  if (rows == 0 || width == 0) return platform::success;
  const dim3 grid(static_cast<unsigned>(rows), static_cast<unsigned>((width + threads - 1) / threads));
  detail::candidate_block_keys_kernel<threads><<<grid, threads, 0, stream>>>(keys, visible, cbs, out,
                                                                            out_stride);
  return platform::last_error();
}

/// Prepares `rows` pool rows of `num_blocks` ids (<= candidate_max_blocks) into `prepared`
/// ([rows][prepared_stride], ascending, -1 after) and `counts` ([rows]), and where `slots.pairs`
/// is set, each column's page id and token. `row_source` tells each row's request and length:
/// checked_rows after row_info, or batch_rows overlapped with it. Every row's length that
/// matters is at most `max_visible` (the call's max_model_len), so no live id reaches
/// ceil(max_visible / cbs), and the sort needs only the bits below it. `overlap_prior`: the kernel
/// before it on the stream writes nothing this one reads or writes (row_info, or the last chunk's
/// select), so it runs overlapped with that kernel (platform/launch.hpp); leave it false otherwise.
template <class Rows>
platform::error_t launch_candidate_prep(
    const int32_t* ids, int64_t ids_stride, int64_t rows, int num_blocks, int cbs, Rows row_source,
    int64_t max_visible, int32_t* prepared, int64_t prepared_stride, int32_t* counts,
    platform::stream_t stream, const candidate_slot_sink& slots = {}, bool overlap_prior = false) {
  if (rows == 0) return platform::success;
  const int64_t limit = candidate_live_blocks(max_visible, cbs);  // live ids < limit <= none
  int id_bits = 1;
  while (id_bits < 31 && (int64_t{1} << id_bits) <= limit) ++id_bits;
  detail::candidate_prep_problem p{};
  p.ids = ids;
  p.ids_stride = ids_stride;
  p.num_blocks = num_blocks;
  p.cbs = cbs;
  p.id_bits = id_bits;
  p.max_visible = max_visible;
  p.prepared = prepared;
  p.prepared_stride = prepared_stride;
  p.counts = counts;
  p.slots = slots;
  p.by_cbs = platform::divider(static_cast<uint32_t>(cbs));
  p.by_block_size = platform::divider(static_cast<uint32_t>(slots.block_size));
  p.overlap_prior = overlap_prior;
  p.bitmap = limit <= int64_t{detail::prep_bitmap_words} * 32;
  constexpr candidate_prep_config config{};
  p.parts = slots.pairs == nullptr ? 1
                                   : static_cast<int>(std::clamp<int64_t>(
                                         config.target_blocks / rows, 1, config.max_parts));
  // Deduplicating through the bitmap and writing slots, the block takes its most threads, the
  // sort the fewest (candidate_prep_config::bitmap_words).
  return detail::with_prep_threads(
      slots.pairs != nullptr && p.bitmap ? candidate_max_blocks : num_blocks, [&](auto threads) {
        return detail::launch_prep<decltype(threads)::value>(p, rows, row_source, stream);
      });
}

}  // namespace mxi::device
