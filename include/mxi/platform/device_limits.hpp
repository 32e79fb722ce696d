// Per-device limits the launchers size their kernels by, queried once per device (the property
// query costs host time on every call otherwise), and the one policy for raising a kernel's
// dynamic shared-memory limit.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <utility>

#include "mxi/platform/per_device_cache.hpp"
#include "mxi/platform/runtime.hpp"

namespace mxi::platform {

/// *out = get(the properties of `device`), queried once per device and getter (each lambda is a
/// type of its own, with a cache of its own); T{} and the error where the query fails.
template <class T, class Get>
error_t device_property(int device, T* out, Get get) {
  static per_device_cache<T> cache;
  return cache.get(device, out, [device, &get](T* value) {
    device_prop_t prop;
    const error_t e = get_device_properties(&prop, device);
    *value = e == success ? static_cast<T>(get(prop)) : T{};
    return e;
  });
}

/// The current device and the shared memory a block may opt in to there (queried once per device).
inline error_t shared_memory_limit(int* device, size_t* bytes) {
  const error_t e = get_device(device);
  if (e != success) return e;
  return device_property(*device, bytes,
                         [](const device_prop_t& p) { return p.sharedMemPerBlockOptin; });
}

/// The current device and the dynamic shared memory a block of `kernel` may take there: what a
/// block may opt in to less the kernel's static shared memory (the 64-lane emulation's exchange
/// slots, say: asking for the whole opt-in amount beside them is an invalid value). The kernel's
/// limit is raised to that once per device and kernel, never to one call's size: host threads
/// launching it with different sizes at once would lower it under each other's launches.
template <class Kernel>
error_t kernel_shared_memory_limit(Kernel* kernel, int* device, size_t* bytes) {
  static std::mutex mutex;
  static std::map<std::pair<const void*, int>, size_t> raised;
  size_t optin = 0;
  error_t e = shared_memory_limit(device, &optin);
  if (e != success) return e;
  const std::pair<const void*, int> key{reinterpret_cast<const void*>(kernel), *device};
  const std::lock_guard<std::mutex> lock(mutex);
  if (const auto found = raised.find(key); found != raised.end()) {
    *bytes = found->second;
    return success;
  }
  size_t fixed = 0;
  e = kernel_static_shared_bytes(kernel, &fixed);
  const size_t dynamic = optin > fixed ? optin - fixed : 0;
  if (e == success) e = set_max_dynamic_shared_memory(kernel, static_cast<int>(dynamic));
  if (e != success) return e;
  raised.emplace(key, dynamic);
  *bytes = dynamic;
  return success;
}

/// What a launcher knows of the current device once `kernel` is prepared for it.
struct kernel_limits {
  int device = 0;
  int multiprocessors = 0;
  size_t shared_bytes = 0;  ///< the dynamic shared memory a block of the kernel may take
};

/// The preamble of every launch: the current device, its multiprocessors and the kernel's
/// dynamic shared-memory limit (raised once, kernel_shared_memory_limit). Invalid value where
/// `smem`, the bytes the launch asks for, is above that limit.
template <class Kernel>
error_t prepare_kernel(Kernel* kernel, size_t smem, kernel_limits* out) {
  error_t e = kernel_shared_memory_limit(kernel, &out->device, &out->shared_bytes);
  if (e == success && smem > out->shared_bytes) e = invalid_value;
  if (e == success) e = multiprocessor_count(&out->multiprocessors, out->device);
  return e;
}

}  // namespace mxi::platform
