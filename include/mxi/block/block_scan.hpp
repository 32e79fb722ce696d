// Block-wide exclusive prefix sum whose total reaches every thread: the one scan the top-k,
// candidate and compaction kernels need.
#pragma once

#include "mxi/block/detail/vendor.hpp"

namespace mxi::block {

template <class T, int BlockThreads>
class block_scan {
  static_assert(BlockThreads > 0 && BlockThreads <= 1024, "block_scan: 1 .. 1024 threads");
#if MXI_BLOCK_ROCPRIM
  using impl = ::rocprim::block_scan<T, BlockThreads>;
#else
  using impl = ::cub::BlockScan<T, BlockThreads>;
#endif

 public:
#if MXI_BLOCK_ROCPRIM
  using storage_type = typename impl::storage_type;
#else
  using storage_type = typename impl::TempStorage;
#endif

  /// `output` = sum of `input` over lower thread ids, `total` = sum over the block (in every
  /// thread). Reusing `storage` afterwards needs a barrier.
  MXI_DEVICE static void exclusive_sum(T input, T& output, T& total, storage_type& storage) {
#if MXI_BLOCK_ROCPRIM
    impl().exclusive_scan(input, output, T(0), total, storage, ::rocprim::plus<T>());
#else
    impl(storage).ExclusiveSum(input, output, total);
#endif
  }

  /// Sum over the block, in every thread.
  MXI_DEVICE static T sum(T input, storage_type& storage) {
    T ignored, total;
    exclusive_sum(input, ignored, total, storage);
    return total;
  }
};

}  // namespace mxi::block
