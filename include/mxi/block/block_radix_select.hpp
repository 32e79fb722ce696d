// The steps of an exact radix select over rows of order-preserving uint32 keys, for one block:
// stage a row into shared memory while counting its top digit, count one digit of the keys that
// match the threshold so far, turn a histogram into the next digit of the threshold, and compact
// the winners in ascending column order. block::block_topk (block_topk.hpp) composes them for a
// row held by one block; the cluster top-k (device/detail/topk_cluster_kernel.hpp) composes them
// for a row split over the blocks of a cluster, whose histograms are summed across the cluster and
// whose compaction starts each block at the counts of the slices before it.
//
// Rows. A row is anything with `n`, `offset` (0 .. 3), `vector_count()`, `load(v)`, `keys(words)`
// and `vector(v)` (= keys(load(v))): vector v holds columns [4v - offset, 4v - offset + 4)
// (columns outside [0, n) are ignored), load reads its words and keys converts them. key_row is a
// row in shared memory, global_key_row one read (and converted with key_of) from global memory.
//
// Contract
//   Threads    the block's threads, blockDim == (Threads, 1, 1), 1 .. 1024; every thread calls
//              each member together (they contain __syncthreads unless said otherwise).
//   hist       max_bins uint32 of shared memory.
//   windows    tally() takes a row of at most max_columns columns (a thread's masks hold 16
//              vectors, and the scan packs two 16-bit counts); longer rows are cut into windows.
#pragma once

#include <cstdint>

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
  MXI_DEVICE uint4 load(int v) const { return vectors[v]; }
  MXI_DEVICE static uint4 keys(const uint4& words) { return words; }
  MXI_DEVICE uint4 vector(int v) const { return load(v); }
  /// Word i (column i - offset).
  MXI_DEVICE uint32_t word(int i) const { return reinterpret_cast<const uint32_t*>(vectors)[i]; }
};

namespace detail {

/// Adds a vector's four digits (-1: not counted) to the histogram, one shared atomic a key. Where
/// the four fall in one bin and so do those of every lane beside it (ties: all-equal rows, runs of
/// zeros), one atomic adds them all: the atomics of a wave on one address serialize. Random rows
/// almost never take that branch, so they pay three compares a vector for it; a thread's runs of
/// equal digits counted apart cost about a dozen instructions and two branches a key. Skips:
/// whether a digit may be -1; without, every key's atomic is unconditional (a branch a key less).
template <bool Skips>
MXI_DEVICE void count_vector(uint32_t* hist, const int (&digit)[4]) {
  if ((!Skips || digit[0] >= 0) && digit[0] == digit[1] && digit[0] == digit[2] &&
      digit[0] == digit[3]) {
    int lanes = 0;
    bool first = false;
    if (!platform::active_lanes_agree(static_cast<uint32_t>(digit[0]), lanes, first))
      atomicAdd(&hist[digit[0]], 4u);
    else if (first)
      atomicAdd(&hist[digit[0]], 4u * static_cast<uint32_t>(lanes));
    return;
  }
#pragma unroll
  for (int j = 0; j < 4; ++j)
    if (!Skips || digit[j] >= 0) atomicAdd(&hist[digit[j]], 1u);
}

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

/// Columns [0, n) of a global row of 32-bit words (4-byte aligned), each converted with key_of as
/// it is read; vectors line up with the memory's 16-byte alignment.
template <class KeyOf>
struct global_key_row {
  const uint32_t* source;
  int offset;
  int n;
  KeyOf key_of;
  MXI_DEVICE global_key_row(const uint32_t* s, int columns, KeyOf k)
      : source(s), offset(static_cast<int>((reinterpret_cast<uintptr_t>(s) / 4) % 4)), n(columns),
        key_of(k) {}
  MXI_DEVICE int vector_count() const { return (n + offset + 3) / 4; }
  MXI_DEVICE uint4 load(int v) const { return detail::load_vector(source, v, offset, n); }
  MXI_DEVICE uint4 keys(const uint4& words) const {
    return make_uint4(key_of(words.x), key_of(words.y), key_of(words.z), key_of(words.w));
  }
  MXI_DEVICE uint4 vector(int v) const { return keys(load(v)); }
  /// Columns [first, first + columns) as a row of their own.
  MXI_DEVICE global_key_row part(int first, int columns) const {
    return global_key_row(source + first, columns, key_of);
  }
};

/// The threshold after some digits: those digits (`prefix`, the key's bits from `shift` up), and
/// how many keys equal to them are taken (`rest`). A key wins when (key >> shift) > prefix, or
/// == prefix among the first `rest` such keys by column.
struct radix_threshold {
  uint32_t prefix = 0, shift = 0, rest = 0;
};

/// Digit `pass` of the keys whose higher digits equal `prefix`; -1 (not counted) for the others.
/// (A digit functor's `every_key`: whether it never gives -1.)
struct pass_digit {
  static constexpr bool every_key = false;
  int pass = 0;
  uint32_t prefix = 0;
  MXI_DEVICE int operator()(uint32_t key) const {
    return radix_digits::matches(key, pass, prefix)
               ? static_cast<int>(radix_digits::digit(key, pass))
               : -1;
  }
};

/// Every key's fine_digit (radix_key.hpp).
struct fine_first_digit {
  static constexpr bool every_key = true;
  MXI_DEVICE int operator()(uint32_t key) const { return static_cast<int>(fine_digit(key)); }
};

/// One window's compaction counts (see tally): the thread's above / equal masks over its vectors,
/// the counts before it in the window (above << 16 | equal), and the window's totals.
struct window_tally {
  uint64_t above = 0, equal = 0;
  int first = 0;  ///< the thread's first vector
  uint32_t before = 0, total = 0;
  MXI_DEVICE uint32_t total_above() const { return total >> 16; }
  MXI_DEVICE uint32_t total_equal() const { return total & 0xFFFFu; }
};

template <int Threads>
class block_radix_select {
  static_assert(Threads >= 1 && Threads <= 1024, "block_radix_select: 1 .. 1024 threads");
  using digits = radix_digits;

