// gfx950 (CDNA4, MI355X) logits tile: one v_mfma_scale_f32_16x16x128_f8f6f4 with E2M1 on both
// sides gives 16 query heads x 16 key tokens over D = 128, the E8M0 block scales applied inside
// the instruction. The keys' operands come straight from the pages (key_values/key_scale, or
// fetch_keys for 16 keys of any pages): a lane's source is one 16-byte block and one scale byte,
// and a wave's 64 loads for 16 consecutive tokens of a page are one contiguous KiB in either
// layout, so nothing is staged in LDS. `row_scorer` is the arch/target.hpp scorer interface in its
// direct form (paged_logits_kernel streams each wave's keys, several steps ahead). The operand
// builders are host/device functions: the host test (tests/test_mfma_emulation.cpp) feeds these
// very registers to a CPU model of the instruction.
//
// Instruction facts relied on (AMD CDNA4 ISA, LLVM AMDGPU; checked against AMD's own MXFP4 test
// of the builtin in aiter's opus, and by compiling this file for gfx950 and reading the assembly):
// - wave64. A and B are 8 VGPRs a lane; with E2M1 (cbsz = blgp = 4) only the low 4 are read:
//   lane l holds row l%16 (A: an M row, B: an N column) and K elements 32*(l/16) .. +31, element
//   2i in the low nibble of byte i. So one lane's source is one MXFP4 block: one 16-byte load.
// - Each scale operand is one VGPR a lane; the builtin's opsel (0..3, op_sel_hi:op_sel in the
//   assembly) picks a byte of it, and that E8M0 byte scales the 32 elements the lane holds. Four
//   head tiles therefore share one scale register.
// - The accumulator is 4 floats a lane: element i of lane l is C[4*(l/16) + i][l%16].
#pragma once

#include <cstdint>
#include <cstring>
#include <utility>

#include "mxi/arch/head_reduce.hpp"
#include "mxi/arch/key_tile.hpp"
#include "mxi/config.hpp"
#include "mxi/format/mxfp4.hpp"
#include "mxi/layout/cache_layout.hpp"
#if MXI_GPU_COMPILER
#include "mxi/platform/intrinsics.hpp"
#endif

// The scaled MFMA exists only when compiling device code for gfx950; other device passes
// (gfx942) compile a trap and the host never selects this tile for them.
#if defined(__HIP_DEVICE_COMPILE__) && defined(__gfx950__)
#define MXI_ARCH_GFX950 1
#else
#define MXI_ARCH_GFX950 0
#endif

