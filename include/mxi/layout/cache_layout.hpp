// Byte addressing inside one page of the paged MXFP4 K cache. Each layout is a policy with the
// same static interface, so kernels take it as a template parameter; `cache_layout` names them at
// run time. 64-bit offsets throughout: a cache may exceed 4 GiB. docs/cache-layout.md draws each.
//
// The static interface: `kind`; `value_offset` and `scale_offset`; `copy_tokens` (a run of tokens
// as contiguous 16-byte aligned ranges); `block_size_multiple` and `head_dim_multiple` (the page
// shapes the order is defined for, on top of the contract's multiples of 16 and 32); and
// `token_scale_word` (whether a token's D/32 scale bytes lie together in chunk order at
// scale_offset(token, 0), so that 32-bit loads can move them: the sm90 page tiles need it).
#pragma once

#include <cstdint>

#include "mxi/config.hpp"
#include "mxi/format/mxfp4.hpp"
#include "mxi/types.hpp"

namespace mxi {
namespace layout {

/// Shape of one page: tokens, head dim, and the bytes its data needs (the stride may be larger).
struct page_shape {
  int block_size;  ///< tokens a page, BS
  int head_dim;    ///< D, a multiple of 32

  MXI_HOST_DEVICE constexpr int chunks() const { return head_dim / format::block_elems; }
  MXI_HOST_DEVICE constexpr int value_bytes_per_token() const { return head_dim / 2; }
  MXI_HOST_DEVICE constexpr int bytes_per_token() const { return head_dim / 2 + chunks(); }
  MXI_HOST_DEVICE constexpr int64_t data_bytes() const {
    return static_cast<int64_t>(block_size) * bytes_per_token();
  }
};

/// vLLM/DeepGEMM order: all packed values token-major, then all scales token-major.
struct linear {
  static constexpr cache_layout kind = cache_layout::linear;
  static constexpr int block_size_multiple = 16;
  static constexpr int head_dim_multiple = 32;
  static constexpr bool token_scale_word = true;

  /// Offset in the page of the 16 packed bytes of `chunk` (elements 32*chunk ..) of `token`.
  MXI_HOST_DEVICE static int64_t value_offset(page_shape s, int token, int chunk) {
    return static_cast<int64_t>(token) * s.value_bytes_per_token() + chunk * format::block_bytes;
  }
  /// Offset in the page of the scale byte of `chunk` of `token`.
  MXI_HOST_DEVICE static int64_t scale_offset(page_shape s, int token, int chunk) {
    return static_cast<int64_t>(s.block_size) * s.value_bytes_per_token() +
           static_cast<int64_t>(token) * s.chunks() + chunk;
  }
  /// Tokens [from, from + count) of page `src` to [to, to + count) of page `dst` as contiguous
  /// byte ranges, copy(dst offset, src offset, bytes), each a multiple of 16 bytes at 16-byte
  /// aligned offsets: from and to multiples of 4, and the scales rounded up to 4 tokens (which
  /// stay inside both pages when their block sizes are multiples of 4).
  template <class Copy>
  MXI_HOST_DEVICE static void copy_tokens(page_shape dst, page_shape src, int to, int from, int count,
                                          Copy&& copy) {
    copy(value_offset(dst, to, 0), value_offset(src, from, 0),
         static_cast<int64_t>(count) * src.value_bytes_per_token());
    copy(scale_offset(dst, to, 0), scale_offset(src, from, 0),
         static_cast<int64_t>((count + 3) / 4 * 4) * src.chunks());
  }
};

/// The gfx950 scaled-MFMA order: in each group of 16 tokens, lane l of a wave64 reads token l%16,
/// chunk l/16 as one 16-byte load, and the 64 lanes cover one contiguous 1 KiB (D = 128).
struct mfma16 {
  static constexpr cache_layout kind = cache_layout::mfma16;
  static constexpr int group_tokens = 16;
  static constexpr int block_size_multiple = 16;
  static constexpr int head_dim_multiple = 32;
  static constexpr bool token_scale_word = true;