 public:
  using find = block_radix_threshold<Threads, digits::max_bins>;
  using scan = block_scan<uint32_t, Threads>;

  /// A thread's compaction masks hold 16 vectors (64 columns) and the scan packs two counts in
  /// 16 bits each, which bounds the vectors of a window.
  static constexpr int max_vectors = 16 * Threads < 16384 ? 16 * Threads : 16384;
  /// The widest window at any offset.
  static constexpr int max_columns = 4 * max_vectors - 3;

  /// 16-byte vectors a row of n columns needs at any offset.
  MXI_HOST_DEVICE static constexpr int64_t row_vectors(int64_t n) { return (n + 6) / 4; }

  /// The step storage of find() and tally() (never both at once).
  union step_storage {
    typename find::storage_type find;
    typename scan::storage_type scan;
  };

  /// Zeroes a histogram, then a barrier.
  MXI_DEVICE static void clear(uint32_t* hist) {
    for (int b = static_cast<int>(threadIdx.x); b < digits::max_bins; b += Threads) hist[b] = 0;
    __syncthreads();
  }

  /// Calls visit(v, vector) for every vector of `row` (several loads in flight per thread) and, if
  /// `counted`, histograms digit_of(key) of its keys into `hist` (cleared; a negative digit is not
  /// counted). Ends with a barrier. A batch's words are converted only once all its loads are
  /// issued: converting each vector as it was read (global_key_row::vector) left one load in
  /// flight, the next issued only after the last had landed (SASS of the cluster top-k's stage,
  /// H200).
  template <class Row, class DigitOf, class Visit>
  MXI_DEVICE static void sweep(const Row& row, bool counted, DigitOf digit_of, uint32_t* hist,
                               Visit visit) {
    const int tid = static_cast<int>(threadIdx.x);
    const int spanned = row.vector_count();
    constexpr int batch = 4;
    for (int base = 0; base < spanned; base += batch * Threads) {
      uint4 raw[batch];
#pragma unroll
      for (int i = 0; i < batch; ++i) {
        const int v = base + i * Threads + tid;
        raw[i] = v < spanned ? row.load(v) : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int i = 0; i < batch; ++i) {
        const int v = base + i * Threads + tid;
        if (v >= spanned) continue;
        const uint4 keys = row.keys(raw[i]);
        visit(v, keys);
        if (!counted) continue;
        uint32_t w[4];
        detail::unpack(keys, w);
        int digit[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) digit[j] = digit_of(w[j]);
        // Only a row's first and last vectors hold words outside it: the others test no column.
        const int first = 4 * v - row.offset;
        if (first >= 0 && first + 4 <= row.n) {
          detail::count_vector<!DigitOf::every_key>(hist, digit);
        } else {
#pragma unroll
          for (int j = 0; j < 4; ++j)
            if (static_cast<unsigned>(first + j) >= static_cast<unsigned>(row.n)) digit[j] = -1;
          detail::count_vector<true>(hist, digit);
        }
      }
    }
    __syncthreads();
  }

  /// Histograms digit `pass` of the row's keys whose higher digits equal `prefix`.
  template <class Row>
  MXI_DEVICE static void count(const Row& row, int pass, uint32_t prefix, uint32_t* hist) {
    sweep(row, true, pass_digit{pass, prefix}, hist, [](int, const uint4&) {});
  }

