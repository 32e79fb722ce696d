// The wave primitives of platform/intrinsics.hpp at the wave size the device reports (32 on
// NVIDIA, 64 on gfx9 and in MXI_EMULATE_WAVE64 builds), against a host model of gfx9's and
// CUDA's semantics: shuffles whose source lies outside the wave read the caller's own value,
// shuffle_idx takes the source modulo the wave, ballots and popcounts cover every lane. Blocks of
// 1, 4 and 15 waves (the emulation's most), so a mask cut to 32 bits or an exchange crossing
// into the wrong wave fails here.
#include <cstdint>
#include <vector>

#include "catch.hpp"
#include "device_buffer.hpp"
#include "mxi/platform/intrinsics.hpp"
#include "mxi/platform/wave.hpp"
#include "skip.hpp"

namespace {

using namespace mxi;
using mxi::testing::device_buffer;
using mxi::testing::gpu_check;

constexpr int results = 12;  // uint64 results a thread writes

MXI_HOST_DEVICE uint32_t value_of(unsigned block, int wave, int lane) {
  return (block << 16) | (static_cast<uint32_t>(wave) << 8) | static_cast<uint32_t>(lane);
}
MXI_HOST_DEVICE uint64_t wide_of(uint32_t v) { return (uint64_t{v} << 32) | ~v; }
MXI_HOST_DEVICE bool picked(int lane, int w) { return lane % 3 == 0 || lane >= w - 5; }

template <int W>
__global__ void wave_ops_kernel(uint64_t* out) {
  __shared__ uint32_t seen[1024];
  const int lane = platform::lane_id<W>(), wave = platform::wave_id<W>();
  const uint32_t v = value_of(blockIdx.x, wave, lane);
  uint64_t* o = out + (static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * results;
  o[0] = platform::shuffle_xor<W>(v, 1);
  o[1] = platform::shuffle_xor<W>(v, W / 2);  // across the two warps of an emulated wave
  o[2] = platform::shuffle_xor<W>(v, W - 1);
  o[3] = platform::shuffle_xor<W>(v, W);  // outside the wave
  o[4] = platform::shuffle_down<W>(v, 1);
  o[5] = platform::shuffle_down<W>(v, W / 2 + 1);
  o[6] = platform::shuffle_idx<W>(wide_of(v), 7 * lane + 3);
  o[7] = platform::ballot<W>(picked(lane, W));
  o[8] = (platform::all<W>(lane < W) ? 1u : 0u) | (platform::any<W>(lane == W - 1) ? 2u : 0u) |
         (platform::all<W>(lane != W - 1) ? 4u : 0u) | (platform::any<W>(false) ? 8u : 0u);
  o[9] = platform::wave_sum<W>(static_cast<uint64_t>(lane) + 1);
  o[10] = static_cast<uint64_t>(platform::popcount(platform::ballot<W>(lane >= W / 2 - 1)));
  seen[threadIdx.x] = v;
  platform::wave_barrier<W>();  // the wave's writes are visible to the whole wave
  o[11] = seen[wave * W + (lane + W / 2) % W];
}

/// What thread `t` of block `b` must write, on a wave of W lanes.
std::vector<uint64_t> expected(int w, unsigned b, int t) {
  const int lane = t % w, wave = t / w;
  const auto at = [&](int src) { return uint64_t{value_of(b, wave, src)}; };
  const auto in_wave = [&](int src) { return src < w ? at(src) : at(lane); };
  uint64_t ballot = 0, sum = 0;
  for (int l = 0; l < w; ++l) {
    if (picked(l, w)) ballot |= uint64_t{1} << l;
    sum += static_cast<uint64_t>(l) + 1;
  }
  return {in_wave(lane ^ 1),
          in_wave(lane ^ (w / 2)),
          in_wave(lane ^ (w - 1)),
          in_wave(lane ^ w),
          in_wave(lane + 1),
          in_wave(lane + w / 2 + 1),
          wide_of(value_of(b, wave, (7 * lane + 3) & (w - 1))),
          ballot,
          1u | 2u,
          sum,
          static_cast<uint64_t>(w / 2 + 1),
          at((lane + w / 2) % w)};
}

template <int W>
void check_wave_ops() {
  constexpr unsigned blocks = 2;
  for (const int waves : {1, 4, 15}) {
    const int threads = waves * W;
    device_buffer<uint64_t> out(static_cast<size_t>(blocks) * threads * results);
    out.fill_bytes(0xEE);
    wave_ops_kernel<W><<<blocks, threads>>>(out.data());
    gpu_check(platform::last_error(), "launch");
    gpu_check(platform::device_synchronize(), "synchronize");
    const std::vector<uint64_t> got = out.download();
    for (unsigned b = 0; b < blocks; ++b)
      for (int t = 0; t < threads; ++t) {
        const std::vector<uint64_t> want = expected(W, b, t);
        for (int r = 0; r < results; ++r) {
          INFO("wave size " << W << ", " << waves << " waves, block " << b << " thread " << t
                            << " result " << r);
          REQUIRE(got[(static_cast<size_t>(b) * threads + t) * results + r] == want[r]);
        }
      }
  }
}

}  // namespace

TEST_CASE("GPU wave ops: shuffles, ballots and barriers at the device's wave size", "[gpu][wave]") {
  if (!mxi::testing::gpu_present()) MXI_SKIP("no GPU: the GPU wave tests need a device");
  int device = 0, wave_size = 0;
  gpu_check(platform::get_device(&device), "get_device");
  gpu_check(platform::device_wave_size(device, &wave_size), "device_wave_size");
  if (platform::wave64::emulated) CHECK(wave_size == 64);
  INFO("wave size " << wave_size);
  const bool known = platform::dispatch_wave_size(wave_size, [](auto w) { check_wave_ops<decltype(w)::value>(); });
  CHECK(known);
}
