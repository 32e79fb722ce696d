// Kernel launches with what a plain <<<>>> cannot say: a thread-block cluster dimension, and a
// chained launch (NVIDIA programmatic dependent launch, sm_90 and later). A chained kernel may
// start while the kernel before it in the stream is still running: its blocks become resident as
// soon as every block of that kernel has called allow_next_grid() (or ended), and they wait in
// wait_for_prior_grid() until it has ended and its writes are visible. So the short kernels of a
// call (checks, plan, logits, top-k) no longer pay a launch and a ramp each on the critical path.
//
// A chained kernel must call wait_for_prior_grid() before it reads or writes any memory an
// earlier kernel of the stream touches; wait_for_prior_grid() returns at once when the kernel was
// not chained. Chaining needs the device (compute capability 9.0 and later) and a loaded image
// with an sm_90 pass, whose kernels really wait; elsewhere (HIP, older GPUs, an sm_80-only build
// on a Hopper GPU) a chained launch is a plain one.
#pragma once

#include <cstddef>
#include <utility>

#include "mxi/config.hpp"
#include "mxi/platform/per_device_cache.hpp"
#include "mxi/platform/runtime.hpp"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && !MXI_PLATFORM_HIP
#define MXI_PLATFORM_CHAINED_LAUNCH 1
#else
#define MXI_PLATFORM_CHAINED_LAUNCH 0
#endif

namespace mxi::platform {

#if MXI_GPU_COMPILER

/// Waits until the kernel this one is chained to has ended and its writes are visible.
MXI_DEVICE void wait_for_prior_grid() {
#if MXI_PLATFORM_CHAINED_LAUNCH
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

/// Lets the next chained kernel of the stream launch (its blocks still wait for this one's end).
MXI_DEVICE void allow_next_grid() {
#if MXI_PLATFORM_CHAINED_LAUNCH
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

namespace detail {
/// Compiled with 64 threads at most where the image's pass has griddepcontrol, 32 elsewhere: the
/// host asks which pass the device loaded.
template <int = 0>
__global__ void __launch_bounds__(MXI_PLATFORM_CHAINED_LAUNCH ? 64 : 32) chain_probe() {}
}  // namespace detail

/// Whether kernels chained on `device` wait for the kernel before them (see the file comment).
/// Cached per device.
inline error_t can_chain(int device, bool* out) {
  *out = false;
#if MXI_PLATFORM_HIP
  (void)device;
  return success;
#else
  static per_device_cache<int> cache;
  int chains = 0;
  const error_t e = cache.get(device, &chains, [device](int* answer) {
    int major = 0, minor = 0, threads = 0;
    error_t r = compute_capability(&major, &minor, device);
    if (r == success && major >= 9) r = kernel_max_threads(&detail::chain_probe<>, &threads);
    *answer = threads == 64;
    return r;
  });
  *out = chains != 0;
  return e;
#endif
}

/// How to launch: a grid of blocks of `threads` threads with `smem` bytes of dynamic shared
/// memory, in clusters of `cluster` consecutive blocks (grid.x % cluster == 0), chained or not.
struct launch_shape {
  dim3 grid;
  unsigned threads = 0;
  size_t smem = 0;
  unsigned cluster = 1;
  bool chained = false;
};

/// Launches `kernel` on `stream` as `shape` says. Clusters larger than one block fail (invalid
/// value) where there are none.
template <class... Params, class... Args>
error_t launch(void (*kernel)(Params...), const launch_shape& shape, stream_t stream,
               Args&&... args) {
#if MXI_PLATFORM_HIP
  if (shape.cluster != 1) return invalid_value;
  kernel<<<shape.grid, shape.threads, shape.smem, stream>>>(std::forward<Args>(args)...);
  return last_error();
#else
  bool chain = false;
  if (shape.chained) {
    int device = 0;
    error_t e = get_device(&device);
    if (e == success) e = can_chain(device, &chain);
    if (e != success) return e;
  }
  cudaLaunchConfig_t config{};
  config.gridDim = shape.grid;
  config.blockDim = dim3(shape.threads);
  config.dynamicSmemBytes = shape.smem;
  config.stream = stream;
  cudaLaunchAttribute attrs[2] = {};
  unsigned n = 0;
  if (shape.cluster != 1) {  // no attribute for one block: runs on any device
    attrs[n].id = cudaLaunchAttributeClusterDimension;
    attrs[n].val.clusterDim.x = shape.cluster;
    attrs[n].val.clusterDim.y = 1;
    attrs[n].val.clusterDim.z = 1;
    ++n;
  }
  if (chain) {
    attrs[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[n].val.programmaticStreamSerializationAllowed = 1;
    ++n;
  }
  config.attrs = attrs;
  config.numAttrs = n;
  return cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
#endif
}

#endif  // MXI_GPU_COMPILER

}  // namespace mxi::platform
