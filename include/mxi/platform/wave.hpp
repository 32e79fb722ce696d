// Host side of the wave size: what a device runs (32 on NVIDIA, 64 on gfx9, 32 on RDNA), cached
// per device, and the switch that turns it into the template argument kernels take.
#pragma once

#include <atomic>
#include <type_traits>

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
  constexpr int max_devices = 64;
  static std::atomic<int> cache[max_devices] = {};
  if (device >= 0 && device < max_devices) {
    const int cached = cache[device].load(std::memory_order_relaxed);
    if (cached != 0) {
      *wave_size = cached;
      return success;
    }
  }
  device_prop_t prop;
  const error_t e = get_device_properties(&prop, device);
  const int size = wave64::emulated ? 64 : prop.warpSize;
  *wave_size = e == success ? size : 0;
  if (e == success && device >= 0 && device < max_devices)
    cache[device].store(size, std::memory_order_relaxed);
  return e;
}

/// Calls f(std::integral_constant<int, W>{}) for the device's wave size W; returns false when the
/// size is one this build has no code for.
template <class F>
bool dispatch_wave_size(int wave_size, F&& f) {
  if constexpr (supports_wave32) {
    if (wave_size == 32) {
      f(std::integral_constant<int, 32>{});
      return true;
    }
  }
  if constexpr (supports_wave64) {
    if (wave_size == 64) {
      f(std::integral_constant<int, 64>{});
      return true;
    }
  }
  return false;
}

}  // namespace mxi::platform
