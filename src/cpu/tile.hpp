// Operands of the threaded CPU path, decoded so that each 32-element block dot product is an
// exact small-integer sum: E2M1 codes become "twice the magnitude, signed" (|v| <= 12, so a
// 32-term sum of products stays within int16), and the E8M0 scales become fp32 powers of two.
#pragma once

#include <cstdint>
#include <vector>

#include "mxi/layout/cache_layout.hpp"
#include "mxi/mxi.hpp"

namespace mxi::detail {

/// Keys scored together: one vector lane each in the inner loop.
inline constexpr int tile_keys = 16;

/// Signed twice-magnitude of every E2M1 code.
struct e2m1_table {
  int16_t twice[16];
  e2m1_table() {
    for (unsigned c = 0; c < 16; ++c) {
      const int m = format::e2m1_twice_magnitude(c);
      twice[c] = static_cast<int16_t>((c & 8u) ? -m : m);
    }
  }
};
inline const e2m1_table e2m1_lut;

/// One query token, all heads: values [H][D] (signed twice-magnitudes), scales [H][D/32] holding
/// 2^(e-127) / 4 (the 1/4 undoes the two doublings; exact, a power of two >= 2^-129), weights [H].
struct query_operand {
  std::vector<int16_t> values;
  std::vector<float> scales;
  const float* weights = nullptr;

  void load(const query_view& q, int64_t t) {
    const int h_count = q.num_heads, d = q.head_dim, chunks = d / format::block_elems;
    values.resize(static_cast<size_t>(h_count) * d);
    scales.resize(static_cast<size_t>(h_count) * chunks);
    const uint8_t* v = q.values + t * h_count * (d / 2);
    for (int64_t i = 0; i < static_cast<int64_t>(h_count) * d / 2; ++i) {
      values[2 * i] = e2m1_lut.twice[v[i] & 15u];
      values[2 * i + 1] = e2m1_lut.twice[v[i] >> 4];
    }
    const uint8_t* s = q.scales + t * h_count * chunks;
    for (int i = 0; i < h_count * chunks; ++i) scales[i] = format::decode_e8m0(s[i]) * 0.25f;
    weights = q.weights + t * h_count;
  }
};

/// Up to tile_keys keys, transposed so the key index is innermost: values [D][tile_keys], scales
/// [D/32][tile_keys]. Unused lanes hold zeros (their scores are ignored).
struct key_operand {
  std::vector<int16_t> values;
  std::vector<float> scales;

  /// Decodes the keys at (page base, token in page) pairs `where(i)` for i < n.
  template <class Layout, class Where>
  void load(layout::page_shape shape, int n, Where&& where) {
    const int chunks = shape.chunks();
    values.assign(static_cast<size_t>(shape.head_dim) * tile_keys, 0);
    scales.assign(static_cast<size_t>(chunks) * tile_keys, 0.0f);
    for (int i = 0; i < n; ++i) {
      const auto [page, token] = where(i);
      for (int c = 0; c < chunks; ++c) {
        const uint8_t* bytes = page + Layout::value_offset(shape, token, c);
        int16_t* out = values.data() + c * format::block_elems * tile_keys + i;
        for (int b = 0; b < format::block_bytes; ++b) {
          out[(2 * b) * tile_keys] = e2m1_lut.twice[bytes[b] & 15u];
          out[(2 * b + 1) * tile_keys] = e2m1_lut.twice[bytes[b] >> 4];
        }
        scales[c * tile_keys + i] = format::decode_e8m0(page[Layout::scale_offset(shape, token, c)]);
      }
    }
  }
};

}  // namespace mxi::detail
