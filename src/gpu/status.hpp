// Platform errors as the host API's status: the GPU backend's side of the seam, so the platform
// layer under the device headers never sees mxi/mxi.hpp.
#pragma once

#include <string>

#include "mxi/mxi.hpp"
#include "mxi/platform/runtime.hpp"

namespace mxi::detail::gpu {

/// A runtime failure as an mxi::status naming the call that failed.
inline status to_status(platform::error_t e, const char* call) {
  if (e == platform::success) return {};
  return status(status_code::runtime_error, std::string(call) + ": " + platform::error_string(e));
}

}  // namespace mxi::detail::gpu

/// Evaluates a platform call; on failure returns its mxi::status (the call's text as the name).
#define MXI_GPU_RETURN_IF_ERROR(call)                              \
  do {                                                             \
    const ::mxi::platform::error_t mxi_gpu_error_ = (call);        \
    if (mxi_gpu_error_ != ::mxi::platform::success)                \
      return ::mxi::detail::gpu::to_status(mxi_gpu_error_, #call); \
  } while (0)
