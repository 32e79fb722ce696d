// One step of a radix select: in a histogram of one digit, find the bin holding the k-th largest
// key, and how many keys of that bin are still wanted.
#pragma once

#include <cstdint>

#include "mxi/block/block_scan.hpp"

namespace mxi::block {

template <int BlockThreads, int Bins>
class block_radix_threshold {
  static constexpr int per_thread = (Bins + BlockThreads - 1) / BlockThreads;
  using scan = block_scan<uint32_t, BlockThreads>;

 public:
  struct storage_type {
    typename scan::storage_type scan;
    uint32_t bin;
    uint32_t rest;
  };

  /// `hist[b]` counts keys with digit b; 1 <= k <= sum of hist. Returns the bin b with
  /// count(> b) < k <= count(>= b), and `k_in_bin` = k - count(> b), in every thread. `Counts` is
  /// any pointer-like type (a volatile pointer reads counts other blocks just wrote).
  template <class Counts>
  MXI_DEVICE static uint32_t find(Counts hist, uint32_t k, uint32_t& k_in_bin,
                                  storage_type& storage) {
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
        storage.bin = static_cast<uint32_t>(Bins - 1 - (static_cast<int>(threadIdx.x) * per_thread + j));
        storage.rest = k - above;
      }
      above += counts[j];
    }
    __syncthreads();
    k_in_bin = storage.rest;
    const uint32_t bin = storage.bin;
    __syncthreads();  // storage may be reused by the caller
    return bin;
  }
};

}  // namespace mxi::block
