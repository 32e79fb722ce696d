// The L2 flush before each timed call of the GPU benches: 256 MiB (> the H200's 60 MiB L2) read,
// which evicts the cache without leaving dirty lines, or written with a memset (the peers'
// figures use that one; the dirty lines it leaves cost the next kernel their write-back, 8-9 us
// on the H200).
#pragma once

#include <cstddef>
#include <cstdint>

#include "device_buffer.hpp"

namespace mxi::bench {

/// Reads `vectors` 16-byte vectors; the sink keeps the loads.
__global__ void read_flush(const uint4* data, size_t vectors, uint32_t* sink) {
  uint32_t acc = 0;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < vectors;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const uint4 x = data[i];
    acc ^= x.x ^ x.y ^ x.z ^ x.w;
  }
  if (acc == 0x9E3779B9u) *sink = acc;  // practically never taken
}

/// Flushes the L2 on the default stream: with a memset of 256 MiB, or by reading them.
inline void flush_l2(bool memset) {
  static testing::device_buffer<uint8_t> buffer = [] {
    testing::device_buffer<uint8_t> b(size_t{256} << 20);
    b.fill_bytes(1);
    return b;
  }();
  static testing::device_buffer<uint32_t> sink(1);
  if (memset) {
    testing::gpu_check(platform::memset_async(buffer.data(), 0, buffer.bytes(), nullptr),
                       "flush memset");
    return;
  }
  read_flush<<<1056, 512>>>(reinterpret_cast<const uint4*>(buffer.data()), buffer.bytes() / 16,
                            sink.data());
  testing::gpu_check(platform::last_error(), "flush read");
}

}  // namespace mxi::bench
