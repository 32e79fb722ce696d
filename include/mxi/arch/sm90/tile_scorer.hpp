// The sm90 logits tile (arch/sm90.hpp gives its two exact schemes and operand layouts):
// tile_scorer loads a group's query rows into a warpgroup's shared scratch (the int8 and e4m3 B
// operands, the scaled weights, which scheme the rows take) and scores staged 64-key page tiles
// against them, calling out(row, key, score) once per (row, key).
#pragma once

#include <cstdint>

#include "mxi/arch/fp4_to_fp8.hpp"
#include "mxi/arch/fp4_to_int8.hpp"
#include "mxi/arch/head_reduce.hpp"
#include "mxi/arch/key_tile.hpp"
#include "mxi/arch/sm90/integer_terms.hpp"
#include "mxi/arch/sm90/wgmma.hpp"
#include "mxi/config.hpp"
#include "mxi/platform/intrinsics.hpp"

namespace mxi::arch::sm90 {

#if MXI_GPU_COMPILER

/// Scores up to max_rows query rows (Heads heads each, D = 128) against one staged 64-key tile, a
/// page tile of the cache's layout (arch/key_tile.hpp); one warpgroup, the rows' query in its
/// shared scratch.
template <int Heads>
struct tile_scorer {
  static_assert(Heads == 32 || Heads == 64 || Heads == 128, "H: 32, 64 or 128 (padded)");
  /// Query rows a warpgroup scores at once: logits_config's sm90 groups (three rows' queries leave
  /// room for three consumers a block at H = 64; at H = 128 two rows take as much).
  static constexpr int max_rows = Heads <= 64 ? 3 : 2;
  /// Each staged key is prepared once for the tile (prepare_key): its four blocks' shifts e_b -
  /// low, a byte each (which of the scorer's u8 tables the block's expand reads), and its factor
  /// 2^(low - 127), 0 where it does not fold; the kernel flags a tile holding such a key
  /// (key_tile::flagged). [keys] shift words, then [keys] factors.
  static constexpr int prepared_bytes = key_tile_shape::keys * 8;
  /// Prepares key n of the tile from its scale word; true where it does not fold.
  MXI_DEVICE static bool prepare_key(uint32_t raw_scales, int n, void* prepared) {
    const int8_fold f = int8_fold_of(raw_scales, u8_key_max_shift);
    auto* shifts = static_cast<uint32_t*>(prepared);
    auto* factors = reinterpret_cast<float*>(shifts + key_tile_shape::keys);
    shifts[n] = key_shift_word(raw_scales, f);
    factors[n] = f.fits ? exp2_biased(f.low) : 0.0f;
    return !f.fits;
  }
  static constexpr int blocks = key_tile_shape::blocks;
  static constexpr int n = Heads < 64 ? Heads : 64;  ///< integer path: heads a partial-sum set
  static constexpr int n8 = 32;     ///< e4m3 path: columns a wgmma (registers)
  static constexpr int lbo = 128, sbo = 256;

  /// Shared scratch for `rows` rows (cols = rows * Heads): the keys' u8 tables for shifts 0 .. 3
  /// [4][16 bytes] (3 repeats 0: no key that folds has it), B int8 [4 chunks + the bias
  /// chunk][cols / 8][2][8][16 bytes], B e4m3 [blocks][...] alike, the integer path's scaled
  /// weights [cols], e4m3 path weights [cols], 4 warp flags, each 32 columns' weight exponent range
  /// [cols / 32] x {max, min}, and each row's 2^(149 - k). The unfolded e4m3 path's query scales
  /// [blocks][cols] take the bias chunk's place: rows that take the integer path fold (their scales
  /// span at most 2^3), so the two are never used at once.
  static constexpr int int_chunks = blocks + 1;
  static constexpr int key_tables_bytes = 4 * 16;
  static constexpr int scratch_bytes(int rows) {
    return key_tables_bytes + rows * Heads * (int_chunks * 32 + blocks * 32 + 8) + 16 +
           rows * Heads / 32 * 8 + max_rows * 4;
  }
  /// A row takes the integer path only if its nonzero scaled weights span at most 2^103 (file
  /// comment: they must fit [2^23, 2^127)).
  static constexpr int max_weight_spread = 103;

