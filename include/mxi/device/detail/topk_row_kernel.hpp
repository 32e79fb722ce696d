// The one-block select (device/topk.hpp picks it when a row fits in shared memory): one block of
// Threads threads per row does the whole select in one launch, with no workspace and no
// grid-wide dependency. The row is read once with 16-byte loads into order-preserving keys in
// shared memory, digit 0 is counted on the way in, digits 1 and 2 over shared memory (the same
// 11/11/10-bit plan as the multi-block passes, so the threshold and the ties taken are the same),
// then one block scan places the winners in ascending column order. The passes stop early once
// the threshold's bin is taken whole (usually after two on real-valued rows). Score order stages
// the winners and sorts them by (score desc, column asc) in the same block.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mxi/block/block_radix_sort.hpp"
#include "mxi/block/block_radix_threshold.hpp"
#include "mxi/block/block_scan.hpp"
#include "mxi/block/radix_key.hpp"
#include "mxi/platform/intrinsics.hpp"

namespace mxi::device::detail {

/// Dynamic shared memory of one block, carved in order: the histogram with the find/scan
/// storage; the row's keys as 16-byte vectors (the score sort reuses them); the staged winners
/// (score order). SortItems: 0 for position order, else the winners a thread sorts.
template <int Threads, int SortItems>
struct row_select_smem {
  using find = block::block_radix_threshold<Threads, block::radix_digits::max_bins>;
  using scan = block::block_scan<uint32_t, Threads>;
  using sort = block::block_radix_sort<uint64_t, Threads, SortItems == 0 ? 1 : SortItems>;

  struct head {
    uint32_t hist[block::radix_digits::max_bins];
    union {
      typename find::storage_type find;
      typename scan::storage_type scan;
    } step;
  };

  /// Each thread owns up to 16 vectors in the compaction (its masks hold 64 columns), and the
  /// counts a scan packs take 16 bits (at most 4 * max_vectors - 3 columns).
  static constexpr int max_vectors = 16 * Threads < 16384 ? 16 * Threads : 16384;