  /// Copies a global row into `vectors` (the same 16-byte alignment), counting digit_of its keys
  /// (the top digit unless said otherwise) into `hist` (cleared) if `counted`; returns it as a
  /// key_row. Ends with a barrier.
  template <class KeyOf, class DigitOf = pass_digit>
  MXI_DEVICE static key_row stage(const global_key_row<KeyOf>& source, bool counted, uint32_t* hist,
                                  uint4* vectors, DigitOf digit_of = {}) {
    sweep(source, counted, digit_of, hist,
          [vectors](int v, const uint4& keys) { vectors[v] = keys; });
    return key_row{vectors, source.offset, source.n};
  }

  /// Appends the bin `pick` found in the histogram of digit `pass` to the threshold. Returns
  /// whether every key of that bin is taken, so lower digits cannot change the set.
  MXI_DEVICE static bool advance(radix_threshold& t, int pass, const radix_pick& pick) {
    t.prefix = (t.prefix << (pass == 2 ? 10 : 11)) | pick.bin;
    t.shift = static_cast<uint32_t>(digits::shift(pass));
    t.rest = pick.rest;
    return pick.count == pick.rest;
  }

  /// Digit `pass` of the threshold from the histogram of that digit (`counts[b]`, any pointer-like
  /// type whose total is at least t.rest >= 1): find, then advance (the same answer in every
  /// thread). The counts may be cleared right after.
  template <class Counts>
  MXI_DEVICE static bool step(Counts counts, int pass, radix_threshold& t, step_storage& storage) {
    return advance(t, pass, find::find(counts, t.rest, storage.find));
  }

  /// Finishes `t` over a row this block holds alone, from digit `pass` on: histogram the keys
  /// matching it so far (into `hist`; digit `pass`'s is there already when `counted`), then step,
  /// until a bin settles it or the digits run out.
  MXI_DEVICE static void resolve(const key_row& row, int pass, bool counted, radix_threshold& t,
                                 uint32_t* hist, step_storage& storage) {
#pragma unroll 1
    for (; pass < digits::passes; ++pass, counted = false) {
      if (!counted) {
        clear(hist);
        count(row, pass, t.prefix, hist);
      }
      if (step(static_cast<const uint32_t*>(hist), pass, t, storage)) break;
    }
  }

  /// Pools of up to this many keys take rank() instead of resolve(): rank's n^2 comparisons, about
  /// five instructions each over the block, cost as much as resolve's one or two passes (1.6-2.9
  /// us on the H200, each a 2048-bin histogram and a find) at about 256 keys (126 keys: 1.26 us).
  static constexpr int rank_max_keys = 256;
  static_assert(rank_max_keys < 0x10000,
                "rank packs two counts of the pool's keys in 16 bits each");

  /// Finishes `t` among a few keys this block holds (a pool of at most rank_max_keys): the key with
  /// fewer than t.rest keys above it and at least t.rest at or above it, found by counting, a key
  /// a group of 8 lanes. `t` becomes that key exactly (shift 0) and the keys equal to it still
  /// taken. `cell` holds two words of shared memory. Ends with a barrier.
  MXI_DEVICE static void rank(const key_row& row, radix_threshold& t, uint32_t* cell) {
    constexpr int lanes = 8, groups = Threads / lanes;
    static_assert(Threads % 32 == 0, "rank: whole warps (its shuffles take every lane)");
    const int tid = static_cast<int>(threadIdx.x), lane = tid % lanes;
    // The same number of rounds in every warp: every lane takes part in the shuffles.
    for (int base = 0; base < row.n; base += groups) {
      const int i = base + tid / lanes;
      const uint32_t key = row.word(row.offset + (i < row.n ? i : 0));
      // (keys above << 16) + keys at or above, in two sums a lane (alternate keys): one add a
      // key on each of two short dependency chains, where two counters made each key two
      // dependent instructions on each counter's chain (1.67 -> 1.26 us at 126 keys, H200).
      const auto term = [key](uint32_t other) {
        return (other > key ? 0x10000u : 0u) + (other >= key ? 1u : 0u);
      };
      uint32_t even = 0, odd = 0;
      int j = lane;
      for (; j + lanes < row.n; j += 2 * lanes) {
        even += term(row.word(row.offset + j));
        odd += term(row.word(row.offset + j + lanes));
      }
      if (j < row.n) even += term(row.word(row.offset + j));
      uint32_t packed = even + odd;
#pragma unroll
      for (int m = 1; m < lanes; m *= 2) packed += platform::group_shuffle_xor<lanes>(packed, m);
      const uint32_t above = packed >> 16, equal = (packed & 0xFFFFu) - above;
      if (lane == 0 && i < row.n && above < t.rest && t.rest <= above + equal) {
        cell[0] = key;  // every group that finds it writes the same two words
        cell[1] = t.rest - above;
      }
    }
    __syncthreads();
    t.prefix = cell[0];
    t.shift = 0;
    t.rest = cell[1];
  }