  const uint4* key_tables;  // the u8 key tables by shift
  uint32_t b_int_low;  // the integer B's descriptor, low word (start at column 0, chunk 0)
  uint32_t b_e4m3;     // the e4m3 B's shared address
  const float* weight_int;
  const float* weight_e4m3;
  const float* q_scale;
  const float* row_scale;  // 2^(149 - k) a row (integer path)
  float first_row_scale;   // row_scale[0], held for one-row scoring (score<Tile, 1, Out>)
  int cols;
  bool integer;  // the rows fold to int8
  bool folded;   // the e4m3 path folds the query scales

  /// Loads `rows` consecutive query rows from q_values [rows][heads][64], q_scales
  /// [rows][heads][4], weights [rows][heads]; heads past `heads` score zero. Every thread of
  /// the warpgroup calls it.
  MXI_DEVICE void load(const uint8_t* q_values, const uint8_t* q_scales, const float* weights,
                       int heads, int rows, void* scratch) {
    const int tid = static_cast<int>(threadIdx.x) % warpgroup_threads;
    // Every warp's reads of the scratch's last contents (the earlier rows' tiles, or an earlier
    // load's flags and spans where none of its tiles came this consumer's way) come first:
    // nothing else orders a warp that leaves its last tile early before the others' reads.
    warpgroup_sync();
    cols = rows * Heads;
    auto* tables = static_cast<uint4*>(scratch);
    if (tid < 4) {
      const int8_lut l = u8_key_lut(tid < 3 ? static_cast<uint32_t>(tid) : 0u);
      tables[tid] = make_uint4(l.pos_lo, l.pos_hi, l.neg_lo, l.neg_hi);
    }
    auto* bint = static_cast<unsigned char*>(scratch) + key_tables_bytes;
    auto* qs = reinterpret_cast<float*>(bint + cols * blocks * 32);  // or the bias chunk
    unsigned char* b8 = bint + cols * int_chunks * 32;
    auto* wi = reinterpret_cast<float*>(b8 + cols * blocks * 32);
    float* w8 = wi + cols;
    auto* flags = reinterpret_cast<uint32_t*>(w8 + cols);
    auto* spans = reinterpret_cast<int2*>(flags + 4);  // [cols / 32] {max, min} weight exponents
    auto* scales = reinterpret_cast<float*>(spans + cols / 32);
    constexpr int no_weight = 1024;  // the span of 32 zero weights: {-1024, 1024}
    bool fits8 = true, fits_int = true;
    for (int c = tid; c < cols; c += warpgroup_threads) {  // whole warps: cols is a multiple of 32
      const int i = c / Heads, h = c % Heads;
      int top = -no_weight, bottom = no_weight;
      if (h < heads) {
        const int64_t head = static_cast<int64_t>(i) * heads + h;
        const scale_span span =
            scale_span_of(*reinterpret_cast<const uint32_t*>(q_scales + head * blocks));
        fits8 = fits8 && span.high != 255u && span.high - span.low <= 8u;
        const float w = fabsf(weights[head]);
        const int8_fold fold = int8_fold_of(span);
        const bool weight_in_range = w >= 0x1p-32f && w <= 0x1p32f;
        fits_int = fits_int && fold.fits && (w == 0.0f || weight_in_range);
        if (fold.fits && weight_in_range) {  // exponent of w * 2^(low - 129)
          top = static_cast<int>(__float_as_uint(w) >> 23) - 127 + static_cast<int>(fold.low) - 129;
          bottom = top;
        }
      }
#pragma unroll
      for (int m = 1; m < wave_size; m *= 2) {
        top = max(top, platform::group_shuffle_xor<wave_size>(top, m));
        bottom = min(bottom, platform::group_shuffle_xor<wave_size>(bottom, m));
      }
      if (c % wave_size == 0) spans[c / wave_size] = make_int2(top, bottom);
    }
    const bool warp_fits8 = platform::all<wave_size>(fits8);
    const bool warp_fits_int = platform::all<wave_size>(fits_int);
    if (tid % wave_size == 0)
      flags[tid / wave_size] = (warp_fits8 ? 1u : 0u) | (warp_fits_int ? 2u : 0u);
    warpgroup_sync();
    const uint32_t all = flags[0] & flags[1] & flags[2] & flags[3];
    // Each row's weight exponents: k = 126 - top puts the largest below 2^127.
    int row_top[max_rows];
    bool spread_fits = true;
#pragma unroll
    for (int i = 0; i < max_rows; ++i) {
      int top = -no_weight, bottom = no_weight;
      if (i < rows)
        for (int g = i * Heads / wave_size; g < (i + 1) * Heads / wave_size; ++g) {
          const int2 span = spans[g];
          top = max(top, span.x);
          bottom = min(bottom, span.y);
        }
      row_top[i] = top == -no_weight ? 0 : top;
      spread_fits = spread_fits && (top == -no_weight || top - bottom <= max_weight_spread);
    }
    folded = (all & 1u) != 0u;
    integer = (all & 2u) != 0u && spread_fits;
#pragma unroll
    for (int i = 0; i < max_rows; ++i)
      if (tid == i)
        scales[i] = exp2_biased(static_cast<uint32_t>(150 + row_top[i]));  // 2^(23 + top)
    for (int task = tid; task < cols * blocks; task += warpgroup_threads) {
      const int c = task / blocks, b = task % blocks;
      const int i = c / Heads, h = c % Heads;
      uint32_t word[4] = {0u, 0u, 0u, 0u};
      uint32_t s = 0x7F7F7F7Fu;  // padding heads: scale 1, zero codes, zero weight
      float wc = 0.0f;
      if (h < heads) {
        const int64_t head = static_cast<int64_t>(i) * heads + h;
        s = *reinterpret_cast<const uint32_t*>(q_scales + head * blocks);
        const auto* src = reinterpret_cast<const uint32_t*>(q_values + head * (key_tile_shape::row_bytes) + 16 * b);
#pragma unroll
        for (int q = 0; q < 4; ++q) word[q] = src[q];
        wc = weights[head];
      }
      const unsigned e = (s >> (8 * b)) & 0xFFu;
      const scale_span span = scale_span_of(s);
      // e4m3: block b is chunk b; slots 4q..4q+3 and 16+4q.. hold word q's two halves.
      const fp8x8 lut = e4m3_shifted_lut(folded ? static_cast<int>(span.high - e) : 0);
      fp8x8 x[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) x[q] = expand_e2m1x8(word[q], lut.lo, lut.hi);
      auto* dst = reinterpret_cast<uint4*>(b8 + b * cols * 32 + (c / 8) * sbo + (c % 8) * 16);
      dst[0] = make_uint4(x[0].lo, x[1].lo, x[2].lo, x[3].lo);              // k slots 0..15
      dst[lbo / 16] = make_uint4(x[0].hi, x[1].hi, x[2].hi, x[3].hi);      // k slots 16..31
      if (!integer)
        qs[b * cols + c] = h < heads ? format::decode_e8m0(static_cast<uint8_t>(e)) : 0.0f;
      if (b == 0) w8[c] = folded ? wc * format::decode_e8m0(static_cast<uint8_t>(span.high)) : wc;
      if (integer) {
        // int8: word q of block b goes to chunk q, slot group b (4 bytes in each K half).
        const int8_fold fold = int8_fold_of(span);
        const int8_lut ilut = int8_shifted_lut(e - fold.low);
        int32_t column_sum = 0;
        const int column_offset = (c / 8) * sbo + (c % 8) * 16 + 4 * b;
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const fp8x8 v = expand_e2m1x8_int8(word[q], ilut);
          unsigned char* chunk = bint + q * cols * 32 + column_offset;
          *reinterpret_cast<uint32_t*>(chunk) = v.lo;
          *reinterpret_cast<uint32_t*>(chunk + lbo) = v.hi;
          column_sum = platform::dot4_i8(static_cast<int>(v.lo), 0x01010101, column_sum);
          column_sum = platform::dot4_i8(static_cast<int>(v.hi), 0x01010101, column_sum);
        }
        // The column's four blocks are tasks of four consecutive lanes (cols * blocks is a
        // multiple of the warpgroup, so every lane takes part); lane b writes the bias chunk's
        // slot groups b and 4 + b.
        column_sum += platform::group_shuffle_xor<4>(column_sum, 1);
        column_sum += platform::group_shuffle_xor<4>(column_sum, 2);
        unsigned char* bias = bint + blocks * cols * 32 + column_offset;
        const int32_t n = -u8_key_bias * column_sum;
        *reinterpret_cast<uint32_t*>(bias) = bias_column_word(n, b);
        *reinterpret_cast<uint32_t*>(bias + lbo) = bias_column_word(n, 4 + b);
        // w * 2^(low - 129) * 2^k, k = 126 - top: an exponent add (the result is normal).
        if (b == 0) {
          int top = row_top[0];  // row_top[i] by selects: no local-memory array
#pragma unroll
          for (int r = 1; r < max_rows; ++r) top = i == r ? row_top[r] : top;
          const int shift = static_cast<int>(fold.low) - 129 + 126 - top;
          wi[c] = wc == 0.0f ? 0.0f : __int_as_float(__float_as_int(wc) + (shift << 23));
        }
      }
    }
    fence_async_shared();
    warpgroup_sync();
    key_tables = tables;
    b_int_low = static_cast<uint32_t>(
        smem_descriptor(static_cast<uint32_t>(__cvta_generic_to_shared(bint)), lbo, sbo));
    b_e4m3 = static_cast<uint32_t>(__cvta_generic_to_shared(b8));
    weight_int = wi;
    weight_e4m3 = w8;
    q_scale = qs;
    row_scale = scales;
    first_row_scale = scales[0];
  }

