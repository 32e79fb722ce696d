// Host side of the wave size: what a device runs (32 on NVIDIA, 64 on gfx9, 32 on RDNA), cached
// per device, and the switch that turns it into the template argument kernels take.
#pragma once

#include "mxi/platform/device_limits.hpp"
#include "mxi/platform/dispatch.hpp"
#include "mxi/platform/runtime.hpp"
#include "mxi/platform/wave64_emulation.hpp"

namespace mxi::platform {

/// Wave sizes device code is compiled for on this vendor.
#if MXI_PLATFORM_HIP
inline constexpr bool supports_wave32 = true;
inline constexpr bool supports_wave64 = true;
#else  // 64 only in MXI_EMULATE_WAVE64 test builds, where every device reports 64
inline constexpr bool supports_wave32 = !wave64::emulated;
inline constexpr bool supports_wave64 = wave64::emulated;
#endif

/// Wave size of `device`, queried once and cached (0 and an error when the query fails).
inline error_t device_wave_size(int device, int* wave_size) {
  return device_property(device, wave_size,
                         [](const device_prop_t& p) { return wave64::emulated ? 64 : p.warpSize; });
}

/// Calls f(std::integral_constant<int, W>{}) for the device's wave size W; returns false when the
/// size is one this build has no code for.
template <class F>
bool dispatch_wave_size(int wave_size, F&& f) {
  const auto compiled = [&](auto w) {
    constexpr int size = decltype(w)::value;
    if constexpr (size == 32 ? supports_wave32 : supports_wave64) {
      f(w);
      return true;
    } else {
      return false;
    }
  };
  return with_constant<32, 64>([&](int w) { return w == wave_size; }, compiled,
                               [] { return false; });
}

}  // namespace mxi::platform
