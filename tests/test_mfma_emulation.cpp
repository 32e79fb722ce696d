// The gfx950 logits tile on the CPU: a model of v_mfma_scale_f32_16x16x128_f8f6f4 for E2M1 x E2M1
// (cbsz = blgp = 4), written from the instruction's description, not from the tile code, is fed
// exactly the registers arch/gfx950.hpp builds from a query and a page (either layout), directly
// or through fetch_keys (the kernel's source), and the logits are compared with a float64 dot
// product of the decoded values.
// Deliberately wrong lane mappings must fail the same comparison, so a layout mistake in the tile
// cannot pass.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <random>
#include <utility>
#include <vector>

#include "catch.hpp"
#include "mxi/arch/gfx950.hpp"
#include "mxi/layout/convert.hpp"

namespace {

namespace g = mxi::arch::gfx950;
namespace fmt = mxi::format;
using mxi::layout::page_shape;

constexpr int lanes = 64;
constexpr int dim = 128;
constexpr int chunks = dim / fmt::block_elems;

// ---- The instruction model --------------------------------------------------------------------

/// One source operand across the wave: 8 VGPRs a lane (E2M1 reads the low 4) and one scale VGPR.
struct wave_source {
  uint32_t vgpr[lanes][8] = {};
  uint32_t scale[lanes] = {};
};
using wave_acc = float[lanes][4];

/// Element k (0..31) of a lane's E2M1 source: VGPR k/8, nibble k%8 (little-endian bytes, element
/// 2i in the low nibble of byte i).
double e2m1_element(const uint32_t (&vgpr)[8], int k) {
  return fmt::decode_e2m1((vgpr[k / 8] >> (4 * (k % 8))) & 0xFu);
}

/// The E8M0 byte op_sel picks out of a lane's scale VGPR.
double e8m0_byte(uint32_t word, int opsel) {
  return fmt::decode_e8m0(static_cast<uint8_t>(word >> (8 * opsel)));
}

/// acc += A x B with M = N = 16, K = 128. A[m][k] is element k%32 of lane m + 16*(k/32), scaled
/// by that lane's op_sel byte; B[k][n] likewise from lane n + 16*(k/32); C[m][n] is element m%4
/// of lane n + 16*(m/4). Each result is exact in float64 and rounded to fp32 once.
void mfma_scale_e2m1(const wave_source& a, int opsel_a, const wave_source& b, int opsel_b,
                     wave_acc& acc) {
  for (int m = 0; m < 16; ++m) {
    for (int n = 0; n < 16; ++n) {
      const int out_lane = n + 16 * (m / 4);
      double sum = acc[out_lane][m % 4];
      for (int block = 0; block < 4; ++block) {
        const int la = m + 16 * block, lb = n + 16 * block;
        double dot = 0.0;
        for (int k = 0; k < 32; ++k)
          dot += e2m1_element(a.vgpr[la], k) * e2m1_element(b.vgpr[lb], k);
        sum += dot * e8m0_byte(a.scale[la], opsel_a) * e8m0_byte(b.scale[lb], opsel_b);
      }
      acc[out_lane][m % 4] = static_cast<float>(sum);
    }
  }
}

void put_source(wave_source& w, int lane, const g::fp4x32& v, uint32_t scale) {
  for (int i = 0; i < 4; ++i) w.vgpr[lane][i] = v.dwords[i];
  w.scale[lane] = scale;
}

// ---- A random problem: one query token, one page ----------------------------------------------

struct problem {
  int heads;
  page_shape shape{64, dim};
  std::vector<uint8_t> q_values, q_scales;  // [H][D/2], [H][D/32]
  std::vector<float> weights;               // [H]
  std::vector<uint8_t> k_values, k_scales;  // per token, [BS][D/2], [BS][D/32]

  problem(int h, uint64_t seed) : heads(h) {
    std::mt19937_64 rng(seed);
    // Every code, and scales spread over 2^-9 .. 2^9, so any misplaced lane changes the result.
    auto bytes = [&](std::vector<uint8_t>& v, size_t n, int lo, int hi) {
      std::uniform_int_distribution<int> d(lo, hi);
      v.resize(n);
      for (auto& x : v) x = static_cast<uint8_t>(d(rng));
    };
    bytes(q_values, size_t(h) * dim / 2, 0, 255);
    bytes(q_scales, size_t(h) * chunks, 118, 136);
    bytes(k_values, size_t(shape.block_size) * dim / 2, 0, 255);
    bytes(k_scales, size_t(shape.block_size) * chunks, 118, 136);
    std::uniform_real_distribution<float> w(-1.0f, 1.0f);
    for (int i = 0; i < h; ++i) weights.push_back(w(rng));
  }

