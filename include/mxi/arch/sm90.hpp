// sm90a (Hopper) logits tile: one warpgroup (128 threads) scores a 64-key tile against the
// heads of up to 4 query rows with wgmma.m64nNk32 e4m3 (A = keys from registers, B = the query
// heads from shared memory), after an exact in-register E2M1 -> e4m3 expand.
//
// Exactness: Hopper's FP8 tensor-core accumulator keeps ~14 bits, so each MXFP4 block (K = 32)
// is its own wgmma into a fresh accumulator (scale-d = 0), whose sum of 32 E2M1 products is
// exact; the blocks are combined on the CUDA cores in fp32:
//   total[key][col] += acc_b[key][col] * kscale[key][b].
// Query scales are folded once per group of rows: per head h, M_h = max_b e[h][b] and
// Q' = q * 2^-(M_h - e[h][b]) is still exact in e4m3 when the spread is <= 8; 2^(M_h-127) moves
// into the head weight (relu(x * 2^m) = relu(x) * 2^m). A group with a wider spread (or a NaN
// scale) takes the unfolded epilogue (acc * kscale * qscale), chosen once per group, so identical
// keys always give identical bits.
//
// Operand order: for m64k32 e4m3 A in registers, thread (warp w, lane 4g + t) holds rows
// 16w + g, 16w + g + 8 and k slots 4t..4t+3 (regs 0, 1) and 16+4t..16+4t+3 (regs 2, 3). The dot
// product is invariant under one permutation of K on both sides, so slot 4t + i holds element
// 8t + i and slot 16 + 4t + i element 8t + 4 + i: one 32-bit word (elements 8t..8t+7) a row and
// block, expanded to two e4m3 words. B (the query) is written with the same permutation, in the
// no-swizzle K-major canonical layout: per block, core matrices of 8 columns x 16 bytes, the two
// K halves 128 bytes apart (LBO), column groups of 8 256 bytes apart (SBO).
//
// Accumulator layout (m64nN f32): thread (w, 4g + t) holds d[4j + {0, 1}] = (row 16w + g,
// cols 8j + 2t, 8j + 2t + 1) and d[4j + {2, 3}] = (row 16w + g + 8, same cols): the heads of a
// row sit in a thread's registers plus its 4-lane quad, so the head sum is two shuffles.
#pragma once

#include <cstdint>

#include "mxi/arch/fp4_to_fp8.hpp"
#include "mxi/arch/key_tile.hpp"
#include "mxi/config.hpp"
#include "mxi/platform/intrinsics.hpp"

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define MXI_ARCH_SM90_WGMMA 1
#else
#define MXI_ARCH_SM90_WGMMA 0
#endif

