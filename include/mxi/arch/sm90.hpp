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
//
// The pieces: arch/sm90/wgmma.hpp (the instructions), arch/sm90/integer_terms.hpp (the integer
// scheme's epilogue terms, bias and key fold), arch/sm90/tile_scorer.hpp (the scorer).
#pragma once

#include "mxi/arch/sm90/integer_terms.hpp"
#include "mxi/arch/sm90/tile_scorer.hpp"
#include "mxi/arch/sm90/wgmma.hpp"