  template <class Layout>
  std::vector<uint8_t> page() const {
    std::vector<uint8_t> p(static_cast<size_t>(shape.data_bytes()));
    for (int t = 0; t < shape.block_size; ++t) {
      mxi::layout::write_token<Layout>(p.data(), shape, t, &k_values[size_t(t) * dim / 2],
                                       &k_scales[size_t(t) * chunks]);
    }
    return p;
  }

  /// float64 logit of `token` and the sum of the absolute per-head terms (the tolerance's scale).
  std::pair<double, double> reference(int token) const {
    double logit = 0.0, magnitude = 0.0;
    for (int h = 0; h < heads; ++h) {
      double dot = 0.0;
      for (int d = 0; d < dim; ++d) {
        dot += double(fmt::decode_element(fmt::packed_code(&q_values[size_t(h) * dim / 2], d),
                                          q_scales[size_t(h) * chunks + d / 32])) *
               fmt::decode_element(fmt::packed_code(&k_values[size_t(token) * dim / 2], d),
                                   k_scales[size_t(token) * chunks + d / 32]);
      }
      const double term = double(weights[h]) * std::max(dot, 0.0);
      logit += term;
      magnitude += std::fabs(term);
    }
    return {logit, magnitude};
  }
};

// ---- The tile, run through the model ----------------------------------------------------------

/// A deliberate mistake applied to the registers, to prove the comparison catches it.
enum class fault {
  none,
  swap_token_lanes,  ///< B lanes l and l^1 exchanged: two tokens trade places
  rotate_k_blocks,   ///< B lane l takes lane (l+16)%64's source: K blocks misaligned with A
  scale_byte_zero,   ///< every head tile reads scale byte 0 (op_sel ignored)
  transpose_acc,     ///< accumulator lane groups and elements swapped: heads meet wrong weights
};

/// Where the tile's B operand of the 16 keys `tokens` comes from: a page in some layout, read a
/// lane at a time (key_values, key_scale of the lane's token), or through fetch_keys.
template <class Layout>
struct from_page {
  const problem& p;
  std::vector<uint8_t> page = p.template page<Layout>();
  std::pair<g::fp4x32, uint32_t> operator()(const int (&tokens)[16], int lane) const {
    const int token = tokens[g::lane_row(lane)];
    return {g::key_values<Layout>(page.data(), p.shape, token, lane),
            g::key_scale<Layout>(page.data(), p.shape, token, lane)};
  }
};
template <class Layout>
struct from_fetch {
  const problem& p;
  std::vector<uint8_t> page = p.template page<Layout>();
  std::pair<g::fp4x32, uint32_t> operator()(const int (&tokens)[16], int lane) const {
    const g::key_operand k = g::fetch_keys<Layout>(
        p.shape.block_size,
        [&](int i) {
          return mxi::arch::key_source{page.data(), tokens[i]};
        },
        lane);
    return {k.values, k.scale};
  }
};

/// Logits of the 16 tokens `tokens[lane_row]`, as the gfx950 tile computes them.
template <int Heads, class Keys>
std::vector<float> tile_logits(const problem& p, const Keys& keys, const int (&tokens)[16],
                               fault f) {
  g::query_fragment<Heads> frag[lanes];
  wave_source b;
  for (int l = 0; l < lanes; ++l) {
    frag[l] = g::load_query<Heads>(p.q_values.data(), p.q_scales.data(), p.weights.data(), l);
    const auto [values, scale] = keys(tokens, l);
    put_source(b, l, values, scale);
  }
  if (f == fault::swap_token_lanes || f == fault::rotate_k_blocks) {
    const wave_source right = b;
    for (int l = 0; l < lanes; ++l) {
      const int from = f == fault::swap_token_lanes ? (l ^ 1) : (l + 16) % lanes;
      std::copy(std::begin(right.vgpr[from]), std::end(right.vgpr[from]), std::begin(b.vgpr[l]));
      b.scale[l] = right.scale[from];
    }
  }

  g::head_pair_share partial[lanes] = {};
  for (int t = 0; t < Heads / g::tile_heads; ++t) {
    wave_source a;
    for (int l = 0; l < lanes; ++l) put_source(a, l, frag[l].values[t], frag[l].scale_word(t));
    wave_acc acc = {};
    const int opsel = f == fault::scale_byte_zero ? 0 : g::query_fragment<Heads>::opsel(t);
    mfma_scale_e2m1(a, opsel, b, 0, acc);
    for (int l = 0; l < lanes; ++l) {
      float mine[4];
      for (int i = 0; i < 4; ++i) {
        mine[i] = f == fault::transpose_acc ? acc[16 * i + l % 16][l / 16] : acc[l][i];
      }
      partial[l] = g::add_tile_heads(mine, frag[l].weights[t], partial[l]);
    }
  }
  // Each lane ends its pair (score_tiles), then lane_head_sum<64, 16, 4> as lane c sees it: (own
  // + partner 16) + (the other pair).
  float share[lanes];
  for (int l = 0; l < lanes; ++l) share[l] = partial[l].even + partial[l].odd;
  std::vector<float> logits(16);
  for (int c = 0; c < 16; ++c) {
    logits[c] = (share[c] + share[c + 16]) + (share[c + 32] + share[c + 48]);
  }
  return logits;
}

/// Worst |tile - reference| over the contract's tolerance (1e-5 of the absolute per-head terms).
double worst_error(const problem& p, const std::vector<float>& logits, const int (&tokens)[16]) {
  double worst = 0.0;
  for (int c = 0; c < 16; ++c) {
    const auto [exact, magnitude] = p.reference(tokens[c]);
    const double tolerance = 1e-5 * magnitude + 1e-30;
    worst = std::max(worst, std::fabs(double(logits[c]) - exact) / tolerance);
  }
  return worst;
}

/// Tokens group*16 .. +15 of a page: the dense tile.
void group_tokens(int group, int (&tokens)[16]) {
  for (int i = 0; i < 16; ++i) tokens[i] = group * 16 + i;
}

/// Every 16-token group of the page, then 16 scattered tokens (as a candidate list gives them).
template <int Heads, class Keys>
void check_keys(const problem& p, const Keys& keys) {
  int tokens[16];
  for (int group = 0; group < p.shape.block_size / 16; ++group) {
    group_tokens(group, tokens);
    INFO("group " << group);
    CHECK(worst_error(p, tile_logits<Heads>(p, keys, tokens, fault::none), tokens) <= 1.0);
  }
  const int scattered[16] = {63, 0, 17, 5, 40, 33, 12, 58, 1, 29, 46, 8, 21, 50, 37, 2};
  CHECK(worst_error(p, tile_logits<Heads>(p, keys, scattered, fault::none), scattered) <= 1.0);
}

template <class Layout, int Heads>
void check_layout(uint64_t seed) {
  const problem p(Heads, seed);
  check_keys<Heads>(p, from_page<Layout>{p});
}

template <class Layout, int Heads>
void check_fetch(uint64_t seed) {
  const problem p(Heads, seed);
  check_keys<Heads>(p, from_fetch<Layout>{p});
}

}  // namespace