  MXI_HOST_DEVICE static int64_t group_offset(page_shape s, int token) {
    return static_cast<int64_t>(token / group_tokens) * group_tokens * s.bytes_per_token();
  }
  MXI_HOST_DEVICE static int64_t value_offset(page_shape s, int token, int chunk) {
    return group_offset(s, token) +
           (static_cast<int64_t>(chunk) * group_tokens + token % group_tokens) * format::block_bytes;
  }
  MXI_HOST_DEVICE static int64_t scale_offset(page_shape s, int token, int chunk) {
    return group_offset(s, token) + static_cast<int64_t>(group_tokens) * s.value_bytes_per_token() +
           (token % group_tokens) * s.chunks() + chunk;
  }
  /// As linear::copy_tokens: whole groups, one range (from and to multiples of 16, the count
  /// rounded up to a group).
  template <class Copy>
  MXI_HOST_DEVICE static void copy_tokens(page_shape dst, page_shape src, int to, int from, int count,
                                          Copy&& copy) {
    copy(group_offset(dst, to), group_offset(src, from),
         static_cast<int64_t>((count + group_tokens - 1) / group_tokens * group_tokens) * src.bytes_per_token());
  }
};

/// The order vLLM writes on ROCm for aiter's paged MXFP4 kernel (its cache_format): a page is runs
/// of RunTokens tokens. All values come first, run after run, each run [D/32 chunks][RunTokens
/// tokens][16 B]; then all scales, run after run, each run [scale_lanes][RunTokens tokens]
/// [D/32 / scale_lanes] with chunk c at (c % scale_lanes, token, c / scale_lanes). scale_lanes is
/// 2 with runs of 32 and 4 with runs of 16, so the page's tokens must fill whole runs and D/32 be a
/// multiple of scale_lanes.
template <int RunTokens>
struct aiter_runs {
  static_assert(RunTokens == 32 || RunTokens == 16, "aiter writes runs of 32 or 16 tokens");
  static constexpr cache_layout kind = RunTokens == 32 ? cache_layout::aiter32 : cache_layout::aiter16;
  static constexpr int run_tokens = RunTokens;
  static constexpr int scale_lanes = RunTokens == 32 ? 2 : 4;
  static constexpr int block_size_multiple = RunTokens;
  static constexpr int head_dim_multiple = format::block_elems * scale_lanes;
  static constexpr bool token_scale_word = false;

  MXI_HOST_DEVICE static int64_t value_offset(page_shape s, int token, int chunk) {
    return static_cast<int64_t>(token / RunTokens) * RunTokens * s.value_bytes_per_token() +
           (static_cast<int64_t>(chunk) * RunTokens + token % RunTokens) * format::block_bytes;
  }
  MXI_HOST_DEVICE static int64_t scale_offset(page_shape s, int token, int chunk) {
    const int per_lane = s.chunks() / scale_lanes;
    return static_cast<int64_t>(s.block_size) * s.value_bytes_per_token() +
           static_cast<int64_t>(token / RunTokens) * RunTokens * s.chunks() +
           (static_cast<int64_t>(chunk % scale_lanes) * RunTokens + token % RunTokens) * per_lane +
           chunk / scale_lanes;
  }
  /// As linear::copy_tokens: whole runs (from and to multiples of RunTokens, the count rounded up
  /// to a run), the values in one range and the scales in another.
  template <class Copy>
  MXI_HOST_DEVICE static void copy_tokens(page_shape dst, page_shape src, int to, int from, int count,
                                          Copy&& copy) {
    const int64_t tokens = static_cast<int64_t>((count + RunTokens - 1) / RunTokens) * RunTokens;
    copy(value_offset(dst, to, 0), value_offset(src, from, 0), tokens * src.value_bytes_per_token());
    copy(scale_offset(dst, to, 0), scale_offset(src, from, 0), tokens * src.chunks());
  }
};
using aiter32 = aiter_runs<32>;
using aiter16 = aiter_runs<16>;

/// Calls `f(Layout{})` with the policy named by `kind`: the one place a run-time layout becomes a
/// compile-time one.
template <class F>
MXI_HOST_DEVICE decltype(auto) dispatch(cache_layout kind, F&& f) {
  if (kind == cache_layout::mfma16) return f(mfma16{});
  if (kind == cache_layout::aiter32) return f(aiter32{});
  if (kind == cache_layout::aiter16) return f(aiter16{});
  return f(linear{});
}

/// The layout's name as the tools and bindings spell it ("linear", "mfma16", "aiter32", "aiter16").
MXI_HOST_DEVICE constexpr const char* name(cache_layout kind) {
  return kind == cache_layout::mfma16    ? "mfma16"
         : kind == cache_layout::aiter32 ? "aiter32"
         : kind == cache_layout::aiter16 ? "aiter16"
                                         : "linear";
}

/// Whether pages of `s` can hold layout `kind`: BS and D multiples of what the order needs.
MXI_HOST_DEVICE bool holds(cache_layout kind, page_shape s) {
  return dispatch(kind, [&](auto l) {
    using L = decltype(l);
    return s.block_size % L::block_size_multiple == 0 && s.head_dim % L::head_dim_multiple == 0;
  });
}

/// Byte offset of a page in the cache.
MXI_HOST_DEVICE int64_t page_offset(int64_t page, int64_t page_stride) { return page * page_stride; }

}  // namespace layout
}  // namespace mxi