namespace mxi::arch::gfx950 {

/// arch/target.hpp's meaning: false only in a device pass that cannot issue the instruction.
#if defined(__HIP_DEVICE_COMPILE__) && !defined(__gfx950__)
inline constexpr bool compiled_here = false;
#else
inline constexpr bool compiled_here = true;
#endif
inline constexpr int wave_size = 64;
inline constexpr int tile_heads = 16;   ///< M
inline constexpr int tile_tokens = 16;  ///< N
inline constexpr int tile_dim = 128;    ///< K: the whole head dim in one instruction
inline constexpr int acc_size = 4;      ///< accumulator floats a lane
inline constexpr int e2m1_format = 4;   ///< cbsz / blgp code of E2M1

/// The A row / B column a lane feeds, and which 32-element block of K.
MXI_HOST_DEVICE constexpr int lane_row(int lane) { return lane % 16; }
MXI_HOST_DEVICE constexpr int lane_chunk(int lane) { return lane / 16; }
/// Accumulator element i of `lane` is C[acc_row(lane, i)][acc_col(lane)].
MXI_HOST_DEVICE constexpr int acc_row(int lane, int i) { return 4 * (lane / 16) + i; }
MXI_HOST_DEVICE constexpr int acc_col(int lane) { return lane % 16; }

/// One lane's E2M1 source: the four VGPRs the instruction reads (one MXFP4 block, 32 codes).
struct fp4x32 {
  uint32_t dwords[4];
};

namespace detail {
/// Callers guarantee 16-byte alignment (pages and Q rows are 16-byte aligned and a block is 16
/// bytes), so the device compiler emits one dwordx4 load.
MXI_HOST_DEVICE fp4x32 load_block(const uint8_t* p) {
  fp4x32 r;
  memcpy(r.dwords, __builtin_assume_aligned(p, 16), sizeof(r.dwords));
  return r;
}
}  // namespace detail

/// B source of `lane`: block lane_chunk(lane) of `token` in `page`. The tile's 16 tokens are the
/// callers' choice, one per lane_row (a 16-token group: token = group + lane_row(lane), where in
/// mfma16 the wave's 64 loads are one contiguous KiB; a candidate list: any 16 tokens).
template <class Layout>
MXI_HOST_DEVICE fp4x32 key_values(const uint8_t* page, layout::page_shape s, int token, int lane) {
  return detail::load_block(page + Layout::value_offset(s, token, lane_chunk(lane)));
}

/// Scale word of `lane` for key_values: the E8M0 byte in bits 0..7 (op_sel 0).
template <class Layout>
MXI_HOST_DEVICE uint32_t key_scale(const uint8_t* page, layout::page_shape s, int token, int lane) {
  return page[Layout::scale_offset(s, token, lane_chunk(lane))];
}

/// One lane's B source and scale word for a 16-key step (fetch_keys), as score takes them.
struct key_operand {
  fp4x32 values;
  uint32_t scale;
};

/// `lane`'s operand for keys source(0) .. source(15) (arch::key_source: any page, any token, in
/// pages of `block_size` tokens): key source(lane_row(lane)), block lane_chunk(lane). A key with
/// token < 0 reads token 0 of its page (which must exist) and its score means nothing: every lane
/// loads, because a load some paths skip leaves the compiler unable to count the loads in flight
/// (it then waits for all of them before each step).
template <class Layout, class Source>
MXI_HOST_DEVICE key_operand fetch_keys(int block_size, Source&& source, int lane) {
  const key_source k = source(lane_row(lane));
  const int token = k.token < 0 ? 0 : k.token;
  const layout::page_shape s{block_size, tile_dim};
  return {key_values<Layout>(k.page, s, token, lane), key_scale<Layout>(k.page, s, token, lane)};
}

/// One query token's Q and weights as lane `lane` holds them for the whole key loop: the A
/// source of each 16-head tile, the tiles' scales four to a word (tile t in byte t%4 of word t/4,
/// picked by op_sel), and the weights of the heads its accumulator elements hold.
template <int Heads>
struct query_fragment {
  static_assert(Heads % tile_heads == 0 && Heads >= 16 && Heads <= 128,
                "query_fragment: H must be a multiple of 16 in 16..128");
  static constexpr int tiles = Heads / tile_heads;
  static constexpr int scale_words = (tiles + 3) / 4;

  fp4x32 values[tiles];
  uint32_t scales[scale_words];
  float weights[tiles][acc_size];

