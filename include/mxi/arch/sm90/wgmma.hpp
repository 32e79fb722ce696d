// The Hopper warpgroup instructions the sm90 logits tile issues: wgmma (u8 x s8 into s32, e4m3 x
// e4m3 into f32, A from registers, B from shared memory through a no-swizzle descriptor), its
// fence, commit and wait, the operand fences that keep the compiler's hands off asynchronously
// written registers, the warpgroup's named barrier, and the register hand-off between
// warpgroups (setmaxnreg). Outside the sm_90a device pass every instruction traps or is empty.
#pragma once

#include <cstdint>

#include "mxi/config.hpp"
#include "mxi/platform/intrinsics.hpp"

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define MXI_ARCH_SM90_WGMMA 1
#else
#define MXI_ARCH_SM90_WGMMA 0
#endif

namespace mxi::arch::sm90 {

inline constexpr int wave_size = 32;
inline constexpr int warpgroup_threads = 128;
/// Shared memory a block may opt in to on every sm_90 part (227 KiB).
inline constexpr int max_shared_bytes = 227 * 1024;

#if MXI_GPU_COMPILER

MXI_DEVICE void wgmma_fence() {
#if MXI_ARCH_SM90_WGMMA
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
MXI_DEVICE void wgmma_commit() {
#if MXI_ARCH_SM90_WGMMA
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
/// Waits until at most `Pending` committed wgmma groups of this warpgroup are in flight.
template <int Pending>
MXI_DEVICE void wgmma_wait() {
#if MXI_ARCH_SM90_WGMMA
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
#endif
}
/// Keeps the compiler from moving accesses of `d` across the asm around it (a wgmma's
/// accumulators are written asynchronously, after the issuing instruction).
template <int Count>
MXI_DEVICE void fence_operands(float (&d)[Count]) {
#pragma unroll
  for (int i = 0; i < Count; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
template <int Count>
MXI_DEVICE void fence_operands(int32_t (&d)[Count]) {
#pragma unroll
  for (int i = 0; i < Count; ++i) asm volatile("" : "+r"(d[i])::"memory");
}
/// Makes this thread's shared-memory stores visible to the tensor cores (async proxy).
MXI_DEVICE void fence_async_shared() {
#if MXI_ARCH_SM90_WGMMA
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}
/// Barrier of the 128 threads of the calling warpgroup: named barrier 1 + its index in the block
/// (0 is __syncthreads'), so several warpgroups of a block synchronise apart.
MXI_DEVICE void warpgroup_sync() {
#if defined(__CUDA_ARCH__)
  asm volatile("bar.sync %0, 128;\n" ::"r"(1 + static_cast<int>(threadIdx.x) / warpgroup_threads) : "memory");
#endif
}
/// Sets the calling warpgroup's registers a thread to Count (a multiple of 8 in [24, 256]): fewer
/// hands them back to the block's pool, more waits until the pool holds them.
template <int Count, bool Increase>
MXI_DEVICE void set_registers() {
  static_assert(Count % 8 == 0 && Count >= 24 && Count <= 256,
                "setmaxnreg: a multiple of 8 in [24, 256]");
#if MXI_ARCH_SM90_WGMMA
  if constexpr (Increase)
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Count));
  else
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Count));
#endif
}
/// Shared-memory matrix descriptor, no swizzle: start address, LBO (K direction) and SBO (M/N
/// direction) in bytes, each >> 4.
MXI_DEVICE uint64_t smem_descriptor(uint32_t address, uint32_t lbo, uint32_t sbo) {
  return static_cast<uint64_t>((address & 0x3FFFFu) >> 4) | (static_cast<uint64_t>(lbo >> 4) << 16) |
         (static_cast<uint64_t>(sbo >> 4) << 32);
}
/// The descriptor from its two words: `low` (start field and LBO) varies from MMA to MMA, the
/// high word (SBO) is a constant, so stepping the start is 32-bit arithmetic.
template <uint32_t Sbo>
MXI_DEVICE uint64_t smem_descriptor_of_low(uint32_t low) {
  return static_cast<uint64_t>(low) | (static_cast<uint64_t>(Sbo >> 4) << 32);
}

/// d = A (64 keys x 32, e4m3, registers) * B (32 x 32 columns, e4m3, shared memory), f32,
/// from zero (scale-d = 0: C is not read).
MXI_DEVICE void wgmma_m64n32k32_e4m3(float (&d)[16], const uint32_t (&a)[4], uint64_t desc) {
#if MXI_ARCH_SM90_WGMMA
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 0, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k32.f32.e4m3.e4m3 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
      "{%16, %17, %18, %19}, %20, p, 1, 1;\n}\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3]), "=f"(d[4]), "=f"(d[5]), "=f"(d[6]), "=f"(d[7]), "=f"(d[8]), "=f"(d[9]), "=f"(d[10]), "=f"(d[11]), "=f"(d[12]), "=f"(d[13]), "=f"(d[14]), "=f"(d[15])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
#else
  platform::trap();
#endif
}

/// d = A (64 keys x 32, e4m3, registers) * B (32 x 64 columns, e4m3, shared memory), f32,
/// from zero (scale-d = 0: C is not read).
MXI_DEVICE void wgmma_m64n64k32_e4m3(float (&d)[32], const uint32_t (&a)[4], uint64_t desc) {
#if MXI_ARCH_SM90_WGMMA
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 0, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "{%32, %33, %34, %35}, %36, p, 1, 1;\n}\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3]), "=f"(d[4]), "=f"(d[5]), "=f"(d[6]), "=f"(d[7]), "=f"(d[8]), "=f"(d[9]), "=f"(d[10]), "=f"(d[11]), "=f"(d[12]), "=f"(d[13]), "=f"(d[14]), "=f"(d[15]), "=f"(d[16]), "=f"(d[17]), "=f"(d[18]), "=f"(d[19]), "=f"(d[20]), "=f"(d[21]), "=f"(d[22]), "=f"(d[23]), "=f"(d[24]), "=f"(d[25]), "=f"(d[26]), "=f"(d[27]), "=f"(d[28]), "=f"(d[29]), "=f"(d[30]), "=f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
#else
  platform::trap();
#endif
}

/// d (+)= A (64 keys x 32, u8, registers) * B (32 x 32 columns, s8, shared memory), s32, exact.
template <bool Accumulate>
MXI_DEVICE void wgmma_m64n32k32_u8s8(int32_t (&d)[16], const uint32_t (&a)[4], uint64_t desc) {
#if MXI_ARCH_SM90_WGMMA
  if constexpr (!Accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, 0, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n32k32.s32.u8.s8 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
        "{%16, %17, %18, %19}, %20, p;\n}\n"
        : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3]), "=r"(d[4]), "=r"(d[5]), "=r"(d[6]), "=r"(d[7]), "=r"(d[8]), "=r"(d[9]), "=r"(d[10]), "=r"(d[11]), "=r"(d[12]), "=r"(d[13]), "=r"(d[14]), "=r"(d[15])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
  }
  if constexpr (Accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n32k32.s32.u8.s8 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
        "{%16, %17, %18, %19}, %20, p;\n}\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
  }
