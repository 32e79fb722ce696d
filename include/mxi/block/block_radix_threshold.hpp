// One step of a radix select: in a histogram of one digit, find the bin holding the k-th largest
// key, and how many keys of that bin are still wanted.
#pragma once

#include <cstdint>

#include "mxi/block/block_scan.hpp"

namespace mxi::block {

/// The bin block_radix_threshold::find picks: `bin`, the keys still wanted from it (`rest`), and
/// every key it holds (`count`, >= rest; the bin settles the threshold when they are equal).
struct radix_pick {
  uint32_t bin, rest, count;
};

template <int BlockThreads, int Bins>
class block_radix_threshold {
  static constexpr int per_thread = (Bins + BlockThreads - 1) / BlockThreads;
  using scan = block_scan<uint32_t, BlockThreads>;

 public:
  struct storage_type {
    typename scan::storage_type scan;
    radix_pick pick;
  };

  /// `hist[b]` counts keys with digit b; 1 <= k <= sum of hist. Returns, in every thread, the bin
  /// b with count(> b) < k <= count(>= b), k - count(> b) and hist[b]. `Counts` is any
  /// pointer-like type (a volatile pointer reads counts other blocks just wrote); each count is
  /// read once, before the scan's first barrier.
  template <class Counts>
  MXI_DEVICE static radix_pick find(Counts hist, uint32_t k, storage_type& storage) {
    // Thread 0 takes the highest bins, so an exclusive scan counts the keys above each thread.
    uint32_t counts[per_thread];
    uint32_t local = 0;
#pragma unroll
    for (int j = 0; j < per_thread; ++j) {
      const int b = Bins - 1 - (static_cast<int>(threadIdx.x) * per_thread + j);
      counts[j] = b >= 0 ? hist[b] : 0u;
      local += counts[j];
    }
    uint32_t above, total;
    scan::exclusive_sum(local, above, total, storage.scan);
#pragma unroll
    for (int j = 0; j < per_thread; ++j) {
      if (above < k && above + counts[j] >= k) {
        const int b = Bins - 1 - (static_cast<int>(threadIdx.x) * per_thread + j);
        storage.pick = {static_cast<uint32_t>(b), k - above, counts[j]};
      }
      above += counts[j];
    }
    __syncthreads();
    const radix_pick pick = storage.pick;
    __syncthreads();  // storage may be reused by the caller
    return pick;
  }
};

}  // namespace mxi::block
