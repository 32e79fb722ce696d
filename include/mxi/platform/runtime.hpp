// The GPU runtime behind one neutral name set: errors, streams, events, memory, device properties
// and launch checks. The only file besides intrinsics.hpp that names the HIP or CUDA runtime; the
// rest of the library writes platform::malloc, platform::stream_t and so on.
//
// Interface (others build against it): mxi::gpu_error_t == platform::error_t,
// mxi::gpu_stream_t == platform::stream_t, platform::success, platform::last_error(). It sits
// below the host API: turning an error into an mxi::status is the GPU backend's job
// (src/gpu/status.hpp).
#pragma once

#include <cstddef>

#include "mxi/config.hpp"

#if defined(__HIP_PLATFORM_AMD__)
#include <hip/hip_runtime.h>
#define MXI_PLATFORM_HIP 1
#else
#include <cuda_runtime.h>
#define MXI_PLATFORM_HIP 0
#endif

namespace mxi {
namespace platform {

#if MXI_PLATFORM_HIP
using error_t = hipError_t;
using stream_t = hipStream_t;
using event_t = hipEvent_t;
using device_prop_t = hipDeviceProp_t;
using graph_t = hipGraph_t;
using graph_exec_t = hipGraphExec_t;
inline constexpr auto capture_global = hipStreamCaptureModeGlobal;
inline constexpr error_t success = hipSuccess;
inline constexpr error_t invalid_value = hipErrorInvalidValue;
#define MXI_PLATFORM_CALL(name) hip##name
// Device attributes HIP spells differently from CUDA.
#define MXI_PLATFORM_ATTR_MULTIPROCESSORS hipDeviceAttributeMultiprocessorCount
#define MXI_PLATFORM_ATTR_CC_MAJOR hipDeviceAttributeComputeCapabilityMajor
#define MXI_PLATFORM_ATTR_CC_MINOR hipDeviceAttributeComputeCapabilityMinor
#else
using error_t = cudaError_t;
using stream_t = cudaStream_t;
using event_t = cudaEvent_t;
using device_prop_t = cudaDeviceProp;
using graph_t = cudaGraph_t;
using graph_exec_t = cudaGraphExec_t;
inline constexpr auto capture_global = cudaStreamCaptureModeGlobal;
inline constexpr error_t success = cudaSuccess;
inline constexpr error_t invalid_value = cudaErrorInvalidValue;
#define MXI_PLATFORM_CALL(name) cuda##name
#define MXI_PLATFORM_ATTR_MULTIPROCESSORS cudaDevAttrMultiProcessorCount
#define MXI_PLATFORM_ATTR_CC_MAJOR cudaDevAttrComputeCapabilityMajor
#define MXI_PLATFORM_ATTR_CC_MINOR cudaDevAttrComputeCapabilityMinor
#endif
static_assert(success == error_t{},
              "per_device_cache.hpp reads a value-initialised error as success");

/// Allocations start on this many bytes at least; workspace pieces are padded to it
/// (aligned_size), so each starts as aligned as an allocation.
inline constexpr size_t allocation_alignment = 256;
constexpr size_t aligned_size(size_t bytes) { return align_up(bytes, allocation_alignment); }

enum class copy_kind { host_to_device, device_to_host, device_to_device };

namespace detail {
inline auto native(copy_kind k) {
  switch (k) {
    case copy_kind::host_to_device: return MXI_PLATFORM_CALL(MemcpyHostToDevice);
    case copy_kind::device_to_host: return MXI_PLATFORM_CALL(MemcpyDeviceToHost);
    default: return MXI_PLATFORM_CALL(MemcpyDeviceToDevice);
  }
}
}  // namespace detail

inline const char* error_string(error_t e) { return MXI_PLATFORM_CALL(GetErrorString)(e); }
/// The last launch error, cleared (what to check right after a <<<...>>> launch).
inline error_t last_error() { return MXI_PLATFORM_CALL(GetLastError)(); }

inline error_t malloc(void** p, size_t bytes) { return MXI_PLATFORM_CALL(Malloc)(p, bytes); }
inline error_t free(void* p) { return MXI_PLATFORM_CALL(Free)(p); }
inline error_t memcpy(void* dst, const void* src, size_t bytes, copy_kind k) {
  return MXI_PLATFORM_CALL(Memcpy)(dst, src, bytes, detail::native(k));
}
inline error_t memcpy_async(void* dst, const void* src, size_t bytes, copy_kind k, stream_t s) {
  return MXI_PLATFORM_CALL(MemcpyAsync)(dst, src, bytes, detail::native(k), s);
}
inline error_t memset(void* p, int value, size_t bytes) {
  return MXI_PLATFORM_CALL(Memset)(p, value, bytes);
}
inline error_t memset_async(void* p, int value, size_t bytes, stream_t s) {
  return MXI_PLATFORM_CALL(MemsetAsync)(p, value, bytes, s);
}

inline error_t stream_create(stream_t* s) { return MXI_PLATFORM_CALL(StreamCreate)(s); }
inline error_t stream_destroy(stream_t s) { return MXI_PLATFORM_CALL(StreamDestroy)(s); }
inline error_t stream_synchronize(stream_t s) { return MXI_PLATFORM_CALL(StreamSynchronize)(s); }
inline error_t device_synchronize() { return MXI_PLATFORM_CALL(DeviceSynchronize)(); }

// Graph capture: what an engine does with the entry points (the tests check the replay).
inline error_t begin_capture(stream_t s) {
  return MXI_PLATFORM_CALL(StreamBeginCapture)(s, capture_global);
}
inline error_t end_capture(stream_t s, graph_t* g) { return MXI_PLATFORM_CALL(StreamEndCapture)(s, g); }
inline error_t graph_instantiate(graph_exec_t* e, graph_t g) {
  return MXI_PLATFORM_CALL(GraphInstantiateWithFlags)(e, g, 0);
}
inline error_t graph_launch(graph_exec_t e, stream_t s) { return MXI_PLATFORM_CALL(GraphLaunch)(e, s); }
inline error_t graph_destroy(graph_t g) { return MXI_PLATFORM_CALL(GraphDestroy)(g); }
inline error_t graph_exec_destroy(graph_exec_t e) { return MXI_PLATFORM_CALL(GraphExecDestroy)(e); }

inline error_t event_create(event_t* e) { return MXI_PLATFORM_CALL(EventCreate)(e); }
inline error_t event_destroy(event_t e) { return MXI_PLATFORM_CALL(EventDestroy)(e); }
inline error_t event_record(event_t e, stream_t s) { return MXI_PLATFORM_CALL(EventRecord)(e, s); }
inline error_t event_synchronize(event_t e) { return MXI_PLATFORM_CALL(EventSynchronize)(e); }
inline error_t event_elapsed_ms(float* ms, event_t start, event_t stop) {
  return MXI_PLATFORM_CALL(EventElapsedTime)(ms, start, stop);
}

inline error_t get_device_count(int* n) { return MXI_PLATFORM_CALL(GetDeviceCount)(n); }
/// Makes `d` the calling host thread's current device (the runtime keeps it per thread).
inline error_t set_device(int d) { return MXI_PLATFORM_CALL(SetDevice)(d); }
inline error_t get_device(int* d) { return MXI_PLATFORM_CALL(GetDevice)(d); }
inline error_t get_device_properties(device_prop_t* p, int device) {
  return MXI_PLATFORM_CALL(GetDeviceProperties)(p, device);
}
/// Multiprocessors (NVIDIA SMs, AMD CUs) of `device`.
inline error_t multiprocessor_count(int* n, int device) {
  return MXI_PLATFORM_CALL(DeviceGetAttribute)(n, MXI_PLATFORM_ATTR_MULTIPROCESSORS, device);
}
/// Compute capability (NVIDIA) or gfx major/minor (AMD) of `device`.
inline error_t compute_capability(int* major, int* minor, int device) {
  error_t e = MXI_PLATFORM_CALL(DeviceGetAttribute)(
      major, MXI_PLATFORM_ATTR_CC_MAJOR, device);
  if (e != success) return e;
  return MXI_PLATFORM_CALL(DeviceGetAttribute)(
      minor, MXI_PLATFORM_ATTR_CC_MINOR, device);
}
/// Lets `kernel` use up to `bytes` of dynamic shared memory (needed above 48 KiB on NVIDIA).
template <class Kernel>
error_t set_max_dynamic_shared_memory(Kernel* kernel, int bytes) {
  return MXI_PLATFORM_CALL(FuncSetAttribute)(
      reinterpret_cast<const void*>(kernel),
      MXI_PLATFORM_CALL(FuncAttributeMaxDynamicSharedMemorySize), bytes);
}
/// The most threads a block of `kernel` may have in the image the current device loaded (its
/// launch bound, where it has one).
template <class Kernel>
error_t kernel_max_threads(Kernel* kernel, int* threads) {
  MXI_PLATFORM_CALL(FuncAttributes) attr{};
  const error_t e = MXI_PLATFORM_CALL(FuncGetAttributes)(&attr, reinterpret_cast<const void*>(kernel));
  *threads = e == success ? attr.maxThreadsPerBlock : 0;
  return e;
}
/// The static shared memory of a block of `kernel` (its `__shared__` arrays) in the image the
/// current device loaded.
template <class Kernel>
error_t kernel_static_shared_bytes(Kernel* kernel, size_t* bytes) {
  MXI_PLATFORM_CALL(FuncAttributes) attr{};
  const error_t e = MXI_PLATFORM_CALL(FuncGetAttributes)(&attr, reinterpret_cast<const void*>(kernel));
  *bytes = e == success ? attr.sharedSizeBytes : 0;
  return e;
}
/// Resident blocks of `kernel` a multiprocessor holds at `threads` threads and `smem` bytes.
template <class Kernel>
error_t max_active_blocks(int* blocks, Kernel* kernel, int threads, size_t smem) {
  return MXI_PLATFORM_CALL(OccupancyMaxActiveBlocksPerMultiprocessor)(
      blocks, reinterpret_cast<const void*>(kernel), threads, smem);
}

#undef MXI_PLATFORM_CALL
#undef MXI_PLATFORM_ATTR_MULTIPROCESSORS
#undef MXI_PLATFORM_ATTR_CC_MAJOR
#undef MXI_PLATFORM_ATTR_CC_MINOR

}  // namespace platform

using gpu_error_t = platform::error_t;
using gpu_stream_t = platform::stream_t;

}  // namespace mxi
