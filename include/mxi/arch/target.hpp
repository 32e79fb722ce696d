// Which logits tile a device runs: a target chosen on the host from the device's compute
// capability (NVIDIA) or gfx name (AMD). The row-scorer targets (generic, gfx950) have a policy
// type that paged_logits_kernel takes as a template parameter (with_row_policy picks it);
// `compiled_here` says whether the current device pass can run it (other passes compile a trap).
// sm90 runs its own kernel (device/detail/pipelined_logits_kernel.hpp). Every target name exists
// on both vendors (tests and benches name them); a target this build has no tile for runs the
// generic one. MXI_ARCH_HAS_SM90 and MXI_ARCH_HAS_GFX950 say which tiles the build has, so that
// device code asks this file rather than the vendor.
#pragma once

#include <cstring>

#include "mxi/arch/generic.hpp"
#include "mxi/platform/per_device_cache.hpp"
#include "mxi/platform/runtime.hpp"
#include "mxi/platform/wave.hpp"

#if MXI_PLATFORM_HIP
#define MXI_ARCH_HAS_SM90 0
#define MXI_ARCH_HAS_GFX950 1
#include "mxi/arch/gfx950.hpp"
#else
#define MXI_ARCH_HAS_SM90 1
#define MXI_ARCH_HAS_GFX950 0
#include "mxi/arch/sm90.hpp"
#endif

namespace mxi::arch {

enum class target { generic, sm90, gfx950 };

template <int WaveSize>
struct generic_policy {
  static constexpr target kind = target::generic;
  static constexpr int wave_size = WaveSize;
  static constexpr bool compiled_here = true;
  template <int Heads>
  using scorer = generic::row_scorer<WaveSize, Heads>;
};

#if MXI_ARCH_HAS_GFX950
/// gfx950 (MI355X): one scaled MFMA (E2M1 x E2M1, K = 128) per 16 heads x 16 keys, wave64.
struct gfx950_policy {
  static constexpr target kind = target::gfx950;
  static constexpr int wave_size = gfx950::wave_size;
  static constexpr bool compiled_here = gfx950::compiled_here;
  template <int Heads>
  using scorer = gfx950::row_scorer<Heads>;
};
#endif

/// Calls f(Policy{}) with the row-scorer policy for target `t` on waves of `wave_size` lanes:
/// gfx950's where the build has it and `t` is gfx950, else generic's. Returns false, calling
/// nothing, when this build has no code for the wave size.
template <class F>
bool with_row_policy(target t, int wave_size, F&& f) {
#if MXI_ARCH_HAS_GFX950
  if (t == target::gfx950) {
    f(gfx950_policy{});
    return true;
  }
#else
  (void)t;
#endif
  return platform::dispatch_wave_size(wave_size,
                                      [&](auto w) { f(generic_policy<decltype(w)::value>{}); });
}

#if MXI_ARCH_HAS_SM90 && MXI_GPU_COMPILER
namespace detail {
/// Its launch bound marks the device pass of the image a device loaded: 64 threads where that pass
/// issues wgmma (sm_90a), 32 elsewhere, so that a build without an sm_90a pass (sm_80 only, say)
/// never picks the sm90 tile on a Hopper GPU, whose kernels would trap there.
template <int = 0>
__global__ void __launch_bounds__(MXI_ARCH_SM90_WGMMA ? 64 : 32) image_probe() {}
}  // namespace detail
#endif

/// Whether `device` (the current device) can run target `t`'s tile: sm90 on compute capability
/// 9.x with 32-lane waves when the loaded image holds the sm_90a pass, gfx950 on a device whose
/// gcnArchName starts with "gfx950", generic everywhere.
inline platform::error_t can_run(int device, target t, bool* out) {
  *out = t == target::generic;
  if (*out) return platform::success;
#if MXI_PLATFORM_HIP
  platform::device_prop_t prop;
  const platform::error_t e = platform::get_device_properties(&prop, device);
  *out = e == platform::success && t == target::gfx950 &&
         std::strncmp(prop.gcnArchName, "gfx950", 6) == 0;
#else
  int major = 0, minor = 0, wave_size = 0;
  platform::error_t e = platform::compute_capability(&major, &minor, device);
  // The wave size: 64 in MXI_EMULATE_WAVE64 test builds, where the warpgroup tile cannot run.
  if (e == platform::success) e = platform::device_wave_size(device, &wave_size);
  *out = e == platform::success && t == target::sm90 && major == 9 && wave_size == sm90::wave_size;
#if MXI_GPU_COMPILER
  if (*out) {
    // No loadable image at all reads as "no sm_90a pass"; the error it leaves is cleared, so the
    // next launch check does not report it.
    int threads = 0;
    if (platform::kernel_max_threads(&detail::image_probe<>, &threads) != platform::success)
      (void)platform::last_error();
    *out = threads == 64;
  }
#else
  *out = false;  // a host-only translation unit launches no tile
#endif
#endif
  return e;
}

/// The fastest tile `device` can run: sm90 or gfx950 where it can run, else generic. Cached per
/// device.
inline platform::error_t choose_target(int device, target* out) {
  static platform::per_device_cache<target> cache;
  return cache.get(device, out, [device](target* best) {
    *best = target::generic;
    for (const target t : {target::sm90, target::gfx950}) {
      bool runs = false;
      const platform::error_t e = can_run(device, t, &runs);
      if (e != platform::success) return e;
      if (runs) {
        *best = t;
        break;
      }
    }
    return platform::success;
  });
}

}  // namespace mxi::arch