  /// Scores the tile's 64 keys against every loaded row; calls out(row, key, score) on one lane
  /// per (row, key), twice for a key of a flagged tile whose rows take the integer path: the
  /// integer pass scores every key, then the e4m3 pass rescores the keys that do not fold, on the
  /// same lane (so the second value stands). The two passes never hold their operands at once,
  /// which keeps the integer loop free of spills. Rows (1 .. max_rows) is the count of rows
  /// loaded, a constant, so that a loop of tiles around score holds what a row needs across its
  /// tiles.
  template <class Tile, int Rows, class Out>
  MXI_DEVICE void score(const key_tile& tile, int /*n0*/, Out&& out) const {
    static_assert(Rows >= 1 && Rows <= max_rows, "score: 1 .. max_rows rows");
    if (integer) {
      score_integer<Tile, Rows>(tile, out);
      if (!tile.flagged) return;
    }
    if (folded)
      score_e4m3<Tile, true, Rows>(tile, out);
    else
      score_e4m3<Tile, false, Rows>(tile, out);
  }

 private:
  /// The e4m3 path's per-thread operands: A fragments of every block and the key scales.
  struct e4m3_operands {
    uint32_t a[blocks][4];
    float ks0[blocks], ks1[blocks];
  };

  template <class Tile>
  MXI_DEVICE static e4m3_operands e4m3_operands_of(const key_tile& tile, int r0, int r1, int t) {
    e4m3_operands o;
#pragma unroll
    for (int b = 0; b < blocks; ++b) {
      const fp8x8 x0 = expand_e2m1x8(tile.values[Tile::word(r0, b, t)]);
      const fp8x8 x1 = expand_e2m1x8(tile.values[Tile::word(r1, b, t)]);
      o.a[b][0] = x0.lo;
      o.a[b][1] = x1.lo;
      o.a[b][2] = x0.hi;
      o.a[b][3] = x1.hi;
    }
    const uint32_t raw0 = tile.values[Tile::scale_word(r0)], raw1 = tile.values[Tile::scale_word(r1)];
#pragma unroll
    for (int b = 0; b < blocks; ++b) {
      o.ks0[b] = format::decode_e8m0(static_cast<uint8_t>(raw0 >> (8 * b)));
      o.ks1[b] = format::decode_e8m0(static_cast<uint8_t>(raw1 >> (8 * b)));
    }
    return o;
  }

