// sm90a (Hopper) logits tile: one warpgroup (128 threads) scores a 64-key tile against the
// heads of up to 3 query rows (2 at H = 128) with wgmma (A = keys from registers, B = the query
// heads from shared memory). Two exact schemes:
//
// Integer (the fast path). A token's four E8M0 block scales fold into one when they span at most
// 2^2 (arch/fp4_to_int8.hpp): block b's codes become u8 48 + 2 * code * 2^(e_b - low), and the
// whole D = 128 dot product is four chained wgmma.u8.s8 (K = 32 each) into one s32 accumulator,
// which a fifth wgmma (a constant A against a bias chunk of B) starts at -48 * (sum of the head's
// int8 query column): the accumulator ends at the exact dot (|dot| <= 128 * 96 * 96 < 2^21).
// Each row's heads take such chains of up to 64 columns, each its own commit group, the next
// issued before this one's epilogue, so that the tensor cores work on the next while the epilogue
// of this one runs.
// Queries fold per head as int8 2 * code * 2^(e_b - low) (spread up to 2^3), 2^(low_q - 129)
// moving into the head weight; 2^(low_k - 127) multiplies the head sum once per key. Taken when
// every head of the unit's rows folds, its weight lies in [2^-32, 2^32] (or is 0), so no fp32
// product leaves the normal range, and each row's weights span at most 2^103 (below); decided once
// per group of rows.
//
// The integer epilogue is two instructions a (head, key), both on the FMA pipe. The s32 dot's bits
// read as an fp32 are dot * 2^-149 (a subnormal) for dot >= 0 and a NaN or a negative number
// below it, so saturating them to [0, 1] (NaN goes to +0) is relu(dot) * 2^-149; the fma
// against the head weight scaled by 2^k (k chosen per row so that every nonzero weight lands in
// [2^23, 2^127)) makes every product and partial sum a multiple of 2^-149 below 1, where fp32
// rounding is that of the unscaled sums scaled: the head sum, times 2^(149 - k), has the bits of
// sum(w * relu(dot)) in fp32, in the same order. Both instructions are inline PTX without .ftz,
// so a caller's -ftz=true cannot flush the subnormals.
//
// E4M3 per block (the fallback, for keys or rows that do not fold). Hopper's FP8 accumulator
// keeps ~14 bits, so each MXFP4 block (K = 32) is its own wgmma from zero, whose sum of 32 E2M1
// products is exact; the blocks combine on the CUDA cores in fp32:
//   total[key][col] += acc_b[key][col] * kscale[key][b].
// Query scales fold per head when their spread is <= 8 (Q' = q * 2^-(M_h - e[h][b]) is exact in
// e4m3, 2^(M_h - 127) moves into the weight); a wider spread or a NaN scale takes the unfolded
// epilogue (acc * kscale * qscale). In a tile where some key does not fold while the rows do,
// both schemes run and each key takes its own: the choice is a function of the key and the rows
// alone, so identical keys always give identical bits.
//
// A operand (m64k32, 8-bit, registers): thread (warp w, lane 4g + t) holds rows 16w + g and
// 16w + g + 8, k slots 4t..4t+3 (regs 0, 1) and 16+4t..16+4t+3 (regs 2, 3). A dot product is
// invariant under one permutation of K applied to both sides:
//   integer  chunk j, slot 4t + i <-> element 32t + 8j + i, slot 16 + 4t + i <-> 32t + 8j + 4 + i:
//            thread t reads block t of its keys (one 16-byte load) and folds it with one shift;
//   e4m3     block b, slot 4t + i <-> element 32b + 8t + i, slot 16 + 4t + i <-> 32b + 8t + 4 + i.
// B is written with the same permutations, in the no-swizzle K-major canonical layout: per chunk
// (or block), core matrices of 8 columns x 16 bytes, the two K halves 128 bytes apart (LBO),
// column groups of 8 256 bytes apart (SBO).
//
// Accumulator (m64nN): thread (w, 4g + t) holds d[4j + {0, 1}] = (row 16w + g, cols 8j + 2t,
// 8j + 2t + 1) and d[4j + {2, 3}] = (row 16w + g + 8, same cols): a key's heads sit in a thread's
// registers plus its 4-lane quad, so the head sum is two shuffles, in a fixed order (for the
// thread's two keys at once: arch::lane_head_sum_pair).
#pragma once