  MXI_HOST_DEVICE static constexpr size_t round16(size_t bytes) { return (bytes + 15) / 16 * 16; }
  MXI_HOST_DEVICE static constexpr size_t head_bytes() { return round16(sizeof(head)); }
  /// Vectors covering `width` columns at any 4-byte alignment of the row.
  MXI_HOST_DEVICE static constexpr int64_t tile_vectors(int64_t width) { return (width + 6) / 4; }
  MXI_HOST_DEVICE static constexpr size_t body_bytes(int64_t width) {
    const size_t tile = static_cast<size_t>(tile_vectors(width)) * 16;
    const size_t sort_bytes = SortItems == 0 ? 0 : sizeof(typename sort::storage_type);
    return round16(tile > sort_bytes ? tile : sort_bytes);
  }
  MXI_HOST_DEVICE static constexpr size_t bytes(int64_t width, int k) {
    return head_bytes() + body_bytes(width) + (SortItems == 0 ? 0 : static_cast<size_t>(k) * 8);
  }
  /// The widest row that fits `limit` bytes (0 if none).
  static int64_t max_width(size_t limit, int k) {
    const size_t fixed = head_bytes() + (SortItems == 0 ? 0 : static_cast<size_t>(k) * 8);
    if (limit <= fixed) return 0;
    int64_t vectors = static_cast<int64_t>((limit - fixed) / 16);
    if (vectors > max_vectors) vectors = max_vectors;
    const int64_t width = 4 * vectors - 3;  // the largest width with tile_vectors(width) == vectors
    return width > 0 && bytes(width, k) <= limit ? width : 0;
  }
};

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

/// Words [4v - mis, 4v - mis + 4) of a row of n words; those outside [0, n) read as 0. Only the
/// first and last vectors are partial; the others are one aligned 16-byte load.
MXI_DEVICE uint4 load_vector(const uint32_t* row, int v, int mis, int n) {
  const int lo = 4 * v - mis;
  if (lo >= 0 && lo + 3 < n) return *reinterpret_cast<const uint4*>(row + lo);
  uint32_t w[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) w[j] = lo + j >= 0 && lo + j < n ? row[lo + j] : 0u;
  return make_uint4(w[0], w[1], w[2], w[3]);
}

/// One block per row of at most `width` columns (longer rows are left to the multi-block passes):
/// see the file comment.
template <int Threads, int SortItems, class Keys, class Lengths, class Map>
__global__ __launch_bounds__(Threads, 1) void row_select_kernel(Keys keys, Lengths lengths, int k,
                                                                int64_t width, Map map, int32_t* out,
                                                                int64_t out_stride) {
  using smem_t = row_select_smem<Threads, SortItems>;
  using digits = block::radix_digits;
  extern __shared__ __align__(16) unsigned char row_select_shared[];
  auto& head = *reinterpret_cast<typename smem_t::head*>(row_select_shared);
  uint4* tile = reinterpret_cast<uint4*>(row_select_shared + smem_t::head_bytes());
  const int tid = static_cast<int>(threadIdx.x);

  const int64_t row = blockIdx.x;
  const int64_t length = lengths(row);
  if (length > width) return;  // a longer row: the multi-block passes select it
  int32_t* out_row = out + row * out_stride;
  if (length <= 0) {
    for (int s = tid; s < k; s += Threads) out_row[s] = -1;
    return;
  }
  const int n = static_cast<int>(length);
  const bool select = n > k;
  const uint32_t* src = keys.words(row);
  // Tile vector v holds columns [4v - mis, 4v - mis + 4): global and shared vectors line up.
  const int mis = static_cast<int>((reinterpret_cast<uintptr_t>(src) / 4) % 4);
  const int vectors = (n + mis + 3) / 4;

  for (int b = tid; b < digits::max_bins; b += Threads) head.hist[b] = 0;
  __syncthreads();
  {
    // Several 16-byte loads in flight per thread, then keys to shared memory and digit 0 counted.
    constexpr int batch = 4;
    run_counter run{head.hist};
    for (int base = 0; base < vectors; base += batch * Threads) {
      uint4 raw[batch];
#pragma unroll
      for (int i = 0; i < batch; ++i) {
        const int v = base + i * Threads + tid;
        raw[i] = v < vectors ? load_vector(src, v, mis, n) : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int i = 0; i < batch; ++i) {
        const int v = base + i * Threads + tid;
        if (v >= vectors) continue;
        uint32_t w[4];
        unpack(raw[i], w);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          w[j] = Keys::key_of(w[j]);
          const int c = 4 * v + j - mis;
          if (select && c >= 0 && c < n) run.add(digits::digit(w[j], 0));
        }
        tile[v] = make_uint4(w[0], w[1], w[2], w[3]);
      }
    }
    run.flush();
  }
  __syncthreads();