  /// This thread's quarter t of the K slots and its two keys (A rows) r0, r1 = r0 + 8.
  struct key_pair {
    int t, r0, r1;
  };
  MXI_DEVICE static key_pair thread_keys() {
    const int lane = static_cast<int>(threadIdx.x) % wave_size;
    const int warp = (static_cast<int>(threadIdx.x) / wave_size) % 4;
    const int r0 = 16 * warp + (lane >> 2);
    return {lane & 3, r0, r0 + 8};
  }

  /// Sums a key pair's terms over the 4 lanes of a quad: lanes t = 0, 2 end with key r0's sum,
  /// t = 1, 3 with key r1's.
  MXI_DEVICE static float quad_sum(float p0, float p1) {
    return lane_head_sum_pair<wave_size, 4>(p0, p1, static_cast<int>(threadIdx.x));
  }

  /// e4m3 path: row i's two keys of this thread, sum over heads (before the quad sum).
  template <bool Folded>
  MXI_DEVICE void row_e4m3(const e4m3_operands& o, int i, float& p0, float& p1) const {
    const int t = static_cast<int>(threadIdx.x) & 3;
    const uint32_t block_stride = static_cast<uint32_t>(cols) * 32u;
    p0 = 0.0f;
    p1 = 0.0f;
#pragma unroll 1
    for (int col0 = i * Heads; col0 < (i + 1) * Heads; col0 += n8) {
      const uint32_t base = b_e4m3 + static_cast<uint32_t>(col0) * 32u;
      float total[n8 / 2];
#pragma unroll
      for (int b = 0; b < blocks; ++b) {
        float d[n8 / 2];
        wgmma_fence();
        wgmma_e4m3<n8>(d, o.a[b], smem_descriptor(base + b * block_stride, lbo, sbo));
        wgmma_commit();
        wgmma_wait<0>();
        fence_operands(d);
#pragma unroll
        for (int j = 0; j < n8 / 8; ++j) {
          float s00 = o.ks0[b], s01 = o.ks0[b], s10 = o.ks1[b], s11 = o.ks1[b];
          if constexpr (!Folded) {
            const float2 q = *reinterpret_cast<const float2*>(q_scale + b * cols + col0 + 8 * j + 2 * t);
            s00 *= q.x;
            s01 *= q.y;
            s10 *= q.x;
            s11 *= q.y;
          }
          total[4 * j + 0] = b == 0 ? d[4 * j + 0] * s00 : fmaf(d[4 * j + 0], s00, total[4 * j + 0]);
          total[4 * j + 1] = b == 0 ? d[4 * j + 1] * s01 : fmaf(d[4 * j + 1], s01, total[4 * j + 1]);
          total[4 * j + 2] = b == 0 ? d[4 * j + 2] * s10 : fmaf(d[4 * j + 2], s10, total[4 * j + 2]);
          total[4 * j + 3] = b == 0 ? d[4 * j + 3] * s11 : fmaf(d[4 * j + 3], s11, total[4 * j + 3]);
        }
      }
#pragma unroll
      for (int j = 0; j < n8 / 8; ++j) {
        const float2 w = *reinterpret_cast<const float2*>(weight_e4m3 + col0 + 8 * j + 2 * t);
        p0 = add_head(add_head(p0, w.x, total[4 * j + 0]), w.y, total[4 * j + 1]);
        p1 = add_head(add_head(p1, w.x, total[4 * j + 2]), w.y, total[4 * j + 3]);
      }
    }
  }

