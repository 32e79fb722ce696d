// Per-device limits the launchers size their kernels by, queried once per device (the property
// query costs host time on every call otherwise).
#pragma once

#include <atomic>
#include <cstddef>

#include "mxi/platform/runtime.hpp"

namespace mxi::platform {

/// The current device and the shared memory a block may opt in to there (queried once per device).
inline error_t shared_memory_limit(int* device, size_t* bytes) {
  constexpr int max_devices = 64;
  static std::atomic<size_t> cache[max_devices] = {};
  error_t e = get_device(device);
  if (e != success) return e;
  const bool cached = *device >= 0 && *device < max_devices;
  *bytes = cached ? cache[*device].load(std::memory_order_relaxed) : 0;
  if (*bytes != 0) return success;
  device_prop_t prop;
  e = get_device_properties(&prop, *device);
  if (e != success) return e;
  *bytes = prop.sharedMemPerBlockOptin;
  if (cached) cache[*device].store(*bytes, std::memory_order_relaxed);
  return success;
}

}  // namespace mxi::platform
