// Compiler-neutral macros. Everything here compiles with a plain host compiler (g++), where the
// device qualifiers collapse to `inline`; vendor runtime headers are included only by platform/.
#pragma once

#if defined(__CUDACC__)
#define MXI_HOST_DEVICE __host__ __device__ __forceinline__
#define MXI_DEVICE __device__ __forceinline__
#define MXI_GPU_COMPILER 1
#elif defined(__HIPCC__)
// clang's HIP mode declares __host__/__device__ itself; __forceinline__ comes only with the HIP
// runtime headers, which this file must not need.
#define MXI_HOST_DEVICE __host__ __device__ inline __attribute__((always_inline))
#define MXI_DEVICE __device__ inline __attribute__((always_inline))
#define MXI_GPU_COMPILER 1
#else
#define MXI_HOST_DEVICE inline
#define MXI_DEVICE inline
#define MXI_GPU_COMPILER 0
#endif

#include <cstdint>
#include <cstring>

namespace mxi {

/// Reinterprets the bits of a trivially copyable value (C++17 has no std::bit_cast); the copy
/// compiles to a register move on every target.
template <class To, class From>
MXI_HOST_DEVICE To bit_cast(const From& from) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast needs equal sizes");
  To to;
#if defined(__HIPCC__) && !defined(__CUDACC__)
  // memcpy is looked up here, before any HIP header declares its device overload.
  __builtin_memcpy(&to, &from, sizeof(To));
#else
  memcpy(&to, &from, sizeof(To));
#endif
  return to;
}

/// `value` rounded up to a multiple of `multiple` (> 0).
template <class T, class M>
MXI_HOST_DEVICE constexpr T align_up(T value, M multiple) {
  const T m = static_cast<T>(multiple);
  return (value + m - 1) / m * m;
}

}  // namespace mxi