  // The threshold (the digits of a key above `shift`) and how many keys with those digits are
  // taken; a row of n <= k takes everything (key > 0, or == 0 with all n of those wanted).
  uint32_t threshold = 0, shift = 0, rest = static_cast<uint32_t>(n < k ? n : k);
  if (select) {
    rest = static_cast<uint32_t>(k);
#pragma unroll 1
    for (int pass = 0; pass < digits::passes; ++pass) {
      if (pass > 0) {
        for (int b = tid; b < digits::max_bins; b += Threads) head.hist[b] = 0;
        __syncthreads();
        run_counter run{head.hist};
        for (int v = tid; v < vectors; v += Threads) {
          uint32_t w[4];
          unpack(tile[v], w);
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            const int c = 4 * v + j - mis;
            if (c >= 0 && c < n && digits::matches(w[j], pass, threshold))
              run.add(digits::digit(w[j], pass));
          }
        }
        run.flush();
        __syncthreads();
      }
      uint32_t in_bin;
      const uint32_t digit = smem_t::find::find(head.hist, rest, in_bin, head.step.find);
      threshold = (threshold << (pass == 2 ? 10 : 11)) | digit;
      shift = static_cast<uint32_t>(digits::shift(pass));
      rest = in_bin;
      // Every key of the bin is taken: lower digits cannot change the set.
      const bool settled = head.hist[digit] == rest;
      __syncthreads();  // all have read the bin before the next pass clears it
      if (settled) break;
    }
  }

  // Compaction: thread t owns `per` consecutive vectors, so one scan orders the columns. Even
  // strides would put a quarter-warp's 16-byte reads in one bank group: rotate the visiting order.
  const int per = (vectors + Threads - 1) / Threads;
  const int first = tid * per;
  const int rotate = per % 2 == 0 ? tid % per : 0;
  uint64_t above = 0, equal = 0;
  for (int i = 0; i < per; ++i) {
    const int local = i + rotate < per ? i + rotate : i + rotate - per;
    const int v = first + local;
    if (v >= vectors) continue;
    uint32_t w[4];
    unpack(tile[v], w);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int c = 4 * v + j - mis;
      if (c < 0 || c >= n) continue;
      above |= static_cast<uint64_t>((w[j] >> shift) > threshold) << (4 * local + j);
      equal |= static_cast<uint64_t>((w[j] >> shift) == threshold) << (4 * local + j);
    }
  }
  // One 32-bit scan of (above << 16 | equal): a 64-bit one spills at 1024 threads.
  uint32_t before, total;
  smem_t::scan::exclusive_sum(
      (static_cast<uint32_t>(platform::popcount(above)) << 16) | static_cast<uint32_t>(platform::popcount(equal)),
      before, total, head.step.scan);
  uint32_t ties_seen = before & 0xFFFFu;
  uint32_t slot = (before >> 16) + (ties_seen < rest ? ties_seen : rest);
  const uint32_t* tile_words = reinterpret_cast<const uint32_t*>(tile);
  uint64_t* staged = reinterpret_cast<uint64_t*>(row_select_shared + smem_t::head_bytes() +
                                                 smem_t::body_bytes(width));
  for (uint64_t winners = above | equal; winners != 0;) {
    const uint64_t low = winners & (~winners + 1);
    winners ^= low;
    if (equal & low) {
      if (ties_seen++ >= rest) {  // the later ties of this thread are not taken either
        winners &= ~equal;
        continue;
      }
    }
    const int word = 4 * first + platform::popcount(low - 1);
    const int column = word - mis;
    if constexpr (SortItems == 0)
      out_row[slot++] = map(row, column);
    else
      staged[slot++] = (static_cast<uint64_t>(~tile_words[word]) << 32) | static_cast<uint32_t>(column);
  }
  const int taken = n < k ? n : k;
  if constexpr (SortItems == 0) {
    for (int s = taken + tid; s < k; s += Threads) out_row[s] = -1;
  } else {
    __syncthreads();  // every winner staged, the tile no longer read: the sort may reuse it
    uint64_t item[SortItems];
#pragma unroll
    for (int j = 0; j < SortItems; ++j) {
      const int r = tid * SortItems + j;
      item[j] = r < taken ? staged[r] : ~uint64_t{0};  // padding: after every real item (stable)
    }
    // On the score bits only: a radix sort is stable, so equal scores keep the staged (ascending
    // column) order, and 8 digit passes replace 8 + column_bits / 4.
    smem_t::sort::sort(item, *reinterpret_cast<typename smem_t::sort::storage_type*>(tile), 32, 64);
    const uint64_t column_mask = 0xFFFFFFFFu;
#pragma unroll
    for (int j = 0; j < SortItems; ++j) {
      const int r = tid * SortItems + j;
      if (r < k) out_row[r] = r < taken ? map(row, static_cast<int64_t>(item[j] & column_mask)) : -1;
    }
  }
}

}  // namespace mxi::device::detail