namespace mxi::arch::sm90 {

inline constexpr int wave_size = 32;
inline constexpr int warpgroup_threads = 128;

#if MXI_GPU_COMPILER

MXI_DEVICE void wgmma_fence() {
#if MXI_ARCH_SM90_WGMMA
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
MXI_DEVICE void wgmma_commit() {
#if MXI_ARCH_SM90_WGMMA
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
/// Waits until at most `Pending` committed wgmma groups of this warpgroup are in flight.
template <int Pending>
MXI_DEVICE void wgmma_wait() {
#if MXI_ARCH_SM90_WGMMA
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
#endif
}
/// Keeps the compiler from moving accesses of `d` across the asm around it (a wgmma's
/// accumulators are written asynchronously, after the issuing instruction).
template <int Count>
MXI_DEVICE void fence_operands(float (&d)[Count]) {
#pragma unroll
  for (int i = 0; i < Count; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
/// Makes this thread's shared-memory stores visible to the tensor cores (async proxy).
MXI_DEVICE void fence_async_shared() {
#if MXI_ARCH_SM90_WGMMA
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}
/// Barrier of the 128 threads of the block's one warpgroup (named barrier 1; the logits kernel
/// runs one warpgroup a block).
MXI_DEVICE void warpgroup_sync() {
#if defined(__CUDA_ARCH__)
  asm volatile("bar.sync 1, 128;\n" ::: "memory");
#endif
}

/// Shared-memory matrix descriptor, no swizzle: start address, LBO (K direction) and SBO (M/N
/// direction) in bytes, each >> 4.
MXI_DEVICE uint64_t smem_descriptor(uint32_t address, uint32_t lbo, uint32_t sbo) {
  return static_cast<uint64_t>((address & 0x3FFFFu) >> 4) | (static_cast<uint64_t>(lbo >> 4) << 16) |
         (static_cast<uint64_t>(sbo >> 4) << 32);
}

/// d = A (64 keys x 32, e4m3, registers) * B (32 x 32 columns, e4m3, shared memory), f32,
/// from zero (scale-d = 0: C is not read).
MXI_DEVICE void wgmma_m64n32k32(float (&d)[16], const uint32_t (&a)[4], uint64_t desc) {
#if MXI_ARCH_SM90_WGMMA
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k32.f32.e4m3.e4m3 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
      "{%16, %17, %18, %19}, %20, p, 1, 1;\n}\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3]), "=f"(d[4]), "=f"(d[5]), "=f"(d[6]), "=f"(d[7]), "=f"(d[8]), "=f"(d[9]), "=f"(d[10]), "=f"(d[11]), "=f"(d[12]), "=f"(d[13]), "=f"(d[14]), "=f"(d[15])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(0));
#else
  platform::trap();
#endif
}

/// d = A (64 keys x 32, e4m3, registers) * B (32 x 64 columns, e4m3, shared memory), f32,
/// from zero (scale-d = 0: C is not read).
MXI_DEVICE void wgmma_m64n64k32(float (&d)[32], const uint32_t (&a)[4], uint64_t desc) {
#if MXI_ARCH_SM90_WGMMA
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "{%32, %33, %34, %35}, %36, p, 1, 1;\n}\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3]), "=f"(d[4]), "=f"(d[5]), "=f"(d[6]), "=f"(d[7]), "=f"(d[8]), "=f"(d[9]), "=f"(d[10]), "=f"(d[11]), "=f"(d[12]), "=f"(d[13]), "=f"(d[14]), "=f"(d[15]), "=f"(d[16]), "=f"(d[17]), "=f"(d[18]), "=f"(d[19]), "=f"(d[20]), "=f"(d[21]), "=f"(d[22]), "=f"(d[23]), "=f"(d[24]), "=f"(d[25]), "=f"(d[26]), "=f"(d[27]), "=f"(d[28]), "=f"(d[29]), "=f"(d[30]), "=f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(0));
#else
  platform::trap();
#endif
}

template <int N>
MXI_DEVICE void wgmma_e4m3(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t desc) {
  if constexpr (N == 64) wgmma_m64n64k32(d, a, desc);
  else wgmma_m64n32k32(d, a, desc);
}

MXI_DEVICE float relu(float x) { return x < 0.0f ? 0.0f : x; }  // keeps NaN

/// Scores up to 4 query rows (Heads heads each, D = 128) against one staged 64-key tile; one
/// warpgroup, the rows' query in the unit's shared scratch.
template <int Heads>
struct tile_scorer {
  static_assert(Heads == 32 || Heads == 64 || Heads == 128, "H: 32, 64 or 128 (padded)");
  static constexpr int unit_threads = warpgroup_threads;  ///< threads that score together
  static constexpr int max_rows = 4;                      ///< query rows a unit scores at once
  static constexpr int step_keys = key_tile_shape::keys;  ///< the whole tile (M = 64)
  static constexpr int min_blocks = Heads <= 64 ? 2 : 1;
  static constexpr bool float_scales = false;  ///< reads key_tile::raw_scales
  static constexpr int blocks = key_tile_shape::blocks;
  static constexpr int n = Heads < 64 ? Heads : 64;  ///< columns a wgmma (one row's heads)
  static constexpr int chunks = Heads / n;           ///< wgmmas a row and block
  static constexpr int frag = n / 2;                 ///< accumulator floats a thread
  static constexpr int lbo = 128, sbo = 256;

  /// Shared scratch for `rows` rows (cols = rows * Heads): B [blocks][cols / 8][2][8][16 bytes],
  /// weights [cols], query scales [blocks][cols] (unfolded), 4 warp flags.
  static constexpr int scratch_bytes(int rows) { return rows * Heads * (blocks * 32 + 4 + blocks * 4) + 16; }

  uint32_t b_address;  // shared address of B
  const float* weight;
  const float* q_scale;
  int cols;
  int rows;
  bool folded;

  /// Loads `rows_` consecutive query rows from q_values [rows][heads][64], q_scales
  /// [rows][heads][4], weights [rows][heads]; heads past `heads` score zero. Every thread of
  /// the warpgroup calls it.
  MXI_DEVICE void load(const uint8_t* q_values, const uint8_t* q_scales, const float* weights,
                       int heads, int rows_, void* scratch) {
    const int tid = static_cast<int>(threadIdx.x) % warpgroup_threads;
    rows = rows_;
    cols = rows * Heads;
    auto* bmat = static_cast<unsigned char*>(scratch);
    auto* w = reinterpret_cast<float*>(bmat + cols * blocks * 32);
    float* qs = w + cols;
    auto* flags = reinterpret_cast<uint32_t*>(qs + blocks * cols);
    bool fits = true;
    for (int c = tid; c < cols; c += warpgroup_threads) {
      const int i = c / Heads, h = c % Heads;
      if (h >= heads) continue;
      const uint32_t s = *reinterpret_cast<const uint32_t*>(q_scales + (static_cast<int64_t>(i) * heads + h) * blocks);
      unsigned hi = 0, lo = 255;
#pragma unroll
      for (int b = 0; b < blocks; ++b) {
        const unsigned e = (s >> (8 * b)) & 0xFFu;
        hi = e > hi ? e : hi;
        lo = e < lo ? e : lo;
      }
      fits = fits && hi != 255u && hi - lo <= 8u;
    }
    const bool warp_fits = platform::all<wave_size>(fits);
    if (tid % wave_size == 0) flags[tid / wave_size] = warp_fits ? 1u : 0u;
    warpgroup_sync();
    folded = (flags[0] & flags[1] & flags[2] & flags[3]) != 0u;
    for (int task = tid; task < cols * blocks; task += warpgroup_threads) {
      const int c = task / blocks, b = task % blocks;
      const int i = c / Heads, h = c % Heads;
      uint32_t word[4] = {0u, 0u, 0u, 0u};
      unsigned e = 127, hi = 127;
      float wc = 0.0f;
      if (h < heads) {
        const int64_t head = static_cast<int64_t>(i) * heads + h;
        const uint32_t s = *reinterpret_cast<const uint32_t*>(q_scales + head * blocks);
        e = (s >> (8 * b)) & 0xFFu;
        hi = 0;
#pragma unroll
        for (int bb = 0; bb < blocks; ++bb) {
          const unsigned eb = (s >> (8 * bb)) & 0xFFu;
          hi = eb > hi ? eb : hi;
        }
        const auto* src = reinterpret_cast<const uint32_t*>(q_values + head * (key_tile_shape::row_bytes) + 16 * b);
#pragma unroll
        for (int q = 0; q < 4; ++q) word[q] = src[q];
        wc = weights[head];
      }
      const int shift = folded ? static_cast<int>(hi - e) : 0;
      const fp8x8 lut = e4m3_shifted_lut(shift);
      fp8x8 x[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) x[q] = expand_e2m1x8(word[q], lut.lo, lut.hi);
      auto* dst = reinterpret_cast<uint4*>(bmat + b * cols * 32 + (c / 8) * sbo + (c % 8) * 16);
      dst[0] = make_uint4(x[0].lo, x[1].lo, x[2].lo, x[3].lo);              // k slots 0..15
      dst[lbo / 16] = make_uint4(x[0].hi, x[1].hi, x[2].hi, x[3].hi);      // k slots 16..31
      qs[b * cols + c] = h < heads ? e8m0_to_float(e) : 0.0f;
      if (b == 0) w[c] = folded ? wc * e8m0_to_float(hi) : wc;
    }
    fence_async_shared();
    warpgroup_sync();
    b_address = static_cast<uint32_t>(__cvta_generic_to_shared(bmat));
    weight = w;
    q_scale = qs;
  }

  /// Scores the tile's 64 keys against every loaded row; calls out(row, key, score) on one lane
  /// per (row, key).
  template <class Out>
  MXI_DEVICE void score(const key_tile& tile, int /*n0*/, Out&& out) const {
    if (folded) score_impl<true>(tile, out);
    else score_impl<false>(tile, out);
  }

 private:
  template <bool Folded>
  MXI_DEVICE void chunk(const uint32_t (&a)[blocks][4], const float (&ks0)[blocks],
                        const float (&ks1)[blocks], int col0, float (&total)[frag]) const {
    const int t = static_cast<int>(threadIdx.x) & 3;
    const uint32_t base = b_address + static_cast<uint32_t>(col0) * 32u;
    const uint32_t block_stride = static_cast<uint32_t>(cols) * 32u;
    float acc[2][frag];
    wgmma_fence();
    wgmma_e4m3<n>(acc[0], a[0], smem_descriptor(base, lbo, sbo));
    wgmma_commit();
#pragma unroll
    for (int b = 0; b < blocks; ++b) {
      if (b + 1 < blocks) {
        wgmma_fence();
        wgmma_e4m3<n>(acc[(b + 1) & 1], a[b + 1], smem_descriptor(base + (b + 1) * block_stride, lbo, sbo));
        wgmma_commit();
        wgmma_wait<1>();
      } else {
        wgmma_wait<0>();
      }
      float (&d)[frag] = acc[b & 1];
      fence_operands(d);
#pragma unroll
      for (int j = 0; j < n / 8; ++j) {
        float s00 = ks0[b], s01 = ks0[b], s10 = ks1[b], s11 = ks1[b];
        if constexpr (!Folded) {
          const float2 q = *reinterpret_cast<const float2*>(q_scale + b * cols + col0 + 8 * j + 2 * t);
          s00 *= q.x;
          s01 *= q.y;
          s10 *= q.x;
          s11 *= q.y;
        }
        if (b == 0) {
          total[4 * j + 0] = d[4 * j + 0] * s00;
          total[4 * j + 1] = d[4 * j + 1] * s01;
          total[4 * j + 2] = d[4 * j + 2] * s10;
          total[4 * j + 3] = d[4 * j + 3] * s11;
        } else {
          total[4 * j + 0] = fmaf(d[4 * j + 0], s00, total[4 * j + 0]);
          total[4 * j + 1] = fmaf(d[4 * j + 1], s01, total[4 * j + 1]);
          total[4 * j + 2] = fmaf(d[4 * j + 2], s10, total[4 * j + 2]);
          total[4 * j + 3] = fmaf(d[4 * j + 3], s11, total[4 * j + 3]);
        }
      }
    }
  }

  template <bool Folded, class Out>
  MXI_DEVICE void score_impl(const key_tile& tile, Out& out) const {
    const int lane = static_cast<int>(threadIdx.x) % wave_size;
    const int warp = (static_cast<int>(threadIdx.x) / wave_size) % 4;
    const int g = lane >> 2, t = lane & 3;
    const int r0 = 16 * warp + g, r1 = r0 + 8;
    uint32_t a[blocks][4];
#pragma unroll
    for (int b = 0; b < blocks; ++b) {
      const fp8x8 x0 = expand_e2m1x8(tile.values[key_tile_shape::word(r0, b, t)]);
      const fp8x8 x1 = expand_e2m1x8(tile.values[key_tile_shape::word(r1, b, t)]);
      a[b][0] = x0.lo;
      a[b][1] = x1.lo;
      a[b][2] = x0.hi;
      a[b][3] = x1.hi;
    }
    const uint32_t raw0 = tile.raw_scales[r0], raw1 = tile.raw_scales[r1];
    float ks0[blocks], ks1[blocks];
#pragma unroll
    for (int b = 0; b < blocks; ++b) {
      ks0[b] = e8m0_to_float((raw0 >> (8 * b)) & 0xFFu);
      ks1[b] = e8m0_to_float((raw1 >> (8 * b)) & 0xFFu);
    }
#pragma unroll 1
    for (int i = 0; i < rows; ++i) {
      float p0 = 0.0f, p1 = 0.0f;
#pragma unroll 1
      for (int c = 0; c < chunks; ++c) {
        const int col0 = i * Heads + c * n;
        float total[frag];
        chunk<Folded>(a, ks0, ks1, col0, total);
#pragma unroll
        for (int j = 0; j < n / 8; ++j) {
          const float2 w = *reinterpret_cast<const float2*>(weight + col0 + 8 * j + 2 * t);
          p0 = fmaf(w.x, relu(total[4 * j + 0]), p0);
          p0 = fmaf(w.y, relu(total[4 * j + 1]), p0);
          p1 = fmaf(w.x, relu(total[4 * j + 2]), p1);
          p1 = fmaf(w.y, relu(total[4 * j + 3]), p1);
        }
      }
      // The row's heads on the 4 lanes of a quad: a fixed order, the same bits on every lane.
      p0 += platform::shuffle_xor<wave_size>(p0, 1);
      p1 += platform::shuffle_xor<wave_size>(p1, 1);
      p0 += platform::shuffle_xor<wave_size>(p0, 2);
      p1 += platform::shuffle_xor<wave_size>(p1, 2);
      if (t == 0) out(i, r0, p0);
      else if (t == 1) out(i, r1, p1);
    }
  }
};

#endif  // MXI_GPU_COMPILER

}  // namespace mxi::arch::sm90
