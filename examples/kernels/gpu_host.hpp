// What the example programs share on the host: the exit codes ctest reads, a GPU-presence check
// that skips visibly, and device buffers through mxi's platform layer.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "mxi/platform/runtime.hpp"

namespace example {

inline constexpr int exit_ok = 0, exit_mismatch = 1, exit_skipped = 4;  // 4: SKIP_RETURN_CODE

/// Ends the program with a message when a runtime call fails.
inline void check(mxi::platform::error_t e, const char* what) {
  if (e == mxi::platform::success) return;
  std::fprintf(stderr, "%s: %s\n", what, mxi::platform::error_string(e));
  std::exit(exit_mismatch);
}

/// Ends the program as skipped, saying so, when no GPU is present.
inline void require_gpu(const char* program) {
  int n = 0;
  if (mxi::platform::get_device_count(&n) == mxi::platform::success && n > 0) return;
  std::printf("SKIPPED: %s needs a GPU\n", program);
  std::exit(exit_skipped);
}

/// A device copy of a host vector, freed at scope end.
template <class T>
class device_array {
 public:
  explicit device_array(const std::vector<T>& host) : count_(host.size()) {
    check(mxi::platform::malloc(reinterpret_cast<void**>(&data_), bytes()), "malloc");
    check(mxi::platform::memcpy(data_, host.data(), bytes(),
                                mxi::platform::copy_kind::host_to_device),
          "memcpy to device");
  }
  device_array(const device_array&) = delete;
  device_array& operator=(const device_array&) = delete;
  ~device_array() { (void)mxi::platform::free(data_); }

  T* data() const { return data_; }
  std::vector<T> download() const {
    std::vector<T> host(count_);
    check(mxi::platform::memcpy(host.data(), data_, bytes(),
                                mxi::platform::copy_kind::device_to_host),
          "memcpy to host");
    return host;
  }

 private:
  size_t bytes() const { return count_ * sizeof(T); }
  T* data_ = nullptr;
  size_t count_ = 0;
};

}  // namespace example