#include <cstdint>

#include "mxi/arch/fp4_to_fp8.hpp"
#include "mxi/arch/fp4_to_int8.hpp"
#include "mxi/arch/head_reduce.hpp"
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
/// Shared memory a block may opt in to on every sm_90 part (227 KiB).
inline constexpr int max_shared_bytes = 227 * 1024;

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
template <int Count>
MXI_DEVICE void fence_operands(int32_t (&d)[Count]) {
#pragma unroll
  for (int i = 0; i < Count; ++i) asm volatile("" : "+r"(d[i])::"memory");
}
/// Makes this thread's shared-memory stores visible to the tensor cores (async proxy).
MXI_DEVICE void fence_async_shared() {
#if MXI_ARCH_SM90_WGMMA
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}
/// Barrier of the 128 threads of the calling warpgroup: named barrier 1 + its index in the block
/// (0 is __syncthreads'), so several warpgroups of a block synchronise apart.
MXI_DEVICE void warpgroup_sync() {
#if defined(__CUDA_ARCH__)
  asm volatile("bar.sync %0, 128;\n" ::"r"(1 + static_cast<int>(threadIdx.x) / warpgroup_threads) : "memory");
#endif
}
/// Sets the calling warpgroup's registers a thread to Count (a multiple of 8 in [24, 256]): fewer
/// hands them back to the block's pool, more waits until the pool holds them.
template <int Count, bool Increase>
MXI_DEVICE void set_registers() {
  static_assert(Count % 8 == 0 && Count >= 24 && Count <= 256,
                "setmaxnreg: a multiple of 8 in [24, 256]");
#if MXI_ARCH_SM90_WGMMA
  if constexpr (Increase)
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Count));
  else
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Count));
#endif
}
/// Shared-memory matrix descriptor, no swizzle: start address, LBO (K direction) and SBO (M/N
/// direction) in bytes, each >> 4.
MXI_DEVICE uint64_t smem_descriptor(uint32_t address, uint32_t lbo, uint32_t sbo) {
  return static_cast<uint64_t>((address & 0x3FFFFu) >> 4) | (static_cast<uint64_t>(lbo >> 4) << 16) |
         (static_cast<uint64_t>(sbo >> 4) << 32);
}
/// The descriptor from its two words: `low` (start field and LBO) varies from MMA to MMA, the
/// high word (SBO) is a constant, so stepping the start is 32-bit arithmetic.
template <uint32_t Sbo>
MXI_DEVICE uint64_t smem_descriptor_of_low(uint32_t low) {
  return static_cast<uint64_t>(low) | (static_cast<uint64_t>(Sbo >> 4) << 32);
}

/// d = A (64 keys x 32, e4m3, registers) * B (32 x 32 columns, e4m3, shared memory), f32,
/// from zero (scale-d = 0: C is not read).
MXI_DEVICE void wgmma_m64n32k32_e4m3(float (&d)[16], const uint32_t (&a)[4], uint64_t desc) {
#if MXI_ARCH_SM90_WGMMA
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 0, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k32.f32.e4m3.e4m3 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
      "{%16, %17, %18, %19}, %20, p, 1, 1;\n}\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3]), "=f"(d[4]), "=f"(d[5]), "=f"(d[6]), "=f"(d[7]), "=f"(d[8]), "=f"(d[9]), "=f"(d[10]), "=f"(d[11]), "=f"(d[12]), "=f"(d[13]), "=f"(d[14]), "=f"(d[15])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
#else
  platform::trap();
#endif
}