#else
  platform::trap();
#endif
}

/// d (+)= A (64 keys x 32, u8, registers) * B (32 x 64 columns, s8, shared memory), s32, exact.
template <bool Accumulate>
MXI_DEVICE void wgmma_m64n64k32_u8s8(int32_t (&d)[32], const uint32_t (&a)[4], uint64_t desc) {
#if MXI_ARCH_SM90_WGMMA
  if constexpr (!Accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, 0, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k32.s32.u8.s8 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
        "{%32, %33, %34, %35}, %36, p;\n}\n"
        : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3]), "=r"(d[4]), "=r"(d[5]), "=r"(d[6]), "=r"(d[7]), "=r"(d[8]), "=r"(d[9]), "=r"(d[10]), "=r"(d[11]), "=r"(d[12]), "=r"(d[13]), "=r"(d[14]), "=r"(d[15]), "=r"(d[16]), "=r"(d[17]), "=r"(d[18]), "=r"(d[19]), "=r"(d[20]), "=r"(d[21]), "=r"(d[22]), "=r"(d[23]), "=r"(d[24]), "=r"(d[25]), "=r"(d[26]), "=r"(d[27]), "=r"(d[28]), "=r"(d[29]), "=r"(d[30]), "=r"(d[31])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
  }
  if constexpr (Accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k32.s32.u8.s8 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
        "{%32, %33, %34, %35}, %36, p;\n}\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
  }
#else
  platform::trap();
#endif
}

template <int N>
MXI_DEVICE void wgmma_e4m3(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t desc) {
  if constexpr (N == 64) wgmma_m64n64k32_e4m3(d, a, desc);
  else wgmma_m64n32k32_e4m3(d, a, desc);
}
template <int N, bool Accumulate>
MXI_DEVICE void wgmma_u8s8(int32_t (&d)[N / 2], const uint32_t (&a)[4], uint64_t desc) {
  if constexpr (N == 64) wgmma_m64n64k32_u8s8<Accumulate>(d, a, desc);
  else wgmma_m64n32k32_u8s8<Accumulate>(d, a, desc);
}

#endif  // MXI_GPU_COMPILER

}  // namespace mxi::arch::sm90
