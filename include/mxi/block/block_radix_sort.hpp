// Block-wide ascending sort of unsigned keys held in a blocked arrangement (thread i holds ranks
// i*Items .. i*Items + Items-1 afterwards).
#pragma once

#include <type_traits>

#include "mxi/block/detail/vendor.hpp"

namespace mxi::block {

template <class Key, int BlockThreads, int ItemsPerThread>
class block_radix_sort {
  static_assert(std::is_unsigned<Key>::value, "block_radix_sort sorts unsigned keys");
  static_assert(BlockThreads > 0 && BlockThreads <= 1024, "block_radix_sort: 1 .. 1024 threads");
  static_assert(ItemsPerThread >= 1, "block_radix_sort: at least one item a thread");
#if MXI_BLOCK_ROCPRIM
  using impl = ::rocprim::block_radix_sort<Key, BlockThreads, ItemsPerThread>;
#else
  using impl = ::cub::BlockRadixSort<Key, BlockThreads, ItemsPerThread>;
#endif

 public:
  static constexpr int capacity = BlockThreads * ItemsPerThread;
#if MXI_BLOCK_ROCPRIM
  using storage_type = typename impl::storage_type;
#else
  using storage_type = typename impl::TempStorage;
#endif

  /// Sorts on bits [begin_bit, end_bit) only: callers pass the bits their keys use.
  MXI_DEVICE static void sort(Key (&keys)[ItemsPerThread], storage_type& storage, int begin_bit,
                              int end_bit) {
#if MXI_BLOCK_ROCPRIM
    impl().sort(keys, storage, static_cast<unsigned>(begin_bit), static_cast<unsigned>(end_bit));
#else
    impl(storage).Sort(keys, begin_bit, end_bit);
#endif
  }
};

}  // namespace mxi::block
