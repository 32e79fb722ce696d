// Example: an engine's own kernels over the keys of one request in the paged MXFP4 cache.
// - request_key_dots: a thread takes one position of the request: its page comes from the
//   request's block-table row, its bytes from the cache layout's addressing
//   (mxi/layout/cache_layout.hpp), their values from the MXFP4 decode (mxi/format/mxfp4.hpp). Its
//   own epilogue is a scaled fp32 dot product with one query vector.
// - tile_head_logits: a block stages 64 keys at a time into shared memory with the key-tile
//   loader (mxi/arch/key_tile.hpp), dequantizes them from there, takes per-head dot products in
//   a plain loop and sums w * relu(dot) over heads with the head reduce (mxi/arch/head_reduce.hpp):
//   the indexer's logit, two lanes a key.
// The host checks both against float64, in both layouts.
//
// Exit code: 0 agrees, 1 disagrees, 4 no GPU (skipped).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "gpu_host.hpp"
#include "mxi/arch/head_reduce.hpp"
#include "mxi/arch/key_tile.hpp"
#include "mxi/format/mxfp4.hpp"
#include "mxi/layout/cache_layout.hpp"
#include "mxi/platform/wave.hpp"

namespace {

namespace format = mxi::format;
namespace layout = mxi::layout;

/// out[p] = scale * (q . key of position p) for the positions [0, seq_len) of one request.
template <class Layout>
__global__ void request_key_dots(const uint8_t* cache, int64_t page_stride,
                                 layout::page_shape shape, const int32_t* pages, int seq_len,
                                 const float* q, float scale, float* out) {
  const int p = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (p >= seq_len) return;
  const uint8_t* page = cache + layout::page_offset(pages[p / shape.block_size], page_stride);
  const int token = p % shape.block_size;
  float dot = 0.0f;
  for (int chunk = 0; chunk < shape.chunks(); ++chunk) {
    const uint8_t* values = page + Layout::value_offset(shape, token, chunk);
    const uint8_t e8m0 = page[Layout::scale_offset(shape, token, chunk)];
    for (int i = 0; i < format::block_elems; ++i)
      dot += q[chunk * format::block_elems + i] *
             format::decode_element(format::packed_code(values, i), e8m0);
  }
  out[p] = scale * dot;
}

/// logits[p] = sum over heads h of w[h] * relu(q[h] . key of position p); q is [heads][D].
/// Blocks of 128 threads, one a 64-key tile of the request.
template <class Layout, int WaveSize>
__global__ void tile_head_logits(const uint8_t* cache, int64_t page_stride, int block_size,
                                 const int32_t* pages, int seq_len, const float* q, const float* w,
                                 int heads, float* logits) {
  using tile = mxi::arch::swizzled_tile;
  constexpr int keys = mxi::arch::key_tile_shape::keys;
  constexpr int dim = mxi::arch::key_tile_shape::head_dim;
  __shared__ __align__(16) uint32_t stage[(mxi::arch::key_tile_shape::value_bytes + 4 * keys) / 4];
  const int k0 = static_cast<int>(blockIdx.x) * keys;
  const int count = min(keys, seq_len - k0);
  mxi::arch::load_key_tile<Layout, tile, mxi::arch::sync_copies>(
      reinterpret_cast<unsigned char*>(stage), block_size, count, threadIdx.x, blockDim.x,
      [&](int n) {
        const int p = k0 + n;
        return mxi::arch::key_source{
            cache + layout::page_offset(pages[p / block_size], page_stride), p % block_size};
      });
  __syncthreads();
  const int n = threadIdx.x / 2, half = threadIdx.x % 2;  // lanes 2n, 2n + 1: key n's heads
  float share = 0.0f;
  if (n < count) {
    for (int h = half; h < heads; h += 2) {
      float dot = 0.0f;
      for (int d = 0; d < dim; ++d)
        dot = fmaf(q[h * dim + d], mxi::arch::tile_element<tile>(stage, n, d), dot);
      share = mxi::arch::add_head(share, w[h], dot);
    }
  }
  const float logit = mxi::arch::lane_head_sum<WaveSize, 1, 2>(share);  // every lane takes part
  if (n < count && half == 0) logits[k0 + n] = logit;
}

constexpr int head_dim = 128, block_size = 64, num_pages = 5, seq_len = 150, heads = 6;
const std::vector<int32_t> block_table_row = {4, 1, 3};  // the request's pages, out of order

/// The request's keys quantized token by token: what the cache holds, kept in a plain
/// token-major form for the host's own computation.
struct quantized_keys {
  std::vector<uint8_t> values;  ///< [seq_len][D/2]
  std::vector<uint8_t> scales;  ///< [seq_len][D/32]
};

quantized_keys quantize(const std::vector<float>& keys) {
  const layout::page_shape shape{block_size, head_dim};
  quantized_keys q{std::vector<uint8_t>(seq_len * head_dim / 2),
                   std::vector<uint8_t>(seq_len * shape.chunks())};
  for (int p = 0; p < seq_len; ++p)
    format::quantize_row([&](int i) { return keys[p * head_dim + i]; }, head_dim,
                         &q.values[p * head_dim / 2], &q.scales[p * shape.chunks()],
                         format::scale_rule::ceil);
  return q;
}

/// The cache with the request's keys in `kind`; every other byte is 0xFF, so a wrong address
/// reads a NaN scale.
std::vector<uint8_t> build_cache(const quantized_keys& q, mxi::cache_layout kind,
                                 int64_t page_stride) {
  const layout::page_shape shape{block_size, head_dim};
  std::vector<uint8_t> cache(num_pages * page_stride, 0xFF);
  layout::dispatch(kind, [&](auto policy) {
    using Layout = decltype(policy);
    for (int p = 0; p < seq_len; ++p) {
      uint8_t* page = &cache[layout::page_offset(block_table_row[p / block_size], page_stride)];
      const int token = p % block_size;
      for (int chunk = 0; chunk < shape.chunks(); ++chunk) {
        for (int b = 0; b < format::block_bytes; ++b)
          page[Layout::value_offset(shape, token, chunk) + b] =
              q.values[p * head_dim / 2 + chunk * format::block_bytes + b];
        page[Layout::scale_offset(shape, token, chunk)] = q.scales[p * shape.chunks() + chunk];
      }
    }
  });
  return cache;
}

/// Element d of the key of position p, as the cache holds it.
double key_element(const quantized_keys& q, int p, int d) {
  return format::decode_element(
      format::packed_code(&q.values[p * head_dim / 2], d),
      q.scales[p * (head_dim / format::block_elems) + d / format::block_elems]);
}

/// Positions whose device result is off its float64 value by more than fp32 summation allows:
/// exact(p) gives the value and the sum of the magnitudes of its terms.
template <class Exact>
int count_mismatches(const std::vector<float>& got, Exact&& exact, const char* name) {
  int bad = 0;
  for (int p = 0; p < seq_len; ++p) {
    const auto [value, magnitude] = exact(p);
    if (!(std::fabs(got[p] - value) <= 1e-5 * magnitude + 1e-30) && bad++ < 5)
      std::printf("%s: position %d: got %.9g, expected %.9g\n", name, p, got[p], value);
  }
  return bad;
}

struct exact_value {
  double value, magnitude;
};

/// scale * (query . key p).
exact_value exact_dot(const quantized_keys& q, const std::vector<float>& query, int p,
                      double scale) {
  exact_value r{0, 0};
  for (int d = 0; d < head_dim; ++d) {
    const double term = scale * query[d] * key_element(q, p, d);
    r.value += term;
    r.magnitude += std::fabs(term);
  }
  return r;
}

/// sum over heads of w[h] * relu(q[h] . key p).
exact_value exact_logit(const quantized_keys& q, const std::vector<float>& qh,
                        const std::vector<float>& w, int p) {
  exact_value r{0, 0};
  for (int h = 0; h < heads; ++h) {
    double dot = 0, magnitude = 0;
    for (int d = 0; d < head_dim; ++d) {
      const double term = static_cast<double>(qh[h * head_dim + d]) * key_element(q, p, d);
      dot += term;
      magnitude += std::fabs(term);
    }
    r.value += w[h] * std::max(dot, 0.0);
    r.magnitude += std::fabs(w[h]) * magnitude;
  }
  return r;
}

}  // namespace