  /// The compaction masks of a window of at most max_columns columns against `range` (its above
  /// and within keys): thread t owns `per` consecutive vectors, so one scan (finish) orders the
  /// columns. Even strides would put a quarter-warp's 16-byte reads in one bank group: the
  /// visiting order rotates. No barrier.
  template <class Row>
  MXI_DEVICE static window_tally masks(const Row& row, key_range range) {
    const int tid = static_cast<int>(threadIdx.x);
    const int spanned = row.vector_count();
    const int per = (spanned + Threads - 1) / Threads;
    window_tally w;
    w.first = tid * per;
    const int rotate = per % 2 == 0 ? tid % per : 0;
    for (int i = 0; i < per; ++i) {
      const int local = i + rotate < per ? i + rotate : i + rotate - per;
      const int v = w.first + local;
      if (v >= spanned) continue;
      uint32_t k[4];
      detail::unpack(row.vector(v), k);
      uint32_t above = 0, equal = 0;  // the vector's four bits: one 64-bit shift a vector
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        // Words outside the row's columns (the first and last vectors' padding) lose.
        const bool column =
            static_cast<unsigned>(4 * v + j - row.offset) < static_cast<unsigned>(row.n);
        above |= column && range.above(k[j]) ? 1u << j : 0u;
        equal |= column && range.within(k[j]) ? 1u << j : 0u;
      }
      w.above |= static_cast<uint64_t>(above) << (4 * local);
      w.equal |= static_cast<uint64_t>(equal) << (4 * local);
    }
    return w;
  }

  /// Calls visit(word, key) for every key of the window marked equal (word as in place).
  template <class Visit>
  MXI_DEVICE static void for_each_equal(const window_tally& w, const key_row& row, Visit visit) {
    for (uint64_t left = w.equal; left != 0; left &= left - 1) {
      const int word = 4 * w.first + platform::popcount((left & (~left + 1)) - 1);
      visit(word, row.word(word));
    }
  }

  /// Narrows the keys marked equal to those equal to `t` (a threshold among them alone): the ones
  /// above it join the above mask, the ones below leave.
  MXI_DEVICE static void refine(window_tally& w, const key_row& row, const radix_threshold& t) {
    uint64_t above = 0, equal = 0;
    const key_range range = key_range::of_digits(t.prefix, t.shift);
    for_each_equal(w, row, [&](int word, uint32_t key) {
      const int bit = word - 4 * w.first;
      above |= static_cast<uint64_t>(range.above(key)) << bit;
      equal |= static_cast<uint64_t>(range.within(key)) << bit;
    });
    w.above |= above;
    w.equal = equal;
  }

  /// Orders the window's masks: each thread's counts before it and the window's totals. Reusing
  /// `storage` afterwards needs a barrier.
  MXI_DEVICE static void finish(window_tally& w, step_storage& storage) {
    // One 32-bit scan of (above << 16 | equal): a 64-bit one spills at 1024 threads.
    scan::exclusive_sum((static_cast<uint32_t>(platform::popcount(w.above)) << 16) |
                            static_cast<uint32_t>(platform::popcount(w.equal)),
                        w.before, w.total, storage.scan);
  }

  /// The compaction counts of a window against the threshold `t`: masks, then finish.
  template <class Row>
  MXI_DEVICE static window_tally tally(const Row& row, const radix_threshold& t,
                                       step_storage& storage) {
    window_tally w = masks(row, key_range::of_digits(t.prefix, t.shift));
    finish(w, storage);
    return w;
  }

  /// Calls place(slot, word) for every winner of a tallied window (word: 4 * vector + lane, the
  /// column plus the row's offset), slot = above_before + its rank by column among the window's
  /// winners, where `above_before` / `equal_before` keys above / equal to the threshold come
  /// before the window. No barrier.
  template <class Place>
  MXI_DEVICE static void place(const window_tally& w, const radix_threshold& t,
                               uint32_t above_before, uint32_t equal_before, Place place) {
    uint32_t ties_seen = equal_before + (w.before & 0xFFFFu);
    uint32_t slot = above_before + (w.before >> 16) + (ties_seen < t.rest ? ties_seen : t.rest);
    uint64_t equal = w.equal;
    for (uint64_t winners = w.above | w.equal; winners != 0;) {
      const uint64_t low = winners & (~winners + 1);
      winners ^= low;
      if (equal & low) {
        if (ties_seen++ >= t.rest) {  // the later ties of this thread are not taken either
          winners &= ~equal;
          continue;
        }
      }
      place(slot++, 4 * w.first + platform::popcount(low - 1));
    }
  }
};

}  // namespace mxi::block
