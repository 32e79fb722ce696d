// An engine's own kernel over mxi's public device headers, built through mxi::device alone (CUDA
// or HIP, the backend the package was built with): no flag of the engine's own. Where a GPU is
// present it runs one block top-k and checks it against a host sort; elsewhere it says it skipped
// and exits 4 (ctest reports "Skipped").
#include <algorithm>
#include <cstdio>
#include <numeric>
#include <vector>

#include "mxi/arch/fp4_to_fp8.hpp"
#include "mxi/arch/fp4_to_int8.hpp"
#include "mxi/arch/head_reduce.hpp"
#include "mxi/arch/key_tile.hpp"
#include "mxi/block/block_radix_sort.hpp"
#include "mxi/block/block_scan.hpp"
#include "mxi/block/block_topk.hpp"
#include "mxi/device/candidates.hpp"
#include "mxi/device/column_maps.hpp"
#include "mxi/device/k_cache_writer.hpp"
#include "mxi/device/paged_logits.hpp"
#include "mxi/device/q_quantizer.hpp"
#include "mxi/device/row_info.hpp"
#include "mxi/device/row_lengths.hpp"
#include "mxi/device/topk.hpp"
#include "mxi/format/mxfp4.hpp"
#include "mxi/layout/cache_layout.hpp"
#include "mxi/platform/intrinsics.hpp"
#include "mxi/platform/wave.hpp"

namespace {

constexpr int threads = 64, columns = 100, k = 10;
using topk = mxi::block::block_topk<threads>;

/// Column c < n scores as the E2M1 value of code c % 16: many ties, which go to the smaller
/// column.
__global__ void best_codes(int n, int32_t* out) {
  __shared__ typename topk::storage_type storage;
  __shared__ uint4 keys[topk::row_vectors(columns)];
  auto* words = reinterpret_cast<uint32_t*>(keys);
  for (int c = static_cast<int>(threadIdx.x); c < n; c += threads)
    words[c] = mxi::block::score_key(mxi::format::decode_e2m1(static_cast<unsigned>(c % 16)));
  const mxi::block::key_row row{keys, 0, n};
  topk::count(row, k, storage);
  topk::select(row, k, storage, [&](int slot, int column) { out[slot] = column; });
}

}  // namespace

// The key-tile loader, the dequant from a staged tile and the head reduce in a kernel of this
// project (compiled for each layout, not run: examples/kernels/paged_key_dot.hip runs the same).
template <class Layout>
__global__ void first_key_logit(const uint8_t* cache, int64_t page_stride, int block_size,
                                const int32_t* pages, int seq_len, float w, float* out) {
  __shared__ __align__(16) uint32_t stage[(mxi::arch::key_tile_shape::value_bytes + 256) / 4];
  mxi::arch::load_key_tile<Layout, mxi::arch::swizzled_tile, mxi::arch::sync_copies>(
      reinterpret_cast<unsigned char*>(stage), block_size, seq_len < 64 ? seq_len : 64, threadIdx.x,
      blockDim.x, [&](int n) {
        return mxi::arch::key_source{cache + mxi::layout::page_offset(pages[0], page_stride), n};
      });
  __syncthreads();
  const float share = mxi::arch::add_head(
      0.0f, w, mxi::arch::tile_element<mxi::arch::swizzled_tile>(stage, 0, threadIdx.x % 128));
  const float sum = mxi::arch::lane_head_sum<32, 1, 32>(share);
  if (threadIdx.x == 0) *out = sum;
}
template __global__ void first_key_logit<mxi::layout::linear>(const uint8_t*, int64_t, int,
                                                              const int32_t*, int, float, float*);
template __global__ void first_key_logit<mxi::layout::mfma16>(const uint8_t*, int64_t, int,
                                                              const int32_t*, int, float, float*);

// The library's own launchers, instantiated in this project so that their kernels (paged logits,
// top-k) compile with mxi::device's flags alone; main does not call them.
mxi::platform::error_t consumer_logits(const mxi::device::paged_logits_args& a, void* workspace,
                                       mxi::platform::stream_t stream) {
  return mxi::device::launch_paged_logits(a, workspace, stream);
}
mxi::platform::error_t consumer_topk(const mxi::device::topk_shape& shape, const float* scores,
                                     const int32_t* lengths, int32_t* out, void* workspace,
                                     mxi::platform::stream_t stream) {
  return mxi::device::launch_topk(shape, mxi::device::float_score_keys{scores, shape.width},
                                  mxi::device::int_lengths{lengths}, mxi::device::identity_map{},
                                  out, shape.k, workspace, stream);
}

int main() {
  namespace platform = mxi::platform;
  int devices = 0;
  if (platform::get_device_count(&devices) != platform::success || devices == 0) {
    std::printf("SKIPPED: device_consumer compiled; no GPU to run it on\n");
    return 4;
  }
  std::vector<int32_t> expected(columns);
  std::iota(expected.begin(), expected.end(), 0);
  std::stable_sort(expected.begin(), expected.end(), [](int32_t a, int32_t b) {
    return mxi::format::decode_e2m1(static_cast<unsigned>(a % 16)) >
           mxi::format::decode_e2m1(static_cast<unsigned>(b % 16));
  });
  expected.resize(k);
  std::sort(expected.begin(), expected.end());

  int32_t* out = nullptr;
  std::vector<int32_t> got(k, -1);
  platform::error_t e = platform::malloc(reinterpret_cast<void**>(&out), k * sizeof(int32_t));
  if (e == platform::success) {
    best_codes<<<1, threads>>>(columns, out);
    e = platform::last_error();
  }
  if (e == platform::success)
    e = platform::memcpy(got.data(), out, k * sizeof(int32_t), platform::copy_kind::device_to_host);
  if (out != nullptr) (void)platform::free(out);
  if (e != platform::success) {
    std::fprintf(stderr, "device_consumer: %s\n", platform::error_string(e));
    return 1;
  }
  const bool ok = got == expected;
  std::printf("device_consumer: %s (first winners %d %d %d, expected %d %d %d)\n",
              ok ? "ok" : "WRONG", got[0], got[1], got[2], expected[0], expected[1], expected[2]);
  return ok ? 0 : 1;
}