int main() {
  example::require_gpu("example_paged_key_dot");
  std::mt19937 rng(8);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> keys(seq_len * head_dim), query(head_dim), head_queries(heads * head_dim),
      weights(heads);
  for (float& x : keys) x = normal(rng);
  for (float& x : query) x = normal(rng);
  for (float& x : head_queries) x = normal(rng);
  for (float& x : weights) x = 0.125f * normal(rng);
  const quantized_keys q = quantize(keys);
  const layout::page_shape shape{block_size, head_dim};
  const int64_t page_stride = (shape.data_bytes() + 15) / 16 * 16 + 64;  // room past the data
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  int device = 0, wave_size = 0;
  example::check(mxi::platform::get_device(&device), "get_device");
  example::check(mxi::platform::device_wave_size(device, &wave_size), "wave size");

  const example::device_array<int32_t> pages(block_table_row);
  const example::device_array<float> d_query(query), d_head_queries(head_queries),
      d_weights(weights);
  int failures = 0;
  for (const mxi::cache_layout kind : {mxi::cache_layout::linear, mxi::cache_layout::mfma16}) {
    const char* name = kind == mxi::cache_layout::linear ? "linear" : "mfma16";
    const example::device_array<uint8_t> cache(build_cache(q, kind, page_stride));
    const example::device_array<float> dots(std::vector<float>(seq_len, NAN));
    const example::device_array<float> logits(std::vector<float>(seq_len, NAN));
    layout::dispatch(kind, [&](auto policy) {
      using Layout = decltype(policy);
      request_key_dots<Layout><<<(seq_len + 127) / 128, 128>>>(cache.data(), page_stride, shape,
                                                               pages.data(), seq_len,
                                                               d_query.data(), scale, dots.data());
      const bool known = mxi::platform::dispatch_wave_size(wave_size, [&](auto wave) {
        tile_head_logits<Layout, decltype(wave)::value><<<(seq_len + 63) / 64, 128>>>(
            cache.data(), page_stride, block_size, pages.data(), seq_len, d_head_queries.data(),
            d_weights.data(), heads, logits.data());
      });
      if (!known) std::exit(example::exit_mismatch);
    });
    example::check(mxi::platform::last_error(), "launch");
    const int bad_dots = count_mismatches(
        dots.download(), [&](int p) { return exact_dot(q, query, p, scale); }, name);
    const int bad_logits = count_mismatches(
        logits.download(), [&](int p) { return exact_logit(q, head_queries, weights, p); }, name);
    std::printf("paged_key_dot %s: %d positions, %d dot and %d logit mismatches\n", name, seq_len,
                bad_dots, bad_logits);
    failures += bad_dots + bad_logits;
  }
  return failures == 0 ? example::exit_ok : example::exit_mismatch;
}
