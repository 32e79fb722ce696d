// Exact top-k of one row held by one block: the k largest keys of the row, equal keys to the
// smaller column, written in ascending column order (or by key descending, then column, with the
// score-order variant). Keys are order-preserving uint32 images; block::score_key (radix_key.hpp)
// makes them from fp32 scores with NaN lowest, so a kernel that selects on scores gets the
// library's ranking. The device-wide top-k (device/topk.hpp) runs this class for every row that
// fits in shared memory, so both give the same bits.
//
// How (the steps are block::block_radix_select's, block_radix_select.hpp): the row's keys sit in
// shared memory as 16-byte vectors (a key_row). The top 11-bit digit is counted into a histogram
// as the keys arrive (load) or over shared memory (count); one or two more passes over shared
// memory pin the k-th key (the 11/11/10-bit plan of block::radix_digits, stopping once the
// threshold's bin is taken whole); one block scan then places the winners in ascending column
// order. The score order stages the winners as (key, column) pairs and sorts them
// on the key bits with block_radix_sort (stable, so ties stay by column).
//
// Contract
//   Threads    the block's threads, blockDim == (Threads, 1, 1), 1 .. 1024; every thread calls
//              each member together (they contain __syncthreads).
//   SortItems  0: ascending-column output, any k. > 0: score order for k <= Threads * SortItems.
//   storage    storage_type (an 8 KiB histogram and the scan's storage) in shared memory; the
//              key row, row_vectors(n) 16-byte vectors of shared memory; for score order, k
//              staged uint64 and a sort_storage_type (which may alias the key row: select reads
//              the row for the last time before the sort starts).
//   rows       1 <= n <= max_columns columns; k >= 1.
//   reads      the key row (load also reads n 4-byte words of the source row once, 16 bytes at a
//              time where aligned).
//   writes     emit(slot, column) once for each slot in [0, k): the winners' columns in the first
//              min(n, k) slots, -1 in the rest. Reusing storage or the row afterwards needs a
//              barrier.
#pragma once

#include <cstdint>
#include <limits>

#include "mxi/block/block_radix_select.hpp"
#include "mxi/block/block_radix_sort.hpp"
#include "mxi/block/radix_key.hpp"

namespace mxi::block {

template <int Threads, int SortItems = 0>
class block_topk {
  static_assert(Threads >= 1 && Threads <= 1024, "block_topk: 1 .. 1024 threads");
  static_assert(SortItems >= 0,
                "block_topk: SortItems 0 (position order) or the winners a thread sorts");
  using digits = radix_digits;
  using steps = block_radix_select<Threads>;
  using sort = block_radix_sort<uint64_t, Threads, SortItems == 0 ? 1 : SortItems>;

 public:
  /// The largest k: any in position order (k >= n takes the whole row), the sort's capacity else.
  static constexpr int max_k =
      SortItems == 0 ? std::numeric_limits<int>::max() : Threads * SortItems;
  /// The compaction takes the row as one window (block_radix_select::max_vectors).
  static constexpr int max_vectors = steps::max_vectors;
  /// The widest row at any offset.
  static constexpr int max_columns = steps::max_columns;

  /// 16-byte vectors a row of n columns needs at any offset.
  MXI_HOST_DEVICE static constexpr int64_t row_vectors(int64_t n) { return steps::row_vectors(n); }

  struct storage_type {
    uint32_t hist[digits::max_bins];
    typename steps::step_storage step;
  };
  /// The score-order sort's storage (unused in position order).
  using sort_storage_type = typename sort::storage_type;

  /// Copies words [0, n) of `source` (4-byte aligned, global memory) into `vectors` as keys
  /// (key_of(word)), several 16-byte loads in flight per thread, counting the top digit on the way
  /// when n > k. Then select() takes the row as it is.
  template <class KeyOf>
  MXI_DEVICE static key_row load(const uint32_t* source, int n, int k, KeyOf key_of, uint4* vectors,
                                 storage_type& storage) {
    steps::clear(storage.hist);
    return steps::stage(global_key_row<KeyOf>(source, n, key_of), n > k, storage.hist, vectors);
  }

