// The K-cache writer's and the Q quantizer's per-row work, shared by the CPU backends: both only
// call format::quantize_row, so every backend writes the same bytes (docs/semantics.md: the
// format, the writer).
#pragma once

#include <cstdint>

#include "mxi/format/bf16.hpp"
#include "mxi/layout/cache_layout.hpp"
#include "mxi/layout/convert.hpp"
#include "mxi/mxi.hpp"

namespace mxi::detail {

/// Element i of an fp32 or bf16 array, as fp32 (bf16 widens exactly).
inline float load_float(const void* data, float_type type, int64_t i) {
  if (type == float_type::f32) return static_cast<const float*>(data)[i];
  return format::widen_bf16(static_cast<const uint16_t*>(data)[i]);
}

/// Quantizes row i of K into its slot; returns device_error_slot_mapping for a slot outside
/// [0, NB * BS) other than -1, which skips the row.
inline uint32_t write_k_row(const k_cache_write_args& a, int64_t i) {
  const int64_t slot = a.slot_mapping[i];
  if (slot == -1) return device_error_none;
  const mutable_cache_view& c = a.cache;
  if (slot < 0 || slot >= c.num_pages * c.block_size) return device_error_slot_mapping;
  const layout::page_shape shape{c.block_size, c.head_dim};
  uint8_t values[256];  // D <= 512
  uint8_t scales[16];
  const int64_t base = i * c.head_dim;
  format::quantize_row([&](int j) { return load_float(a.k, a.k_type, base + j); }, c.head_dim,
                       values, scales, a.rule);
  uint8_t* page = c.data + layout::page_offset(slot / c.block_size, c.page_stride);
  const int token = static_cast<int>(slot % c.block_size);
  layout::dispatch(c.layout, [&](auto L) {
    layout::write_token<decltype(L)>(page, shape, token, values, scales);
  });
  return device_error_none;
}

/// Quantizes row `row` (= token * H + head) of Q.
inline void quantize_q_row(const q_quantize_args& a, int64_t row) {
  const int64_t base = row * a.head_dim;
  format::quantize_row([&](int j) { return load_float(a.q, a.q_type, base + j); }, a.head_dim,
                       a.values + row * (a.head_dim / 2), a.scales + row * (a.head_dim / 32),
                       a.rule);
}

}  // namespace mxi::detail
