// Cross-lane operations with the wave size as a template parameter (32 on NVIDIA, 64 on gfx9),
// chosen on the host per device (wave.hpp); device code never reads warpSize as a constant.
// Only this file, runtime.hpp, cluster.hpp (thread-block clusters) and wave64_emulation.hpp
// (64-lane waves on NVIDIA in test builds) name vendor intrinsics.
#pragma once

#include <cstdint>
#include <type_traits>

#include "mxi/config.hpp"
#include "mxi/platform/runtime.hpp"
#include "mxi/platform/wave64_emulation.hpp"

namespace mxi::platform {

/// Bit mask over the lanes of a wave of `WaveSize` lanes.
template <int WaveSize>
using lane_mask_t = std::conditional_t<(WaveSize > 32), uint64_t, uint32_t>;

template <int WaveSize>
inline constexpr lane_mask_t<WaveSize> full_lane_mask = ~lane_mask_t<WaveSize>(0);

/// Wave sizes NVIDIA device code takes: 32, and 64 in MXI_EMULATE_WAVE64 test builds.
template <int WaveSize>
inline constexpr bool nvidia_wave_size = WaveSize == 32 || (wave64::emulated && WaveSize == 64);

#if MXI_GPU_COMPILER

/// Lane index inside the wave (blocks are one-dimensional in this library).
template <int WaveSize>
MXI_DEVICE int lane_id() {
  return static_cast<int>(threadIdx.x) & (WaveSize - 1);
}
template <int WaveSize>
MXI_DEVICE int wave_id() {
  return static_cast<int>(threadIdx.x) / WaveSize;
}

/// `x`, which the caller knows to be the same in every lane of the wave, as the first active
/// lane holds it: AMD then keeps it in a scalar register and branches on it without lane masks
/// (NVIDIA has no scalar registers: `x` itself).
MXI_DEVICE int wave_uniform(int x) {
#if MXI_PLATFORM_HIP
  return __builtin_amdgcn_readfirstlane(x);
#else
  return x;
#endif
}

template <int WaveSize, class T>
MXI_DEVICE T shuffle_xor(T v, int lane_mask) {
#if MXI_PLATFORM_HIP
  return __shfl_xor(v, lane_mask, WaveSize);
#else
  static_assert(nvidia_wave_size<WaveSize>, "NVIDIA warps have 32 lanes");
  if constexpr (WaveSize == 64) {  // as gfx9: a lane outside the wave reads its own value
    const int src = lane_id<64>() ^ lane_mask;
    return wave64::exchange(v, src < 64 ? src : lane_id<64>());
  } else {
    return __shfl_xor_sync(full_lane_mask<WaveSize>, v, lane_mask, WaveSize);
  }
#endif
}

template <int WaveSize, class T>
MXI_DEVICE T shuffle_down(T v, int delta) {
#if MXI_PLATFORM_HIP
  return __shfl_down(v, static_cast<unsigned>(delta), WaveSize);
#else
  static_assert(nvidia_wave_size<WaveSize>, "NVIDIA warps have 32 lanes");
  if constexpr (WaveSize == 64) {
    const int src = lane_id<64>() + delta;
    return wave64::exchange(v, src < 64 ? src : lane_id<64>());
  } else {
    return __shfl_down_sync(full_lane_mask<WaveSize>, v, static_cast<unsigned>(delta), WaveSize);
  }
#endif
}

template <int WaveSize, class T>
MXI_DEVICE T shuffle_idx(T v, int src_lane) {
#if MXI_PLATFORM_HIP
  return __shfl(v, src_lane, WaveSize);
#else
  static_assert(nvidia_wave_size<WaveSize>, "NVIDIA warps have 32 lanes");
  if constexpr (WaveSize == 64) {
    return wave64::exchange(v, src_lane & 63);
  } else {
    return __shfl_sync(full_lane_mask<WaveSize>, v, src_lane, WaveSize);
  }
#endif
}

/// Lanes whose `predicate` holds (every lane of the wave must call it).
template <int WaveSize>
MXI_DEVICE lane_mask_t<WaveSize> ballot(bool predicate) {
#if MXI_PLATFORM_HIP
  return static_cast<lane_mask_t<WaveSize>>(__ballot(predicate));
#else
  static_assert(nvidia_wave_size<WaveSize>, "NVIDIA warps have 32 lanes");
  if constexpr (WaveSize == 64) return wave64::ballot(predicate);
  else return __ballot_sync(full_lane_mask<WaveSize>, predicate);
#endif
}

template <int WaveSize>
MXI_DEVICE bool all(bool predicate) {
  return ballot<WaveSize>(predicate) == full_lane_mask<WaveSize>;
}
template <int WaveSize>
MXI_DEVICE bool any(bool predicate) {
  return ballot<WaveSize>(predicate) != 0;
}

template <class Mask>
MXI_DEVICE int popcount(Mask m) {
  if constexpr (sizeof(Mask) == 8) return __popcll(static_cast<unsigned long long>(m));
  else return __popc(static_cast<unsigned>(m));
}

/// Index of the highest set bit of a nonzero lane mask: the last lane whose predicate held.
template <class Mask>
MXI_DEVICE int highest_lane(Mask m) {
  if constexpr (sizeof(Mask) == 8)
    return 63 - __clzll(static_cast<long long>(m));
  else
    return 31 - __clz(static_cast<int>(m));
}

/// Exchange inside aligned groups of `Group` consecutive lanes (a power of two up to 32; src_lane
/// counts from the group's first lane): the same on every wave size, so a kernel built on groups
/// needs no wave-size parameter. Every lane of the wave calls it.
template <int Group, class T>
MXI_DEVICE T group_shuffle_xor(T v, int lane_mask) {
  static_assert(Group >= 2 && Group <= 32 && (Group & (Group - 1)) == 0, "a power of two up to 32");
#if MXI_PLATFORM_HIP
  return __shfl_xor(v, lane_mask, Group);
#else
  return __shfl_xor_sync(0xFFFFFFFFu, v, lane_mask, Group);
#endif
}
template <int Group, class T>
MXI_DEVICE T group_shuffle_idx(T v, int src_lane) {
  static_assert(Group >= 2 && Group <= 32 && (Group & (Group - 1)) == 0, "a power of two up to 32");
#if MXI_PLATFORM_HIP
  return __shfl(v, src_lane, Group);
#else
  return __shfl_sync(0xFFFFFFFFu, v, src_lane, Group);
#endif
}

/// Among the lanes of the hardware wave that reach this call together (divergent code: any
/// subset), whether all hold the first one's `value`; if so, `lanes` is how many they are and
/// `first` tells the first lane itself. Wave-size agnostic: it spans the hardware's wave (a warp
/// on NVIDIA, also in wave64-emulation builds), not a kernel's WaveSize.
MXI_DEVICE bool active_lanes_agree(uint32_t value, int& lanes, bool& first) {
#if MXI_PLATFORM_HIP
  const uint64_t active = __ballot(1);
  const auto lead = static_cast<uint32_t>(__builtin_amdgcn_readfirstlane(static_cast<int>(value)));
  if (static_cast<uint64_t>(__ballot(value == lead)) != active) return false;
  lanes = __popcll(active);
  first = static_cast<int>(__lane_id()) == __ffsll(static_cast<unsigned long long>(active)) - 1;
#else
  const unsigned active = __activemask();
  const int leader = __ffs(active) - 1;
  const uint32_t lead = __shfl_sync(active, value, leader);
  if (__ballot_sync(active, value == lead) != active) return false;
  lanes = __popc(active);
  first = static_cast<int>(threadIdx.x % 32) == leader;
#endif
  return true;
}

/// Orders the lanes of one wave (memory and execution) where the vendor needs it.
template <int WaveSize>
MXI_DEVICE void wave_barrier() {
#if MXI_PLATFORM_HIP
  __builtin_amdgcn_wave_barrier();
#else
  static_assert(nvidia_wave_size<WaveSize>, "NVIDIA warps have 32 lanes");
  if constexpr (WaveSize == 64) wave64::sync();
  else __syncwarp(full_lane_mask<WaveSize>);
#endif
}

/// c + the dot product of four signed bytes of a with four of b (dp4a / v_dot4_i32_i8).
MXI_DEVICE int dot4_i8(int a, int b, int c) {
#if !MXI_PLATFORM_HIP
  return __dp4a(a, b, c);
#elif defined(__gfx942__) || defined(__gfx950__) || defined(__gfx90a__) || defined(__gfx908__)
  return __builtin_amdgcn_sdot4(a, b, c, false);
#else
  for (int i = 0; i < 4; ++i)
    c += static_cast<int8_t>(a >> (8 * i)) * static_cast<int8_t>(b >> (8 * i));
  return c;
#endif
}

/// Stores a byte and asks the L2 to keep its line (an evict_last policy, sm_80 and up; a plain
/// store elsewhere). For bytes whose 32-byte sector other, later stores complete: a sector evicted
/// part-written costs the DRAM a read of the rest before the write.
MXI_DEVICE void store_byte_kept_in_l2(uint8_t* p, uint8_t v) {
#if !MXI_PLATFORM_HIP && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  uint64_t policy;
  asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  asm volatile("st.global.L2::cache_hint.b8 [%0], %1, %2;" ::"l"(p), "r"(static_cast<uint32_t>(v)),
               "l"(policy)
               : "memory");
#else
  *p = v;
#endif
}

/// Aborts the kernel (a path the host never selects for this target).
MXI_DEVICE void trap() {
#if MXI_PLATFORM_HIP
  __builtin_trap();
#else
  __trap();
#endif
}

/// Block-wide barrier with shared-memory ordering.
MXI_DEVICE void block_barrier() { __syncthreads(); }

/// Sum over the wave, every lane gets it (xor butterfly: the same order on every lane, so every
/// lane holds bitwise the same value).
template <int WaveSize, class T>
MXI_DEVICE T wave_sum(T v) {
  for (int m = WaveSize / 2; m > 0; m /= 2) v += shuffle_xor<WaveSize>(v, m);
  return v;
}

#endif  // MXI_GPU_COMPILER

}  // namespace mxi::platform
