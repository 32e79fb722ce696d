// Example: an engine's own kernel over the keys of one request in the paged MXFP4 cache, with its
// own epilogue. A thread takes one position of the request: its page comes from the request's
// block-table row, its bytes from the cache layout's addressing (mxi/layout/cache_layout.hpp),
// their values from the MXFP4 decode (mxi/format/mxfp4.hpp). The epilogue here is a scaled fp32
// dot product with a query; the host checks it against a float64 computation, in both layouts.
//
// Exit code: 0 agrees, 1 disagrees, 4 no GPU (skipped).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "gpu_host.hpp"
#include "mxi/format/mxfp4.hpp"
#include "mxi/layout/cache_layout.hpp"

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

constexpr int head_dim = 128, block_size = 64, num_pages = 5, seq_len = 150;
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

/// Positions whose device result is off the float64 dot product by more than fp32 summation
/// of D terms allows.
int count_mismatches(const std::vector<float>& got, const quantized_keys& q,
                     const std::vector<float>& query, float scale, const char* name) {
  int bad = 0;
  for (int p = 0; p < seq_len; ++p) {
    double exact = 0, magnitude = 0;
    for (int d = 0; d < head_dim; ++d) {
      const double term =
          static_cast<double>(query[d]) *
          format::decode_element(
              format::packed_code(&q.values[p * head_dim / 2], d),
              q.scales[p * (head_dim / format::block_elems) + d / format::block_elems]);
      exact += term;
      magnitude += std::fabs(term);
    }
    const double tolerance = 1e-5 * scale * magnitude + 1e-30;
    if (!(std::fabs(got[p] - scale * exact) <= tolerance)) {
      if (bad++ < 5)
        std::printf("%s: position %d: got %.9g, expected %.9g\n", name, p, got[p], scale * exact);
    }
  }
  return bad;
}

}  // namespace

int main() {
  example::require_gpu("example_paged_key_dot");
  std::mt19937 rng(8);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> keys(seq_len * head_dim), query(head_dim);
  for (float& x : keys) x = normal(rng);
  for (float& x : query) x = normal(rng);
  const quantized_keys q = quantize(keys);
  const layout::page_shape shape{block_size, head_dim};
  const int64_t page_stride = (shape.data_bytes() + 15) / 16 * 16 + 64;  // room past the data
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));

  const example::device_array<int32_t> pages(block_table_row);
  const example::device_array<float> d_query(query);
  int failures = 0;
  for (const mxi::cache_layout kind : {mxi::cache_layout::linear, mxi::cache_layout::mfma16}) {
    const char* name = kind == mxi::cache_layout::linear ? "linear" : "mfma16";
    const example::device_array<uint8_t> cache(build_cache(q, kind, page_stride));
    const example::device_array<float> out(std::vector<float>(seq_len, NAN));
    layout::dispatch(kind, [&](auto policy) {
      request_key_dots<decltype(policy)>
          <<<(seq_len + 127) / 128, 128>>>(cache.data(), page_stride, shape, pages.data(), seq_len,
                                           d_query.data(), scale, out.data());
    });
    example::check(mxi::platform::last_error(), "launch");
    const int bad = count_mismatches(out.download(), q, query, scale, name);
    std::printf("paged_key_dot %s: %d positions, %d mismatches\n", name, seq_len, bad);
    failures += bad;
  }
  return failures == 0 ? example::exit_ok : example::exit_mismatch;
}
