// Per-device limits the launchers size their kernels by, queried once per device (the property
// query costs host time on every call otherwise).
#pragma once

#include <cstddef>

#include "mxi/platform/per_device_cache.hpp"
#include "mxi/platform/runtime.hpp"

namespace mxi::platform {

/// The current device and the shared memory a block may opt in to there (queried once per device).
inline error_t shared_memory_limit(int* device, size_t* bytes) {
  static per_device_cache<size_t> cache;
  const error_t e = get_device(device);
  if (e != success) return e;
  return cache.get(*device, bytes, [d = *device](size_t* out) {
    device_prop_t prop;
    const error_t got = get_device_properties(&prop, d);
    *out = got == success ? prop.sharedMemPerBlockOptin : 0;
    return got;
  });
}

}  // namespace mxi::platform