  /// Every key, or after the integer pass only the keys that do not fold (factor 0).
  template <class Tile, bool Folded, int Rows, class Out>
  MXI_DEVICE void score_e4m3(const key_tile& tile, Out& out) const {
    const auto [t, r0, r1] = thread_keys();
    const e4m3_operands o = e4m3_operands_of<Tile>(tile, r0, r1, t);
    const float* factors = key_factors(tile);
    const int key = t == 0 ? r0 : r1;  // lane t < 2 writes key r_t
    const bool mine = t < 2 && (!integer || factors[key] == 0.0f);
#pragma unroll 1
    for (int i = 0; i < Rows; ++i) {
      float p0, p1;
      row_e4m3<Folded>(o, i, p0, p1);
      const float p = quad_sum(p0, p1);
      if (mine) out(i, key, p);
    }
  }

  /// prepare_key's factors of the tile's keys.
  MXI_DEVICE static const float* key_factors(const key_tile& tile) {
    return static_cast<const float*>(tile.prepared) + key_tile_shape::keys;
  }

  /// Integer path: the rows' heads in units of n columns (row u / per_row, its columns from
  /// (u % per_row) * n), each unit one wgmma chain and commit group. Unit u + 1 is issued before
  /// unit u's epilogue, so its MMAs run under that epilogue and a tile waits out one chain, not
  /// one a unit. After a row's last unit, done(i, p0, p1) gets its two keys of this thread summed
  /// over heads (before the quad sum), scaled by 2^(k - 149) (see the file comment).
  template <int Rows, class Done>
  MXI_DEVICE void rows_integer(const uint32_t (&a)[4][4], Done&& done) const {
    constexpr int per_row = Heads / n, units = Rows * per_row;
    const int t = static_cast<int>(threadIdx.x) & 3;
    uint32_t bias[4];
    bias_operand(bias, t);
    // Descriptors differ only in their start field (address >> 4, 14 bits: shared memory ends
    // below 2^18 bytes, so the sums never carry out of it): 16-byte steps of a column's 16 bytes
    // and of a chunk's cols * 32.
    const uint32_t chunk = static_cast<uint32_t>(cols) * 2u;
    const auto column_of = [](int u) { return u / per_row * Heads + u % per_row * n; };
    int32_t d[2][n / 2];  // units u and u + 1
    const auto issue = [&](int u, int32_t(&acc)[n / 2]) {
      const uint32_t start = b_int_low + static_cast<uint32_t>(column_of(u)) * 2u;
      wgmma_fence();  // the accumulators were last read by the epilogue two units back
      wgmma_u8s8<n, false>(
          acc, bias,
          smem_descriptor_of_low<sbo>(start + blocks * chunk));  // -48 * column sum
#pragma unroll
      for (int q = 0; q < blocks; ++q)
        wgmma_u8s8<n, true>(acc, a[q], smem_descriptor_of_low<sbo>(start + q * chunk));
      wgmma_commit();
      fence_operands(acc);
    };
    // -0 is the sum's identity (adding it changes no bits, so the compiler drops the add), and
    // gives the bits +0 would: no partial sum below is -0 (they start at +0, and fp32 addition
    // never ends at -0 from +0 terms or from exact cancellation).
    float p0 = -0.0f, p1 = -0.0f;
    issue(0, d[0]);
#pragma unroll
    for (int u = 0; u < units; ++u) {
      if (u + 1 < units) {
        issue(u + 1, d[(u + 1) % 2]);
        wgmma_wait<1>();
      } else {
        wgmma_wait<0>();
      }
      int32_t(&acc)[n / 2] = d[u % 2];
      fence_operands(acc);
      const auto* weights = reinterpret_cast<const float2*>(weight_int + column_of(u));
      // Four partial sums a key (a fixed order): short dependency chains.
      float s0[4] = {0.0f, 0.0f, 0.0f, 0.0f}, s1[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
      for (int j = 0; j < n / 8; ++j) {
        const float2 w = weights[4 * j + t];  // columns 8j + 2t, 8j + 2t + 1
        const int k = 2 * (j & 1);
        s0[k] = fma_subnormal(w.x, relu_subnormal(acc[4 * j + 0]), s0[k]);
        s0[k + 1] = fma_subnormal(w.y, relu_subnormal(acc[4 * j + 1]), s0[k + 1]);
        s1[k] = fma_subnormal(w.x, relu_subnormal(acc[4 * j + 2]), s1[k]);
        s1[k + 1] = fma_subnormal(w.y, relu_subnormal(acc[4 * j + 3]), s1[k + 1]);
      }
      p0 += (s0[0] + s0[1]) + (s0[2] + s0[3]);
      p1 += (s1[0] + s1[1]) + (s1[2] + s1[3]);
      if (u % per_row == per_row - 1) {
        done(u / per_row, p0, p1);
        p0 = -0.0f;
        p1 = -0.0f;
      }
    }
  }

  template <class Tile, int Rows, class Out>
  MXI_DEVICE void score_integer(const key_tile& tile, Out& out) const {
    const key_pair keys = thread_keys();
    const int t = keys.t, r0 = keys.r0, r1 = keys.r1;  // t is captured below
    // Block t of each key, u8 with its own shift (prepare_key): the shift picks the table.
    const auto* shifts = static_cast<const uint32_t*>(tile.prepared);
    const float* factors = key_factors(tile);
    const uint4 l0 = key_tables[(shifts[r0] >> (8 * t)) & 3u],
                l1 = key_tables[(shifts[r1] >> (8 * t)) & 3u];
    const int8_lut lut0{l0.x, l0.y, l0.z, l0.w}, lut1{l1.x, l1.y, l1.z, l1.w};
    const uint4 v0 = *reinterpret_cast<const uint4*>(tile.values + Tile::word(r0, t, 0));
    const uint4 v1 = *reinterpret_cast<const uint4*>(tile.values + Tile::word(r1, t, 0));
    const uint32_t w0[4] = {v0.x, v0.y, v0.z, v0.w}, w1[4] = {v1.x, v1.y, v1.z, v1.w};
    uint32_t a[4][4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const fp8x8 x0 = expand_e2m1x8_u8(w0[j], lut0), x1 = expand_e2m1x8_u8(w1[j], lut1);
      a[j][0] = x0.lo;
      a[j][1] = x1.lo;
      a[j][2] = x0.hi;
      a[j][3] = x1.hi;
    }
    // Lane t < 2 writes key r_t; its factor is 0 where the key does not fold: score's e4m3 pass
    // then rewrites it.
    const int key = t == 0 ? r0 : r1;
    const float factor = factors[key];
    rows_integer<Rows>(a, [&](int i, float p0, float p1) {
      const float g = Rows == 1 ? first_row_scale : row_scale[i];
      const float p = quad_sum(p0, p1);
      if (t < 2) out(i, key, p * g * factor);
    });
  }
};
#endif  // MXI_GPU_COMPILER

}  // namespace mxi::arch::sm90