  /// Counts the top digit of a row the caller wrote into shared memory itself (starts with a
  /// barrier, so those writes need none of their own). Then select() takes the row.
  MXI_DEVICE static void count(const key_row& row, int k, storage_type& storage) {
    steps::clear(storage.hist);
    if (row.n > k) steps::count(row, 0, 0u, storage.hist);
  }

  /// Position order: emit(slot, column) for the min(n, k) winners, slot = their rank by column,
  /// then emit(slot, -1) up to k. Returns min(n, k) in every thread.
  template <class Emit>
  MXI_DEVICE static int select(const key_row& row, int k, storage_type& storage, Emit emit) {
    static_assert(SortItems == 0, "block_topk: score order takes staging and sort storage");
    compact(row, find_threshold(row, k, storage), storage,
            [&](uint32_t slot, int word) { emit(static_cast<int>(slot), word - row.offset); });
    const int taken = row.n < k ? row.n : k;
    for (int s = taken + static_cast<int>(threadIdx.x); s < k; s += Threads) emit(s, -1);
    return taken;
  }

  /// Score order: emit(slot, column) for the min(n, k) winners, slot = their rank by (key desc,
  /// column asc), then emit(slot, -1) up to k. `staged` holds k entries of shared memory;
  /// `sort_storage` may alias the row. Returns min(n, k) in every thread.
  template <class Emit>
  MXI_DEVICE static int select(const key_row& row, int k, storage_type& storage, uint64_t* staged,
                               sort_storage_type& sort_storage, Emit emit) {
    static_assert(SortItems > 0, "block_topk: position order takes no staging");
    const uint32_t* words = reinterpret_cast<const uint32_t*>(row.vectors);
    compact(row, find_threshold(row, k, storage), storage, [&](uint32_t slot, int word) {
      staged[slot] =
          (static_cast<uint64_t>(~words[word]) << 32) | static_cast<uint32_t>(word - row.offset);
    });
    const int taken = row.n < k ? row.n : k;
    __syncthreads();  // every winner staged, the row no longer read: the sort may reuse it
    uint64_t item[SortItems];
#pragma unroll
    for (int j = 0; j < SortItems; ++j) {
      const int r = static_cast<int>(threadIdx.x) * SortItems + j;
      item[j] = r < taken ? staged[r] : ~uint64_t{0};  // padding: after every real item (stable)
    }
    // On the key bits only: a radix sort is stable, so equal keys keep the staged (ascending
    // column) order, and 8 digit passes replace 8 + column_bits / 4.
    sort::sort(item, sort_storage, 32, 64);
#pragma unroll
    for (int j = 0; j < SortItems; ++j) {
      const int r = static_cast<int>(threadIdx.x) * SortItems + j;  // k <= max_k: covers [0, k)
      if (r < k) emit(r, r < taken ? static_cast<int>(item[j] & 0xFFFFFFFFu) : -1);
    }
    return taken;
  }

 private:
  /// A row of n <= k takes everything (key > 0, or == 0 with all n of those wanted).
  MXI_DEVICE static radix_threshold find_threshold(const key_row& row, int k,
                                                   storage_type& storage) {
    radix_threshold t;
    t.rest = static_cast<uint32_t>(row.n < k ? row.n : k);
    if (row.n <= k) return t;
    // load() / count() counted digit 0 already.
    steps::resolve(row, 0, /*counted=*/true, t, storage.hist, storage.step);
    return t;
  }

  /// Calls place(slot, word) for every winner, slot its rank by column (the row is one window).
  template <class Place>
  MXI_DEVICE static void compact(const key_row& row, const radix_threshold& t,
                                 storage_type& storage, Place place) {
    steps::place(steps::tally(row, t, storage.step), t, 0u, 0u, place);
  }
};

}  // namespace mxi::block