  /// op_sel and scale word of tile t.
  MXI_HOST_DEVICE static constexpr int opsel(int t) { return t % 4; }
  MXI_HOST_DEVICE uint32_t scale_word(int t) const { return scales[t / 4]; }
};

/// Builds `lane`'s fragment from one query token: q_values [H][D/2] (16-byte aligned), q_scales
/// [H][D/32] and weights [H]; only the first `heads` <= Heads heads are read, the rest score zero
/// (zero values, scale 2^0, weight 0).
template <int Heads>
MXI_HOST_DEVICE query_fragment<Heads> load_query(const uint8_t* q_values, const uint8_t* q_scales,
                                                 const float* weights, int lane,
                                                 int heads = Heads) {
  constexpr int row_bytes = tile_dim / 2;
  constexpr int row_scales = tile_dim / format::block_elems;
  query_fragment<Heads> q;
  for (int w = 0; w < q.scale_words; ++w) q.scales[w] = 0;
  for (int t = 0; t < q.tiles; ++t) {
    const int head = t * tile_heads + lane_row(lane);
    const bool live = head < heads;
    q.values[t] = live ? detail::load_block(q_values + head * row_bytes +
                                            lane_chunk(lane) * format::block_bytes)
                       : fp4x32{{0u, 0u, 0u, 0u}};
    q.scales[t / 4] |=
        static_cast<uint32_t>(live ? q_scales[head * row_scales + lane_chunk(lane)] : 127u)
        << (8 * q.opsel(t));
    for (int i = 0; i < acc_size; ++i) {
      const int h = t * tile_heads + acc_row(lane, i);
      q.weights[t][i] = h < heads ? weights[h] : 0.0f;
    }
  }
  return q;
}

/// acc += (A scaled by byte OpselA of scale_a) x (B scaled by byte OpselB of scale_b), E2M1 x E2M1.
template <int OpselA, int OpselB>
MXI_DEVICE void mfma_scale_e2m1(const fp4x32& a, uint32_t scale_a, const fp4x32& b,
                                uint32_t scale_b, float (&acc)[acc_size]) {
  static_assert(OpselA >= 0 && OpselA < 4 && OpselB >= 0 && OpselB < 4, "op_sel picks a byte");
#if MXI_ARCH_GFX950
  typedef int v8i __attribute__((ext_vector_type(8)));
  typedef float v4f __attribute__((ext_vector_type(4)));
  // The upper four source VGPRs are unread for E2M1; zeros let the compiler allocate only four.
  const v8i va = {
      int(a.dwords[0]), int(a.dwords[1]), int(a.dwords[2]), int(a.dwords[3]), 0, 0, 0, 0};
  const v8i vb = {
      int(b.dwords[0]), int(b.dwords[1]), int(b.dwords[2]), int(b.dwords[3]), 0, 0, 0, 0};
  v4f c = {acc[0], acc[1], acc[2], acc[3]};
  c = __builtin_amdgcn_mfma_scale_f32_16x16x128_f8f6f4(va, vb, c, e2m1_format, e2m1_format, OpselA,
                                                       int(scale_a), OpselB, int(scale_b));
  for (int i = 0; i < acc_size; ++i) acc[i] = c[i];
#else
  // Not reached: the host selects this tile only for gfx950 (see compiled_here).
  (void)a, (void)scale_a, (void)b, (void)scale_b, (void)acc;
  __builtin_trap();
#endif
}

/// A lane's share of a key's logit as two running sums: of its accumulator elements 0 and 2 of
/// every head tile (`even`) and of 1 and 3 (`odd`), so that one packed fma (v_pk_fma_f32) adds two
/// heads. The order is fixed (tile by tile, element pairs (0, 1) then (2, 3)), and even + odd
/// ends it; the contract allows any fixed order of the head sum.
struct head_pair_share {
  float even = 0.0f, odd = 0.0f;
};

/// `s` plus w[i] * relu(acc[i]) for the four heads of one head tile, in head_pair_share's order.
/// The device pass of gfx950 computes the two sums of a pair at once: relu as IEEE maximum(x,
/// 0), which keeps NaN like format::relu, and one packed fma; the bits are those of the scalar
/// form below (maximum gives +0 where relu gives -0, and no sum that starts at +0 can tell them
/// apart: w * -0 or w * +0 added to a sum leaves it as it is, +0 + -0 being +0).
MXI_HOST_DEVICE head_pair_share add_tile_heads(const float (&acc)[acc_size],
                                               const float (&w)[acc_size], head_pair_share s) {
#if MXI_ARCH_GFX950
  typedef float v2f __attribute__((ext_vector_type(2)));
  v2f sum = {s.even, s.odd};
  for (int i = 0; i < acc_size; i += 2) {
    const v2f relu = __builtin_elementwise_maximum(v2f{acc[i], acc[i + 1]}, v2f{0.0f, 0.0f});
    sum = __builtin_elementwise_fma(v2f{w[i], w[i + 1]}, relu, sum);
  }
  return {sum.x, sum.y};
#else
  for (int i = 0; i < acc_size; i += 2) {
    s.even = add_head(s.even, w[i], acc[i]);
    s.odd = add_head(s.odd, w[i + 1], acc[i + 1]);
  }
  return s;
#endif
}

namespace detail {
/// This lane's share after head tile T (its four heads added onto `share`): tile T's scale is
/// byte T%4 of its word (op_sel), the key's byte 0.
template <int T, int Heads>
MXI_DEVICE head_pair_share score_tile(const query_fragment<Heads>& q, const fp4x32& b,
                                      uint32_t b_scale, head_pair_share share) {
  float acc[acc_size] = {0.0f, 0.0f, 0.0f, 0.0f};
  mfma_scale_e2m1<query_fragment<Heads>::opsel(T), 0>(q.values[T], q.scale_word(T), b, b_scale,
                                                      acc);
  return add_tile_heads(acc, q.weights[T], share);
}

template <int Heads, int... T>
MXI_DEVICE float score_tiles(const query_fragment<Heads>& q, const fp4x32& b, uint32_t b_scale,
                             std::integer_sequence<int, T...>) {
  head_pair_share share;
  ((share = score_tile<T>(q, b, b_scale, share)), ...);  // tiles in order: one instruction each
  return share.even + share.odd;
}
}  // namespace detail

/// Logit (sum over heads of w * relu(q . k)) of the token whose B source and scale word this lane
/// holds, from key_values/key_scale or fetch_keys. The whole wave calls it.
template <int Heads>
MXI_DEVICE float score(const query_fragment<Heads>& q, const fp4x32& b, uint32_t b_scale) {
  const float share =
      detail::score_tiles(q, b, b_scale, std::make_integer_sequence<int, Heads / tile_heads>{});
#if MXI_ARCH_GFX950
  // The four lanes of a token (l % 16 + 16 g) hold its heads between them.
  return lane_head_sum<wave_size, 16, 4>(share);
#else
  __builtin_trap();  // not reached, as for mfma_scale_e2m1
  return share;
#endif
}

#if MXI_GPU_COMPILER

/// The arch/target.hpp scorer, direct form: one query row (Heads heads, D = 128) against 16 keys a
/// step whose operands the kernel fetches `lookahead` steps before it scores them (fetch, then
/// score); Q, its scales and the weights stay in registers (no scratch, no key tile).
template <int Heads>
struct row_scorer {
  static constexpr int step_keys = tile_tokens;
  static constexpr int scratch_bytes = 0;
  static constexpr bool direct_keys = true;
  static constexpr bool float_scales = false;  ///< no tile: the MFMA takes the E8M0 bytes
  /// Steps the kernel's ring holds (20 VGPRs), three in flight while one is scored: 3 KiB of keys
  /// a wave, 48 KiB a CU at four waves a SIMD, about 1.5 times what 8 TB/s needs at 1 us of
  /// loaded HBM latency (docs/performance.md, gfx950 model).
  static constexpr int lookahead = 4;

