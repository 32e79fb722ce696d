// K-cache writer and its sibling the Q quantizer share one job: quantize rows of fp32 or bf16 into
// MXFP4 blocks, bit for bit what the host's format::quantize_block gives (block::quantize_rows:
// 8 lanes a block, coalesced loads, several rows a thread). Writer: k [N][D], row i written at
// slot_mapping[i] (page * BS + offset) in the cache's layout; -1 skips the row, any other slot
// outside [0, NB * BS) is skipped and raises device_error_slot_mapping.
#pragma once

#include <cstdint>
#include <type_traits>

#include "mxi/block/group_quantize.hpp"
#include "mxi/device/tuning.hpp"
#include "mxi/format/mxfp4.hpp"
#include "mxi/layout/cache_layout.hpp"
#include "mxi/platform/runtime.hpp"
#include "mxi/types.hpp"

namespace mxi::device {

struct k_cache_write_problem {
  block::float_source k;  ///< [N][D]
  int64_t num_tokens = 0;
  int head_dim = 128;
  const int64_t* slot_mapping = nullptr;
  uint8_t* cache = nullptr;
  int64_t num_pages = 0;
  int64_t page_stride = 0;
  int block_size = 64;
  format::scale_rule rule = format::scale_rule::ceil;
};

#if MXI_GPU_COMPILER

namespace detail {

/// Calls f(std::integral_constant<int, Threads>{}) with the current device's quantizer block
/// (quantize_tuned) and returns what f returns.
template <class F>
platform::error_t with_quantize_threads(F&& f) {
  arch::target t = arch::target::generic;
  const platform::error_t e = current_target(&t);
  if (e != platform::success) return e;
  return with_target(t, [&](auto target) {
    return f(std::integral_constant<int, quantize_tuned(decltype(target)::value).threads>{});
  });
}

/// Blocks of `threads` that cover `num_rows` rows of `row_elems` elements, `rows_a_thread` each.
inline unsigned quantize_blocks(int64_t num_rows, int row_elems, int threads, int rows_a_thread) {
  const int64_t rows =
      static_cast<int64_t>(block::quantize_block_rows(threads, row_elems)) * rows_a_thread;
  return static_cast<unsigned>((num_rows + rows - 1) / rows);
}

/// First row of this block (quantize_blocks' layout).
template <int Threads, int Rows>
MXI_DEVICE int64_t quantize_first_row(int row_elems) {
  return static_cast<int64_t>(blockIdx.x) * block::quantize_block_rows(Threads, row_elems) * Rows;
}

/// Where the writer puts row `token`: the cache slot slot_mapping[token].
template <class Layout>
struct cache_slots_destination {
  k_cache_write_problem p;  // by value: a reference would take the kernel parameter's address
  uint32_t* error_word;

  MXI_DEVICE int64_t locate(int64_t token) const { return p.slot_mapping[token]; }
  MXI_DEVICE void store(int64_t slot, int chunk, const block::quantized_block& q) const {
    if (slot == -1) return;
    if (slot < 0 || slot >= p.num_pages * p.block_size) {
      if (chunk == 0 && error_word) atomicOr(error_word, device_error_slot_mapping);
      return;
    }
    // Slots of real caches fit 32 bits, whose division is a few instructions (64-bit: ~70).
    int64_t page;
    int offset;
    if (slot <= UINT32_MAX) {
      const uint32_t s = static_cast<uint32_t>(slot), bs = static_cast<uint32_t>(p.block_size);
      page = s / bs;
      offset = static_cast<int>(s % bs);
    } else {
      page = slot / p.block_size;
      offset = static_cast<int>(slot % p.block_size);
    }
    const layout::page_shape shape{p.block_size, p.head_dim};
    uint8_t* base = p.cache + layout::page_offset(page, p.page_stride);
    *reinterpret_cast<uint4*>(base + Layout::value_offset(shape, offset, chunk)) = q.packed;
    base[Layout::scale_offset(shape, offset, chunk)] = q.scale;
  }
};

/// Rows a writer thread takes: four 16-byte (fp32) or 8-byte (bf16) loads and four slots in flight.
inline constexpr int write_rows_a_thread = 4;

template <int Threads, class Layout>
__global__ __launch_bounds__(Threads) void write_k_cache_kernel(k_cache_write_problem p,
                                                                uint32_t* error_word) {
  block::quantize_rows<Threads, write_rows_a_thread>(
      p.k, p.num_tokens, p.head_dim, quantize_first_row<Threads, write_rows_a_thread>(p.head_dim),
      p.rule, cache_slots_destination<Layout>{p, error_word});
}

}  // namespace detail

/// Writes the rows; `error_word` may be null.
inline platform::error_t launch_k_cache_write(const k_cache_write_problem& p, cache_layout kind,
                                              uint32_t* error_word, platform::stream_t stream) {
  if (p.num_tokens == 0) return platform::success;
  return detail::with_quantize_threads([&](auto threads) {
    constexpr int n = decltype(threads)::value;
    layout::dispatch(kind, [&](auto l) {
      detail::write_k_cache_kernel<n, decltype(l)>
          <<<detail::quantize_blocks(p.num_tokens, p.head_dim, n, detail::write_rows_a_thread), n,
             0, stream>>>(p, error_word);
    });
    return platform::last_error();
  });
}

#endif  // MXI_GPU_COMPILER

}  // namespace mxi::device
