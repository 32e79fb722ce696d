// A value per device, asked of the runtime once: device properties, the tile a device runs, a
// kernel attribute set once. Host code only; no runtime call of its own, so g++ tests it.
#pragma once

#include <atomic>
#include <mutex>

namespace mxi::platform {

/// Holds one T for each of devices [0, MaxDevices). get() runs the query the first time a device
/// is asked and keeps the value only when the query succeeded, so a failure is asked again next
/// time; devices outside the range are asked every time. Thread-safe: one query a device at most
/// succeeds and is kept, readers of a kept value take no lock.
template <class T, int MaxDevices = 64>
class per_device_cache {
 public:
  /// *out = the value for `device`, kept or from query(out). `query` returns its runtime's error
  /// type, and Error{} means success (cudaSuccess and hipSuccess are both 0; runtime.hpp checks).
  template <class Query>
  auto get(int device, T* out, Query&& query) -> decltype(query(out)) {
    using error = decltype(query(out));
    if (device < 0 || device >= MaxDevices) return query(out);
    slot& s = slots_[device];
    if (s.kept.load(std::memory_order_acquire)) {
      *out = s.value;
      return error{};
    }
    // Two threads asking at once ask the runtime once.
    const std::lock_guard<std::mutex> lock(mutex_);
    if (s.kept.load(std::memory_order_relaxed)) {
      *out = s.value;
      return error{};
    }
    const error e = query(out);
    if (e == error{}) {
      s.value = *out;
      s.kept.store(true, std::memory_order_release);
    }
    return e;
  }

 private:
  struct slot {
    std::atomic<bool> kept{false};
    T value{};
  };
  slot slots_[MaxDevices];
  std::mutex mutex_;
};

}  // namespace mxi::platform