TEST_CASE("model: one product lands at C[m][n] in lane n + 16*(m/4), element m%4",
          "[gfx950][mfma]") {
  // A[m0][k0] = 1.5 and B[k0][n0] = -2 (scales 2^1 and 2^-3 by op_sel 2 and 1), all else zero.
  const int m0 = 9, n0 = 6, k0 = 77;
  const int block = k0 / 32, element = k0 % 32;
  wave_source a, b;
  a.vgpr[m0 + 16 * block][element / 8] = 3u << (4 * (element % 8));   // 1.5
  b.vgpr[n0 + 16 * block][element / 8] = 12u << (4 * (element % 8));  // -2
  for (int l = 0; l < lanes; ++l) {
    a.scale[l] = 0x00800000u | 127u;  // byte 2 is 2^1, byte 0 is 2^0
    b.scale[l] = 124u << 8 | 127u;    // byte 1 is 2^-3
  }
  wave_acc acc = {};
  mfma_scale_e2m1(a, 2, b, 1, acc);
  for (int l = 0; l < lanes; ++l) {
    for (int i = 0; i < 4; ++i) {
      const bool target = l == n0 + 16 * (m0 / 4) && i == m0 % 4;
      CHECK(acc[l][i] == (target ? -0.75f : 0.0f));
    }
  }
}