/// d = A (64 keys x 32, e4m3, registers) * B (32 x 64 columns, e4m3, shared memory), f32,
/// from zero (scale-d = 0: C is not read).
MXI_DEVICE void wgmma_m64n64k32_e4m3(float (&d)[32], const uint32_t (&a)[4], uint64_t desc) {
#if MXI_ARCH_SM90_WGMMA
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 0, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "{%32, %33, %34, %35}, %36, p, 1, 1;\n}\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3]), "=f"(d[4]), "=f"(d[5]), "=f"(d[6]), "=f"(d[7]), "=f"(d[8]), "=f"(d[9]), "=f"(d[10]), "=f"(d[11]), "=f"(d[12]), "=f"(d[13]), "=f"(d[14]), "=f"(d[15]), "=f"(d[16]), "=f"(d[17]), "=f"(d[18]), "=f"(d[19]), "=f"(d[20]), "=f"(d[21]), "=f"(d[22]), "=f"(d[23]), "=f"(d[24]), "=f"(d[25]), "=f"(d[26]), "=f"(d[27]), "=f"(d[28]), "=f"(d[29]), "=f"(d[30]), "=f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
#else
  platform::trap();
#endif
}

/// d (+)= A (64 keys x 32, u8, registers) * B (32 x 32 columns, s8, shared memory), s32, exact.
template <bool Accumulate>
MXI_DEVICE void wgmma_m64n32k32_u8s8(int32_t (&d)[16], const uint32_t (&a)[4], uint64_t desc) {
#if MXI_ARCH_SM90_WGMMA
  if constexpr (!Accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, 0, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n32k32.s32.u8.s8 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
        "{%16, %17, %18, %19}, %20, p;\n}\n"
        : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3]), "=r"(d[4]), "=r"(d[5]), "=r"(d[6]), "=r"(d[7]), "=r"(d[8]), "=r"(d[9]), "=r"(d[10]), "=r"(d[11]), "=r"(d[12]), "=r"(d[13]), "=r"(d[14]), "=r"(d[15])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
  }
  if constexpr (Accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n32k32.s32.u8.s8 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
        "{%16, %17, %18, %19}, %20, p;\n}\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
  }
#else
  platform::trap();
#endif
}

/// d (+)= A (64 keys x 32, u8, registers) * B (32 x 64 columns, s8, shared memory), s32, exact.
template <bool Accumulate>
MXI_DEVICE void wgmma_m64n64k32_u8s8(int32_t (&d)[32], const uint32_t (&a)[4], uint64_t desc) {
#if MXI_ARCH_SM90_WGMMA
  if constexpr (!Accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, 0, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k32.s32.u8.s8 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
        "{%32, %33, %34, %35}, %36, p;\n}\n"
        : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3]), "=r"(d[4]), "=r"(d[5]), "=r"(d[6]), "=r"(d[7]), "=r"(d[8]), "=r"(d[9]), "=r"(d[10]), "=r"(d[11]), "=r"(d[12]), "=r"(d[13]), "=r"(d[14]), "=r"(d[15]), "=r"(d[16]), "=r"(d[17]), "=r"(d[18]), "=r"(d[19]), "=r"(d[20]), "=r"(d[21]), "=r"(d[22]), "=r"(d[23]), "=r"(d[24]), "=r"(d[25]), "=r"(d[26]), "=r"(d[27]), "=r"(d[28]), "=r"(d[29]), "=r"(d[30]), "=r"(d[31])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
  }
  if constexpr (Accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k32.s32.u8.s8 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
        "{%32, %33, %34, %35}, %36, p;\n}\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
  }
#else
  platform::trap();
#endif
}