  query_fragment<Heads> q;

  /// Loads the row: q_values [Heads][64] (16-byte aligned), q_scales [Heads][4], weights [Heads],
  /// of which the first `heads` <= Heads heads are read; the rest score zero.
  MXI_DEVICE void load(const uint8_t* q_values, const uint8_t* q_scales, const float* weights,
                       int heads, float* /*scratch*/) {
    q = load_query<Heads>(q_values, q_scales, weights, platform::lane_id<wave_size>(), heads);
  }

  /// This lane's operand of keys source(0) .. source(15) (fetch_keys).
  template <class Layout, class Source>
  MXI_DEVICE static key_operand fetch(int block_size, Source&& source) {
    return fetch_keys<Layout>(block_size, source, platform::lane_id<wave_size>());
  }

  /// Scores the step whose operand this lane holds: out(i, score) for keys i = 0 .. 15 of the
  /// step, each once (on lanes 0..15).
  template <class Out>
  MXI_DEVICE void score(const key_operand& keys, Out&& out) const {
    const int lane = platform::lane_id<wave_size>();
    const float logit = gfx950::score(q, keys.values, keys.scale);
    if (lane_chunk(lane) == 0) out(lane_row(lane), logit);
  }
};

#endif  // MXI_GPU_COMPILER

}  // namespace mxi::arch::gfx950
