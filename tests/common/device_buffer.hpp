// RAII device memory for tests, benchmarks and tools, through the platform layer. Failures throw:
// test code wants a message, not a status to thread through.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "mxi/platform/runtime.hpp"

namespace mxi::testing {

inline void gpu_check(platform::error_t e, const char* what) {
  if (e != platform::success) throw std::runtime_error(std::string(what) + ": " + platform::error_string(e));
}

/// Whether a GPU is present (device init happens here, never in a static constructor).
inline bool gpu_present() {
  int n = 0;
  return platform::get_device_count(&n) == platform::success && n > 0;
}

template <class T>
class device_buffer {
 public:
  device_buffer() = default;
  explicit device_buffer(size_t count) : count_(count) {
    if (count > 0) gpu_check(platform::malloc(reinterpret_cast<void**>(&data_), count * sizeof(T)), "malloc");
  }
  explicit device_buffer(const std::vector<T>& host) : device_buffer(host.size()) { upload(host); }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  device_buffer(device_buffer&& o) noexcept : data_(o.data_), count_(o.count_) { o.data_ = nullptr; o.count_ = 0; }
  device_buffer& operator=(device_buffer&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(count_, o.count_);
    return *this;
  }
  ~device_buffer() {
    if (data_ != nullptr) (void)platform::free(data_);  // nobody to report a failure to
  }

  T* data() const { return data_; }
  size_t size() const { return count_; }
  size_t bytes() const { return count_ * sizeof(T); }

  void upload(const std::vector<T>& host) {
    if (host.size() != count_) throw std::runtime_error("device_buffer::upload: size mismatch");
    if (count_ > 0) gpu_check(platform::memcpy(data_, host.data(), bytes(), platform::copy_kind::host_to_device), "memcpy");
  }
  std::vector<T> download() const {
    std::vector<T> host(count_);
    if (count_ > 0) gpu_check(platform::memcpy(host.data(), data_, bytes(), platform::copy_kind::device_to_host), "memcpy");
    return host;
  }
  /// Fills every byte with `byte` (poison before a run so unwritten entries show).
  void fill_bytes(int byte) {
    if (count_ > 0) gpu_check(platform::memset(data_, byte, bytes()), "memset");
  }

 private:
  T* data_ = nullptr;
  size_t count_ = 0;
};

/// A device copy of `count` host elements at `host` (empty when host is null).
template <class T>
device_buffer<std::remove_const_t<T>> upload(T* host, int64_t count) {
  device_buffer<std::remove_const_t<T>> d(host ? static_cast<size_t>(count) : 0);
  if (d.size() > 0)
    gpu_check(platform::memcpy(d.data(), host, d.bytes(), platform::copy_kind::host_to_device),
              "memcpy to device");
  return d;
}

}  // namespace mxi::testing
