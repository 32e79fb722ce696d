// Which logits tile a device runs: a policy type per target, chosen on the host from the device's
// compute capability. Kernels take the policy as a template parameter; `compiled_here` says
// whether the current device pass can run it (other passes compile a trap).
#pragma once

#include "mxi/arch/generic.hpp"
#include "mxi/platform/runtime.hpp"
#if !MXI_PLATFORM_HIP
#include "mxi/arch/sm90.hpp"
#endif

namespace mxi::arch {

enum class target { generic, sm90 };

template <int WaveSize>
struct generic_policy {
  static constexpr target kind = target::generic;
  static constexpr int wave_size = WaveSize;
  static constexpr bool compiled_here = true;
  template <int Heads>
  using scorer = generic::row_scorer<WaveSize, Heads>;
};

#if !MXI_PLATFORM_HIP
struct sm90_policy {
  static constexpr target kind = target::sm90;
  static constexpr int wave_size = sm90::wave_size;
#if !defined(__CUDA_ARCH__) || MXI_ARCH_SM90_MMA
  static constexpr bool compiled_here = true;
#else
  static constexpr bool compiled_here = false;
#endif
  template <int Heads>
  using scorer = sm90::row_scorer<Heads>;
};
#endif

/// The fastest tile this build has for `device` (FP8 mma from sm_89 on; sm_90a builds run it).
inline platform::error_t select_target(int device, target* out) {
  int major = 0, minor = 0;
  const platform::error_t e = platform::compute_capability(&major, &minor, device);
  *out = target::generic;
#if !MXI_PLATFORM_HIP
  if (e == platform::success && major == 9) *out = target::sm90;
#endif
  return e;
}

}  // namespace mxi::arch
