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

/// A plain copy of 4, 8 or 16 bytes (one vector load and store).
template <int Bytes>
MXI_DEVICE void copy_sync(void* smem, const void* gmem) {
  static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "vector sizes");
  if constexpr (Bytes == 16) {
    *static_cast<uint4*>(smem) = *static_cast<const uint4*>(gmem);
  } else if constexpr (Bytes == 8) {
    *static_cast<uint2*>(smem) = *static_cast<const uint2*>(gmem);
  } else {
    *static_cast<uint32_t*>(smem) = *static_cast<const uint32_t*>(gmem);
  }
}

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
  copy_sync<Bytes>(smem, gmem);
#endif
}

/// The two ways a loader can move its bytes, as template arguments: `sync_copies` is done when
/// the copying thread's stores are (the caller's barrier publishes them); `async_copies` issues
/// cp.async, done after the caller's copy_commit and copy_wait (then its barrier).
struct sync_copies {
  template <int Bytes>
  MXI_DEVICE static void copy(void* smem, const void* gmem) {
    copy_sync<Bytes>(smem, gmem);
  }
};
struct async_copies {
  template <int Bytes>
  MXI_DEVICE static void copy(void* smem, const void* gmem) {
    copy_async<Bytes>(smem, gmem);
  }
};

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

/// Bulk copies (sm90): one thread moves whole contiguous ranges global -> shared, and their
/// completion is counted in bytes on a shared-memory barrier (mbarrier) the readers wait on. The
/// same barriers order the stages of a producer/consumer pipeline (arrive, wait on a parity).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define MXI_ARCH_BULK_COPY 1
#else
#define MXI_ARCH_BULK_COPY 0
#endif

MXI_DEVICE uint32_t shared_address(const void* p) {
#if defined(__CUDA_ARCH__)
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
#else
  return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(p));
#endif
}

/// Makes a shared-memory barrier (mbarrier) ready for `count` arrivals a phase (then a block
/// barrier before any other thread uses it).
MXI_DEVICE void barrier_init(uint64_t* bar, uint32_t count) {
#if MXI_ARCH_BULK_COPY
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(shared_address(bar)), "r"(count));
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}
/// An L2 policy (createpolicy) for bytes a kernel reads once, `once` (the pages of a decode's
/// keys: their lines are the first to go, so that what the kernel writes, the scores the top-k
/// reads next, stays in L2 rather than being pushed out by the stream of keys), or again (the
/// default eviction).
MXI_DEVICE uint64_t l2_policy(bool once) {
  uint64_t policy = 0;
#if MXI_ARCH_BULK_COPY
  if (once)
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  else
    asm volatile("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;\n" : "=l"(policy));
#else
  (void)once;
#endif
  return policy;
}
/// Brings [data, data + bytes) into L2, a 128-byte line a thread of the grid (every thread calls
/// it): a hint that completes nothing and returns nothing, so it may read ahead of the kernel
/// that writes the bytes (L2 is where global memory is coherent). A no-op without bulk copies.
MXI_DEVICE void prefetch_l2(const void* data, int64_t bytes) {
#if MXI_ARCH_BULK_COPY
  const int64_t threads = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const auto* bytes_at = static_cast<const unsigned char*>(data);
  for (int64_t line = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       line * 128 < bytes; line += threads)
    asm volatile("prefetch.global.L2 [%0];\n" ::"l"(bytes_at + line * 128));
#else
  (void)data, (void)bytes;
#endif
}
/// Copies `bytes` (a multiple of 16, both addresses 16-byte aligned), their lines kept in L2 by
/// `policy` (l2_policy); their arrival is counted on `bar`, whose phase must expect them
/// (barrier_arrive_expect) before it can complete.
MXI_DEVICE void bulk_copy(void* smem, const void* gmem, uint32_t bytes, uint64_t* bar,
                          uint64_t policy) {
#if MXI_ARCH_BULK_COPY
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], "
      "[%1], %2, [%3], %4;\n" ::"r"(shared_address(smem)),
      "l"(gmem), "r"(bytes), "r"(shared_address(bar)), "l"(policy)
      : "memory");
#else
  (void)smem, (void)gmem, (void)bytes, (void)bar, (void)policy;
#endif
}
/// This thread's arrival, declaring `bytes` more of bulk copies the phase waits for.
MXI_DEVICE void barrier_arrive_expect(uint64_t* bar, uint32_t bytes) {
#if MXI_ARCH_BULK_COPY
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(shared_address(bar)), "r"(bytes)
               : "memory");
#endif
}
/// One arrival of this thread (release: its earlier shared-memory writes are seen by the threads
/// that wait on the phase).
MXI_DEVICE void barrier_arrive(uint64_t* bar) {
#if MXI_ARCH_BULK_COPY
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(shared_address(bar)) : "memory");
#endif
}
/// Waits for the phase of parity `parity` of `bar` to complete (acquire).
MXI_DEVICE void barrier_wait(uint64_t* bar, uint32_t parity) {
#if MXI_ARCH_BULK_COPY
  asm volatile(
      "{\n.reg .pred done;\nwait:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait;\n}\n" ::"r"(shared_address(bar)),
      "r"(parity)
      : "memory");
#endif
}
/// One arrival on `bar` once every cp.async this thread issued so far has landed: one of the
/// arrivals the barrier's count expects (noinc), so a warp's 32 lanes complete a phase of 32.
MXI_DEVICE void copy_arrive(uint64_t* bar) {
#if MXI_ARCH_BULK_COPY
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(shared_address(bar))
               : "memory");
#endif
}
/// Orders this thread's earlier shared-memory accesses (generic proxy) before the bulk copies it
/// issues next (async proxy) into the same bytes.
MXI_DEVICE void fence_proxy_async() {
#if MXI_ARCH_BULK_COPY
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

#endif  // MXI_GPU_COMPILER

}  // namespace mxi::arch
