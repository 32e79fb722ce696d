// Global -> shared copies that overlap compute: cp.async on NVIDIA sm_80 and later, a plain
// load and store elsewhere (then the waits are no-ops and the kernel's barriers order it).
#pragma once

#include <cstdint>

#include "mxi/config.hpp"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define MXI_ARCH_CP_ASYNC 1
#else
#define MXI_ARCH_CP_ASYNC 0
#endif

namespace mxi::arch {

#if MXI_GPU_COMPILER

template <int Bytes>
MXI_DEVICE void copy_async(void* smem, const void* gmem) {
  static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "cp.async sizes");
#if MXI_ARCH_CP_ASYNC
  const auto dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  if constexpr (Bytes == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(gmem));
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(dst), "l"(gmem), "n"(Bytes));
  }
#else
  if constexpr (Bytes == 16) {
    *static_cast<uint4*>(smem) = *static_cast<const uint4*>(gmem);
  } else if constexpr (Bytes == 8) {
    *static_cast<uint2*>(smem) = *static_cast<const uint2*>(gmem);
  } else {
    *static_cast<uint32_t*>(smem) = *static_cast<const uint32_t*>(gmem);
  }
#endif
}

/// Closes the group of copies issued since the last commit.
MXI_DEVICE void copy_commit() {
#if MXI_ARCH_CP_ASYNC
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}

/// Waits until at most `Pending` committed groups of this thread are still in flight.
template <int Pending>
MXI_DEVICE void copy_wait() {
#if MXI_ARCH_CP_ASYNC
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending));
#endif
}

#endif  // MXI_GPU_COMPILER

}  // namespace mxi::arch
