// A 64-lane wave on NVIDIA, for test builds only (MXI_EMULATE_WAVE64=1): two consecutive warps
// act as one gfx9 wave, so the library's wave64 code (64-bit lane masks, shuffles across the
// 32-lane boundary, wave64 launch shapes) runs on an NVIDIA GPU before an AMD one is at hand.
// intrinsics.hpp sends every WaveSize == 64 operation here and wave.hpp reports 64 for every
// device. Cross-warp exchange goes through a per-wave shared-memory slot array and the wave's
// named barrier (`barrier.sync 1 + wave, 64`): slow, exact as on gfx9 as long as every lane of
// the wave takes part, which the library's contract already asks.
//
// What it cannot model: lockstep timing (the two warps run independently between exchanges, so
// code that relies on lockstep without wave_barrier is not caught), LDS bank behaviour, the
// scaled MFMA tile (gfx950 stays a host emulation, tests/test_mfma_emulation.cpp), and rocPRIM's
// own wave64 code (block primitives are CUB here). Limits: blocks of whole waves and at most 15
// of them (960 threads: barrier 0 is __syncthreads, ids 1..15 the waves), else it traps; the
// barrier ids are the ones the sm90 tile's warpgroup barrier uses, but that tile runs only at
// wave size 32, so no kernel mixes the two.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "mxi/config.hpp"
#include "mxi/platform/runtime.hpp"

#if defined(MXI_EMULATE_WAVE64) && MXI_EMULATE_WAVE64
#if MXI_PLATFORM_HIP
#error "MXI_EMULATE_WAVE64 emulates gfx9 waves on NVIDIA; AMD devices run wave64 natively"
#endif
#define MXI_PLATFORM_WAVE64_EMULATED 1
#else
#define MXI_PLATFORM_WAVE64_EMULATED 0
#endif

namespace mxi::platform::wave64 {

inline constexpr bool emulated = MXI_PLATFORM_WAVE64_EMULATED;
inline constexpr int max_waves = 15;  ///< named barriers 1..15

// Declared in every CUDA build, since intrinsics.hpp names them in branches it discards unless
// emulated; only an emulating build calls them.
#if MXI_GPU_COMPILER && !MXI_PLATFORM_HIP

MXI_DEVICE int lane() { return static_cast<int>(threadIdx.x) & 63; }
MXI_DEVICE int wave() { return static_cast<int>(threadIdx.x) >> 6; }

/// Traps in a block the emulation cannot serve (see the file comment), before any slot or
/// barrier id past the limit is touched.
MXI_DEVICE void check_block() {
  if (blockDim.x % 64 != 0 || blockDim.x > max_waves * 64 || blockDim.y * blockDim.z != 1) __trap();
}

/// The wave's 64 exchange slots (one static array for every wave slot of the block).
MXI_DEVICE uint64_t* slots() {
  __shared__ uint64_t all[max_waves * 64];
  check_block();
  return all + wave() * 64;
}

/// Barrier of the wave's two warps, ordering their shared-memory accesses.
MXI_DEVICE void sync() {
  check_block();
  asm volatile("barrier.sync %0, 64;" : : "r"(1 + wave()) : "memory");
}

/// Every lane gets the value lane `src` (0..63) passed.
template <class T>
MXI_DEVICE T exchange(T v, int src) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8, "values of at most 8 bytes");
  uint64_t* s = slots();
  uint64_t word = 0;
  ::memcpy(&word, &v, sizeof(T));
  s[lane()] = word;
  sync();
  word = s[src];
  sync();  // every lane has read before any lane writes its slot again
  ::memcpy(&v, &word, sizeof(T));
  return v;
}

/// The 64-bit ballot: each warp's 32 bits, joined through the slots.
MXI_DEVICE uint64_t ballot(bool predicate) {
  uint64_t* s = slots();
  const uint32_t half = __ballot_sync(0xFFFFFFFFu, predicate);
  if ((lane() & 31) == 0) s[lane() >> 5] = half;
  sync();
  const uint64_t mask = s[0] | (s[1] << 32);
  sync();
  return mask;
}

#endif

}  // namespace mxi::platform::wave64