template <int N>
MXI_DEVICE void wgmma_e4m3(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t desc) {
  if constexpr (N == 64) wgmma_m64n64k32_e4m3(d, a, desc);
  else wgmma_m64n32k32_e4m3(d, a, desc);
}
template <int N, bool Accumulate>
MXI_DEVICE void wgmma_u8s8(int32_t (&d)[N / 2], const uint32_t (&a)[4], uint64_t desc) {
  if constexpr (N == 64) wgmma_m64n64k32_u8s8<Accumulate>(d, a, desc);
  else wgmma_m64n32k32_u8s8<Accumulate>(d, a, desc);
}

/// relu(x) * 2^-149 for an s32 dot x (see the file comment): x's bits as an fp32, times 1,
/// saturated to [0, 1]. A multiply runs on the FMA pipe; a max would take the half-rate ALU pipe,
/// which the key expand keeps busy (Nsight Compute: math-pipe throttle stalls).
MXI_DEVICE float relu_subnormal(int32_t x) {
  float r;
  asm("mul.rn.sat.f32 %0, %1, 0f3F800000;" : "=f"(r) : "f"(__int_as_float(x)));
  return r;
}

/// a * b + c rounded once, subnormals kept whatever the caller's -ftz.
MXI_DEVICE float fma_subnormal(float a, float b, float c) {
  float r;
  asm("fma.rn.f32 %0, %1, %2, %3;" : "=f"(r) : "f"(a), "f"(b), "f"(c));
  return r;
}

/// The A operand of the bias wgmma: byte 1 in K slot 0, 255 in the other 31 (so any |n| <= 127 +
/// 255 * 31 * 127 is one column of s8 B: bias_column_word).
MXI_DEVICE void bias_operand(uint32_t (&a)[4], int t) {
  const uint32_t first = t == 0 ? 0xFFFFFF01u : 0xFFFFFFFFu;  // slot 0: thread t = 0 of a quad
  a[0] = first;
  a[1] = first;
  a[2] = 0xFFFFFFFFu;
  a[3] = 0xFFFFFFFFu;
}

/// K slots 4q .. 4q + 3 (q in [0, 8)) of the s8 B column that bias_operand turns into n: slot 0
/// holds n's residue mod 255 in [-127, 127], slots 1 .. 31 share the quotient evenly.
MXI_HOST_DEVICE uint32_t bias_column_word(int32_t n, int q) {
  const int32_t quotient = (n >= 0 ? n + 127 : n - 127) / 255;
  const int32_t residue = n - 255 * quotient;
  const int32_t base = quotient / 31, extra = quotient - 31 * base;  // |extra| < 31, sign of n
  uint32_t word = 0;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int slot = 4 * q + i;
    const int32_t v =
        slot == 0 ? residue
                  : base + (slot <= (extra < 0 ? -extra : extra) ? (extra < 0 ? -1 : 1) : 0);
    word |= (static_cast<uint32_t>(v) & 0xFFu) << (8 * i);
  }
  return word;
}

/// A key's four block shifts e_b - low, byte b each (which u8 table block b's expand takes), from
/// its scale word and fold; 0 (every block any valid table) where the key does not fold. Every
/// byte e_b >= low, so one subtraction makes all four, with no borrow between bytes.
MXI_HOST_DEVICE uint32_t key_shift_word(uint32_t raw_scales, int8_fold f) {
  return f.fits ? raw_scales - f.low * 0x01010101u : 0u;
}

/// 2^(e - 127) for e in [1, 254] (no NaN or subnormal case: callers checked the range).
MXI_DEVICE float exp2_biased(uint32_t e) { return __int_as_float(static_cast<int>(e << 23)); }

/// Scores up to max_rows query rows (Heads heads each, D = 128) against one staged 64-key tile, a
/// page tile of the cache's layout (arch/key_tile.hpp); one warpgroup, the rows' query in its
/// shared scratch.
template <int Heads>
struct tile_scorer {
  static_assert(Heads == 32 || Heads == 64 || Heads == 128, "H: 32, 64 or 128 (padded)");
  /// Query rows a warpgroup scores at once: logits_tuning's sm90 groups (three rows' queries leave
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
