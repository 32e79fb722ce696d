// Lossless conversion of pages between layouts (host code: the tool and tests use it, engines
// convert once when they load a cache written elsewhere).
#pragma once

#include <cstdint>
#include <cstring>

#include "mxi/layout/cache_layout.hpp"

namespace mxi::layout {

/// Copies one token's packed values (D/2 bytes) and scales (D/32 bytes) out of a page.
template <class Layout>
void read_token(const uint8_t* page, page_shape s, int token, uint8_t* values, uint8_t* scales) {
  for (int c = 0; c < s.chunks(); ++c) {
    std::memcpy(values + c * format::block_bytes, page + Layout::value_offset(s, token, c),
                format::block_bytes);
    scales[c] = page[Layout::scale_offset(s, token, c)];
  }
}

/// Writes one token's packed values and scales into a page.
template <class Layout>
void write_token(uint8_t* page, page_shape s, int token, const uint8_t* values,
                 const uint8_t* scales) {
  for (int c = 0; c < s.chunks(); ++c) {
    std::memcpy(page + Layout::value_offset(s, token, c), values + c * format::block_bytes,
                format::block_bytes);
    page[Layout::scale_offset(s, token, c)] = scales[c];
  }
}

/// Rewrites `num_pages` pages from layout `from` into `to`. Bytes past a page's data (the padding
/// up to `page_stride`) are copied unchanged, so a round trip is the identity on every byte.
/// `src` and `dst` must not overlap.
inline void convert_pages(const uint8_t* src, uint8_t* dst, int64_t num_pages, int64_t page_stride,
                          page_shape s, cache_layout from, cache_layout to) {
  uint8_t values[512];
  uint8_t scales[32];
  for (int64_t p = 0; p < num_pages; ++p) {
    const uint8_t* in = src + page_offset(p, page_stride);
    uint8_t* out = dst + page_offset(p, page_stride);
    std::memcpy(out + s.data_bytes(), in + s.data_bytes(),
                static_cast<size_t>(page_stride - s.data_bytes()));
    for (int t = 0; t < s.block_size; ++t) {
      dispatch(from, [&](auto L) { read_token<decltype(L)>(in, s, t, values, scales); });
      dispatch(to, [&](auto L) { write_token<decltype(L)>(out, s, t, values, scales); });
    }
  }
}

}  // namespace mxi::layout
