// Exact top-k of one row held by one block: the k largest keys of the row, equal keys to the
// smaller column, written in ascending column order (or by key descending, then column, with the
// score-order variant). Keys are order-preserving uint32 images; block::score_key (radix_key.hpp)
// makes them from fp32 scores with NaN lowest, so a kernel that selects on scores gets the
// library's ranking. The device-wide top-k (device/topk.hpp) runs this class for every row that
// fits in shared memory, so both give the same bits.
//
// How: the row's keys sit in shared memory as 16-byte vectors (a key_row). The top 11-bit digit is
// counted into a histogram as the keys arrive (load) or over shared memory (count); one or two
// more passes over shared memory pin the k-th key (the 11/11/10-bit plan of block::radix_digits,
// stopping once the threshold's bin is taken whole); one block scan then places the winners in
// ascending column order. The score order stages the winners as (key, column) pairs and sorts them
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

#include "mxi/block/block_radix_sort.hpp"
#include "mxi/block/block_radix_threshold.hpp"
#include "mxi/block/block_scan.hpp"
#include "mxi/block/radix_key.hpp"
#include "mxi/platform/intrinsics.hpp"

namespace mxi::block {

/// A row of keys in shared memory as 16-byte vectors: column c is word c + offset of `vectors`.
/// The offset lets a row copied from global memory keep that memory's 16-byte alignment. Build it
/// from at least one run-time value: clang for AMDGPU turns an all-constant one into a static
/// initializer, which cannot hold a shared-memory address (a compile error).
struct key_row {
  uint4* vectors;
  int offset;  ///< 0 .. 3
  int n;       ///< columns
  MXI_DEVICE int vector_count() const { return (n + offset + 3) / 4; }
};

namespace detail {

/// Adds a run of equal digits with one shared atomic: heavy ties (all-equal rows, many exact
/// zeros) would otherwise serialize the block on one bin.
struct run_counter {
  uint32_t* hist;
  uint32_t bin = 0, count = 0;
  MXI_DEVICE void add(uint32_t b) {
    if (b != bin && count != 0) {
      atomicAdd(&hist[bin], count);
      count = 0;
    }
    bin = b;
    ++count;
  }
  MXI_DEVICE void flush() {
    if (count != 0) atomicAdd(&hist[bin], count);
  }
};

MXI_DEVICE void unpack(const uint4& v, uint32_t (&w)[4]) {
  w[0] = v.x;
  w[1] = v.y;
  w[2] = v.z;
  w[3] = v.w;
}

/// Words [4v - offset, 4v - offset + 4) of a row of n words; those outside [0, n) read as 0. Only
/// the first and last vectors are partial; the others are one aligned 16-byte load.
MXI_DEVICE uint4 load_vector(const uint32_t* row, int v, int offset, int n) {
  const int lo = 4 * v - offset;
  if (lo >= 0 && lo + 3 < n) return *reinterpret_cast<const uint4*>(row + lo);
  uint32_t w[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) w[j] = lo + j >= 0 && lo + j < n ? row[lo + j] : 0u;
  return make_uint4(w[0], w[1], w[2], w[3]);
}

}  // namespace detail

template <int Threads, int SortItems = 0>
class block_topk {
  static_assert(Threads >= 1 && Threads <= 1024, "block_topk: 1 .. 1024 threads");
  static_assert(SortItems >= 0,
                "block_topk: SortItems 0 (position order) or the winners a thread sorts");
  using digits = radix_digits;
  using find = block_radix_threshold<Threads, digits::max_bins>;
  using scan = block_scan<uint32_t, Threads>;
  using sort = block_radix_sort<uint64_t, Threads, SortItems == 0 ? 1 : SortItems>;

 public:
  /// The largest k: any in position order (k >= n takes the whole row), the sort's capacity else.
  static constexpr int max_k =
      SortItems == 0 ? std::numeric_limits<int>::max() : Threads * SortItems;
  /// A thread's compaction masks hold 16 vectors (64 columns) and the scan packs two counts in
  /// 16 bits each, which bounds the vectors of a row.
  static constexpr int max_vectors = 16 * Threads < 16384 ? 16 * Threads : 16384;
  /// The widest row at any offset.
  static constexpr int max_columns = 4 * max_vectors - 3;

  /// 16-byte vectors a row of n columns needs at any offset.
  MXI_HOST_DEVICE static constexpr int64_t row_vectors(int64_t n) { return (n + 6) / 4; }

  struct storage_type {
    uint32_t hist[digits::max_bins];
    union {
      typename find::storage_type find;
      typename scan::storage_type scan;
    } step;
  };
  /// The score-order sort's storage (unused in position order).
  using sort_storage_type = typename sort::storage_type;

  /// Copies words [0, n) of `source` (4-byte aligned, global memory) into `vectors` as keys
  /// (key_of(word)), several 16-byte loads in flight per thread, counting the top digit on the way
  /// when n > k. Then select() takes the row as it is.
  template <class KeyOf>
  MXI_DEVICE static key_row load(const uint32_t* source, int n, int k, KeyOf key_of, uint4* vectors,
                                 storage_type& storage) {
    const int tid = static_cast<int>(threadIdx.x);
    // Vector v holds columns [4v - offset, 4v - offset + 4): global and shared vectors line up.
    const key_row row{vectors, static_cast<int>((reinterpret_cast<uintptr_t>(source) / 4) % 4), n};
    const int spanned = row.vector_count();
    const bool counted = n > k;
    clear(storage);
    constexpr int batch = 4;
    detail::run_counter run{storage.hist};
    for (int base = 0; base < spanned; base += batch * Threads) {
      uint4 raw[batch];
#pragma unroll
      for (int i = 0; i < batch; ++i) {
        const int v = base + i * Threads + tid;
        raw[i] =
            v < spanned ? detail::load_vector(source, v, row.offset, n) : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int i = 0; i < batch; ++i) {
        const int v = base + i * Threads + tid;
        if (v >= spanned) continue;
        uint32_t w[4];
        detail::unpack(raw[i], w);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          w[j] = key_of(w[j]);
          const int c = 4 * v + j - row.offset;
          if (counted && c >= 0 && c < n) run.add(digits::digit(w[j], 0));
        }
        vectors[v] = make_uint4(w[0], w[1], w[2], w[3]);
      }
    }
    run.flush();
    __syncthreads();
    return row;
  }