TEST_CASE("gfx950 tile matches float64 on the mfma16 layout", "[gfx950][mfma]") {
  check_layout<mxi::layout::mfma16, 16>(1);
  check_layout<mxi::layout::mfma16, 64>(2);
  check_layout<mxi::layout::mfma16, 128>(3);
}

TEST_CASE("gfx950 tile matches float64 on the linear layout", "[gfx950][mfma]") {
  check_layout<mxi::layout::linear, 16>(4);
  check_layout<mxi::layout::linear, 64>(5);
  check_layout<mxi::layout::linear, 128>(6);
}

TEST_CASE("gfx950 tile matches float64 on the aiter orders (vLLM's ROCm cache)", "[gfx950][mfma]") {
  check_layout<mxi::layout::aiter32, 64>(12);
  check_layout<mxi::layout::aiter16, 128>(13);
  check_fetch<mxi::layout::aiter32, 16>(14);
  check_fetch<mxi::layout::aiter16, 64>(15);
}

TEST_CASE("gfx950 tile matches float64 through fetch_keys (row_scorer's source)",
          "[gfx950][mfma]") {
  check_fetch<mxi::layout::mfma16, 16>(9);
  check_fetch<mxi::layout::linear, 64>(10);
  check_fetch<mxi::layout::mfma16, 128>(11);
}

TEST_CASE("fetch_keys: a key with a negative token reads token 0 of its page", "[gfx950][mfma]") {
  // The kernel's lanes past a set's last column load too (their scores are dropped), so that no
  // load is skipped: the operand must come from inside the page, and the others stay as they were.
  const problem p(64, 12);
  const auto page = p.page<mxi::layout::linear>();
  const int tokens[16] = {5, -1, 9, 0, 63, -7, 17, 33, 2, 40, 61, 12, 8, 50, 27, 44};
  for (int lane = 0; lane < lanes; ++lane) {
    const auto source = [&](int i) { return mxi::arch::key_source{page.data(), tokens[i]}; };
    const g::key_operand k = g::fetch_keys<mxi::layout::linear>(p.shape.block_size, source, lane);
    const int expected = std::max(tokens[g::lane_row(lane)], 0);
    const g::fp4x32 v = g::key_values<mxi::layout::linear>(page.data(), p.shape, expected, lane);
    INFO("lane " << lane);
    CHECK(std::equal(std::begin(k.values.dwords), std::end(k.values.dwords), std::begin(v.dwords)));
    CHECK(k.scale == g::key_scale<mxi::layout::linear>(page.data(), p.shape, expected, lane));
  }
}

TEST_CASE("gfx950 tile: a scale byte decoding to NaN gives a NaN logit", "[gfx950][mfma]") {
  // Assumes the instruction follows OCP for E8M0 255 (NaN), as the model does.
  problem p(64, 7);
  p.k_scales[3 * chunks + 2] = fmt::nan_scale;  // token 3, block 2
  int tokens[16];
  group_tokens(0, tokens);
  for (const auto& logits :
       {tile_logits<64>(p, from_page<mxi::layout::mfma16>{p}, tokens, fault::none),
        tile_logits<64>(p, from_fetch<mxi::layout::linear>{p}, tokens, fault::none)}) {
    CHECK(std::isnan(logits[3]));
    CHECK(std::isfinite(logits[4]));
  }
}

TEST_CASE("wrong lane mappings fail the comparison", "[gfx950][mfma]") {
  const problem p(64, 8);
  const from_page<mxi::layout::mfma16> keys{p};
  int tokens[16];
  group_tokens(1, tokens);
  for (const fault f : {fault::swap_token_lanes, fault::rotate_k_blocks, fault::scale_byte_zero,
                        fault::transpose_acc}) {
    INFO("fault " << static_cast<int>(f));
    CHECK(worst_error(p, tile_logits<64>(p, keys, tokens, f), tokens) > 1.0);
  }
}