  /// Counts the top digit of a row the caller wrote into shared memory itself (starts with a
  /// barrier, so those writes need none of their own). Then select() takes the row.
  MXI_DEVICE static void count(const key_row& row, int k, storage_type& storage) {
    clear(storage);
    if (row.n > k) count_pass(row, 0, 0, storage);
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
  /// The digits of the k-th key above `shift`, and how many keys with those digits are taken.
  struct threshold {
    uint32_t prefix = 0, shift = 0, rest = 0;
  };

  MXI_DEVICE static void clear(storage_type& storage) {
    for (int b = static_cast<int>(threadIdx.x); b < digits::max_bins; b += Threads)
      storage.hist[b] = 0;
    __syncthreads();
  }

  /// Histograms digit `pass` of the keys whose higher digits equal `prefix`.
  MXI_DEVICE static void count_pass(const key_row& row, int pass, uint32_t prefix,
                                    storage_type& storage) {
    detail::run_counter run{storage.hist};
    const int spanned = row.vector_count();
    for (int v = static_cast<int>(threadIdx.x); v < spanned; v += Threads) {
      uint32_t w[4];
      detail::unpack(row.vectors[v], w);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int c = 4 * v + j - row.offset;
        if (c >= 0 && c < row.n && digits::matches(w[j], pass, prefix))
          run.add(digits::digit(w[j], pass));
      }
    }
    run.flush();
    __syncthreads();
  }

  /// A row of n <= k takes everything (key > 0, or == 0 with all n of those wanted).
  MXI_DEVICE static threshold find_threshold(const key_row& row, int k, storage_type& storage) {
    threshold t;
    t.rest = static_cast<uint32_t>(row.n < k ? row.n : k);
    if (row.n <= k) return t;
    t.rest = static_cast<uint32_t>(k);
#pragma unroll 1
    for (int pass = 0; pass < digits::passes; ++pass) {
      if (pass > 0) {
        clear(storage);
        count_pass(row, pass, t.prefix, storage);
      }
      uint32_t in_bin;
      const uint32_t digit = find::find(storage.hist, t.rest, in_bin, storage.step.find);
      t.prefix = (t.prefix << (pass == 2 ? 10 : 11)) | digit;
      t.shift = static_cast<uint32_t>(digits::shift(pass));
      t.rest = in_bin;
      // Every key of the bin is taken: lower digits cannot change the set.
      const bool settled = storage.hist[digit] == t.rest;
      __syncthreads();  // all have read the bin before the next pass clears it
      if (settled) break;
    }
    return t;
  }

  /// Calls place(slot, word) for every winner, slot its rank by column. Thread t owns `per`
  /// consecutive vectors, so one scan orders the columns. Even strides would put a quarter-warp's
  /// 16-byte reads in one bank group: the visiting order rotates.
  template <class Place>
  MXI_DEVICE static void compact(const key_row& row, const threshold& t, storage_type& storage,
                                 Place place) {
    const int tid = static_cast<int>(threadIdx.x);
    const int spanned = row.vector_count();
    const int per = (spanned + Threads - 1) / Threads;
    const int first = tid * per;
    const int rotate = per % 2 == 0 ? tid % per : 0;
    uint64_t above = 0, equal = 0;
    for (int i = 0; i < per; ++i) {
      const int local = i + rotate < per ? i + rotate : i + rotate - per;
      const int v = first + local;
      if (v >= spanned) continue;
      uint32_t w[4];
      detail::unpack(row.vectors[v], w);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int c = 4 * v + j - row.offset;
        if (c < 0 || c >= row.n) continue;
        above |= static_cast<uint64_t>((w[j] >> t.shift) > t.prefix) << (4 * local + j);
        equal |= static_cast<uint64_t>((w[j] >> t.shift) == t.prefix) << (4 * local + j);
      }
    }
    // One 32-bit scan of (above << 16 | equal): a 64-bit one spills at 1024 threads.
    uint32_t before, total;
    scan::exclusive_sum((static_cast<uint32_t>(platform::popcount(above)) << 16) |
                            static_cast<uint32_t>(platform::popcount(equal)),
                        before, total, storage.step.scan);
    uint32_t ties_seen = before & 0xFFFFu;
    uint32_t slot = (before >> 16) + (ties_seen < t.rest ? ties_seen : t.rest);
    for (uint64_t winners = above | equal; winners != 0;) {
      const uint64_t low = winners & (~winners + 1);
      winners ^= low;
      if (equal & low) {
        if (ties_seen++ >= t.rest) {  // the later ties of this thread are not taken either
          winners &= ~equal;
          continue;
        }
      }
      place(slot++, 4 * first + platform::popcount(low - 1));
    }
  }
};

}  // namespace mxi::block
