// The scoring kernels, the K-cache writer and the Q quantizer on the GPU, against the float64
// truth of tests/common/check.hpp (logits) and format::quantize_block on the host (bit-exact).
// Host-only cases (the FP4 -> FP8 and int8 expands, the tile swizzle, the candidate prefix) run
// everywhere, CI included; GPU cases skip visibly without a device.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "catch.hpp"
#include "check.hpp"
#include "device_buffer.hpp"
#include "device_inputs.hpp"
#include "mxi/arch/fp4_to_fp8.hpp"
#include "mxi/arch/fp4_to_int8.hpp"
#include "mxi/arch/generic.hpp"
#include "mxi/arch/key_tile.hpp"
#if !MXI_PLATFORM_HIP
#include "mxi/arch/sm90.hpp"  // CUDA only (its inline PTX)
#endif
#include "mxi/device/args_from_views.hpp"
#include "mxi/device/k_cache_writer.hpp"
#include "mxi/device/paged_logits.hpp"
#include "mxi/device/q_quantizer.hpp"
#include "mxi/device/row_info.hpp"
#include "mxi/layout/cache_layout.hpp"
#include "skip.hpp"
#include "workload.hpp"

namespace {

using namespace mxi;
using mxi::testing::device_buffer;
using mxi::testing::gpu_check;

#define REQUIRE_GPU() \
  if (!mxi::testing::gpu_present()) MXI_SKIP("no GPU: the GPU logits tests need a device")

// ---------------------------------------------------------------------------------------------
// Host: the building blocks' arithmetic.

TEST_CASE("e2m1 to e4m3 is exact for every code and shift 0..8", "[host][arch]") {
  for (int shift = 0; shift <= 8; ++shift)
    for (unsigned code = 0; code < 16; ++code) {
      const float want = format::decode_e2m1(code) * std::ldexp(1.0f, -shift);
      const float got = arch::decode_e4m3(arch::e4m3_of_e2m1(code, shift));
      INFO("code " << code << " shift " << shift);
      CHECK(got == want);
      CHECK(std::signbit(got) == std::signbit(want));
    }
}

TEST_CASE("shifted e4m3 tables hold e4m3_of_e2m1", "[host][arch]") {
  for (int shift = 0; shift <= 8; ++shift) {
    const arch::fp8x8 lut = arch::e4m3_shifted_lut(shift);
    for (unsigned c = 0; c < 8; ++c) {
      const uint32_t word = c < 4 ? lut.lo : lut.hi;
      CHECK(static_cast<uint8_t>(word >> (8 * (c % 4))) == arch::e4m3_of_e2m1(c, shift));
    }
  }
}

TEST_CASE("packed expands match the per-code definitions", "[host][arch]") {
  std::mt19937 rng(7);
  for (int i = 0; i < 20000; ++i) {
    const uint32_t w = rng();
    const arch::fp8x8 fp8 = arch::expand_e2m1x8(w);
    const int shift = static_cast<int>(rng() % 9);
    const arch::fp8x8 shifted = arch::expand_e2m1x8_shifted(w, shift);
    const arch::fp8x8 i8 = arch::expand_e2m1x8_int8(w);
    for (int e = 0; e < 8; ++e) {
      const unsigned code = (w >> (4 * e)) & 0xFu;
      const uint32_t word_fp8 = e < 4 ? fp8.lo : fp8.hi, word_i8 = e < 4 ? i8.lo : i8.hi;
      const auto byte_fp8 = static_cast<uint8_t>(word_fp8 >> (8 * (e % 4)));
      const auto byte_i8 = static_cast<int8_t>(word_i8 >> (8 * (e % 4)));
      REQUIRE(byte_fp8 == arch::e4m3_of_e2m1(code, 0));
      REQUIRE(static_cast<uint8_t>((e < 4 ? shifted.lo : shifted.hi) >> (8 * (e % 4))) ==
              arch::e4m3_of_e2m1(code, shift));
      REQUIRE(byte_i8 == ((code & 8u) ? -1 : 1) * format::e2m1_twice_magnitude(code));
    }
  }
}

TEST_CASE("shifted int8 expands are 2 * code * 2^shift", "[host][arch]") {
  std::mt19937 rng(11);
  for (uint32_t shift = 0; shift <= arch::int8_max_shift; ++shift)
    for (int i = 0; i < 5000; ++i) {
      const uint32_t w = i < 16 ? 0x11111111u * static_cast<uint32_t>(i) : rng();
      const arch::fp8x8 x = arch::expand_e2m1x8_int8(w, arch::int8_shifted_lut(shift));
      for (int e = 0; e < 8; ++e) {
        const unsigned code = (w >> (4 * e)) & 0xFu;
        const auto got = static_cast<int8_t>((e < 4 ? x.lo : x.hi) >> (8 * (e % 4)));
        INFO("word " << w << " element " << e << " shift " << shift);
        REQUIRE(got == ((code & 8u) ? -1 : 1) * (format::e2m1_twice_magnitude(code) << shift));
      }
    }
}

TEST_CASE("u8 key expands are 48 + 2 * code * 2^shift, every code and shift", "[host][arch]") {
  std::mt19937 rng(13);
  for (uint32_t shift = 0; shift <= arch::u8_key_max_shift; ++shift)
    for (int i = 0; i < 5000; ++i) {
      const uint32_t w = i < 16 ? 0x11111111u * static_cast<uint32_t>(i) : rng();
      const arch::fp8x8 x = arch::expand_e2m1x8_u8(w, arch::u8_key_lut(shift));
      for (int e = 0; e < 8; ++e) {
        const unsigned code = (w >> (4 * e)) & 0xFu;
        const int got = static_cast<uint8_t>((e < 4 ? x.lo : x.hi) >> (8 * (e % 4)));
        INFO("word " << w << " element " << e << " shift " << shift);
        REQUIRE(got == arch::u8_key_bias + ((code & 8u) ? -1 : 1) *
                                               (format::e2m1_twice_magnitude(code) << shift));
      }
    }
}

#if !MXI_PLATFORM_HIP  // arch/sm90.hpp compiles for CUDA only
TEST_CASE("sm90 bias chunk: one 1 and 31 x 255 against its column give -48 x any column sum",
          "[host][arch]") {
  // Every n the bias can take (|column sum| <= 128 * 96): the words must hold s8 values and sum
  // to n against the constant A of bias_operand.
  const int32_t limit = arch::u8_key_bias * 128 * 96;
  int64_t checked = 0;
  for (int32_t n = -limit; n <= limit; ++n) {
    int64_t sum = 0;
    bool in_range = true;
    for (int q = 0; q < 8; ++q) {
      const uint32_t word = arch::sm90::bias_column_word(n, q);
      for (int i = 0; i < 4; ++i) {
        const int v = static_cast<int8_t>(word >> (8 * i));
        in_range = in_range && v >= -127 && v <= 127;
        sum += static_cast<int64_t>(4 * q + i == 0 ? 1 : 255) * v;
      }
    }
    if (sum != n || !in_range)
      FAIL("n = " << n << ": sum " << sum << (in_range ? "" : ", a byte out of range"));
    ++checked;
  }
  CHECK(checked == 2 * int64_t{limit} + 1);
}

TEST_CASE("sm90 key preparation: the shift word picks each block's u8 table", "[host][arch]") {
  // prepare_key stores key_shift_word; the scorer expands block b with table (word >> 8b) & 3.
  // Over every scale word whose bytes lie in a window of 8 around the fold's range edges and
  // the middle (all 8^4 spreads), that must be u8_key_lut(e_b - low) where the key folds.
  int64_t folded = 0, unfolded = 0;
  for (const uint32_t base : {127u - 34, 127u - 4, 127u + 28, 248u}) {
    for (uint32_t w = 0; w < 8 * 8 * 8 * 8; ++w) {
      uint32_t raw = 0;
      for (int b = 0; b < 4; ++b) raw |= (base + (w >> (3 * b)) % 8) << (8 * b);
      const arch::int8_fold f = arch::int8_fold_of(raw, arch::u8_key_max_shift);
      const uint32_t word = arch::sm90::key_shift_word(raw, f);
      if (!f.fits) {
        CHECK(word == 0u);
        ++unfolded;
        continue;
      }
      for (int b = 0; b < 4; ++b) {
        const uint32_t e = (raw >> (8 * b)) & 0xFFu;
        const arch::int8_lut want = arch::u8_key_lut(e - f.low);
        const arch::int8_lut got = arch::u8_key_lut((word >> (8 * b)) & 3u);
        if (got.pos_lo != want.pos_lo || got.pos_hi != want.pos_hi || got.neg_lo != want.neg_lo ||
            got.neg_hi != want.neg_hi)
          FAIL("scales " << std::hex << raw << ", block " << b);
      }
      ++folded;
    }
  }
  CHECK(folded > 0);
  CHECK(unfolded > 0);
}

TEST_CASE("sm90 integer epilogue: relu as a subnormal and a scaled weight give the unscaled bits",
          "[host][arch]") {
  // The claim of arch/sm90.hpp's file comment, on the host: for weights spanning up to 2^103
  // scaled into [2^23, 2^127) and s32 dots within the fold's range, the fma chain on bits(dot)
  // saturated to [0, 1] (relu_subnormal: NaN to +0), times 2^(149 - k), has the bits of the fma
  // chain on w * relu(dot).
  std::mt19937 rng(29);
  std::normal_distribution<float> normal(0.0f, 0.125f);
  std::uniform_int_distribution<int32_t> dot_of(-(1 << 21), 1 << 21);
  std::uniform_int_distribution<int> exponent_of(-50, 53);
  int compared = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    float w[64];
    int32_t dot[64];
    for (int h = 0; h < 64; ++h) {
      w[h] = trial % 4 == 0 ? std::ldexp(normal(rng) + 0.5f, exponent_of(rng)) : normal(rng);
      if (trial % 7 == 0 && h % 9 == 0) w[h] = 0.0f;
      dot[h] = h % 5 == 0 ? dot_of(rng) % 64 : dot_of(rng);
    }
    int top = -1000, bottom = 1000;
    for (float x : w)
      if (x != 0.0f) {
        top = std::max(top, std::ilogb(x));
        bottom = std::min(bottom, std::ilogb(x));
      }
    if (top - bottom > arch::sm90::tile_scorer<64>::max_weight_spread) continue;
    ++compared;
    // A third of the rows leave only their smallest weights a positive dot, so that the sum is
    // made of the smallest scaled products (a scale that took them below 2^23 fails here).
    if (trial % 3 == 0)
      for (int h = 0; h < 64; ++h)
        if (w[h] != 0.0f && std::ilogb(w[h]) > bottom + 4) dot[h] = -std::abs(dot[h]) - 1;
    const int k = 126 - top;
    float plain[2] = {0.0f, 0.0f}, scaled[2] = {0.0f, 0.0f};
    for (int h = 0; h < 64; ++h) {
      const float relu = static_cast<float>(std::max(dot[h], 0));
      plain[h % 2] = std::fma(w[h], relu, plain[h % 2]);
      const float bits = mxi::bit_cast<float>(dot[h]);
      const float subnormal = bits > 0.0f ? std::fmin(bits, 1.0f) : 0.0f;
      scaled[h % 2] = std::fma(std::ldexp(w[h], k), subnormal, scaled[h % 2]);
    }
    const float want = plain[0] + plain[1];
    const float got = (scaled[0] + scaled[1]) * std::ldexp(1.0f, 149 - k);
    if (mxi::bit_cast<uint32_t>(got) != mxi::bit_cast<uint32_t>(want))
      FAIL("trial " << trial << ": " << got << " against " << want);
  }
  CHECK(compared > 19000);  // the few rows over the spread are skipped
}
#endif

TEST_CASE("sign-replicating byte permute: bit 3 of a selector spreads the byte's bit 7",
          "[host][arch]") {
  CHECK(arch::byte_permute_signed(0x80017F00u, 0xFF000000u, 0x3210u) == 0x80017F00u);
  CHECK(arch::byte_permute_signed(0x80017F00u, 0xFF000000u, 0xBA98u) == 0xFF000000u);
  CHECK(arch::byte_permute_signed(0x80017F00u, 0xFF000000u, 0x0F07u) == 0x00FF00FFu);
}

TEST_CASE("int8 fold: spread at most 3, no NaN, low scale within 2^+-32", "[host][arch]") {
  const auto word = [](uint32_t a, uint32_t b, uint32_t c, uint32_t d) { return a | b << 8 | c << 16 | d << 24; };
  CHECK(arch::int8_fold_of(word(127, 127, 127, 127)).fits);
  CHECK(arch::int8_fold_of(word(130, 127, 129, 128)).low == 127);
  CHECK(arch::int8_fold_of(word(130, 127, 129, 128)).fits);
  CHECK_FALSE(arch::int8_fold_of(word(131, 127, 129, 128)).fits);  // spread 4
  CHECK_FALSE(arch::int8_fold_of(word(127, 255, 127, 127)).fits);  // NaN scale
  CHECK(arch::int8_fold_of(word(95, 95, 98, 95)).fits);
  CHECK_FALSE(arch::int8_fold_of(word(94, 95, 95, 95)).fits);
  CHECK(arch::int8_fold_of(word(159, 159, 159, 159)).fits);
  CHECK_FALSE(arch::int8_fold_of(word(160, 160, 160, 160)).fits);
  CHECK_FALSE(arch::int8_fold_of(word(255, 255, 255, 255)).fits);
  // Keys take the u8 expand: spread at most 2.
  CHECK(arch::int8_fold_of(word(129, 127, 128, 127), arch::u8_key_max_shift).fits);
  CHECK_FALSE(arch::int8_fold_of(word(130, 127, 129, 128), arch::u8_key_max_shift).fits);
}

TEST_CASE("key tile swizzle is a bijection of each row's 16-byte slots", "[host][arch]") {
  using shape = arch::key_tile_shape;
  std::set<int> words;
  for (int n = 0; n < shape::keys; ++n)
    for (int b = 0; b < shape::blocks; ++b)
      for (int q = 0; q < 4; ++q) {
        const int w = shape::word(n, b, q);
        REQUIRE(w / (shape::row_bytes / 4) == n);
        words.insert(w);
      }
  CHECK(words.size() == static_cast<size_t>(shape::value_bytes / 4));
  // The sm90 read of one block by a warp (lane = key g, quarter t) touches 32 distinct banks.
  for (int b = 0; b < shape::blocks; ++b) {
    std::set<int> banks;
    for (int lane = 0; lane < 32; ++lane) banks.insert(shape::word(lane / 4, b, lane % 4) % 32);
    CHECK(banks.size() == 32);
  }
}

TEST_CASE("logits groups: a request's rows split evenly, at most the target's group",
          "[host][plan]") {
  using device::detail::rows_per_group;
  const auto sm90 = device::logits_config_for(arch::target::sm90);
  const auto generic = device::logits_config_for(arch::target::generic);
  // 64 requests of next_n 1 .. 5 rows, and one prefill of 32768 rows, at H = 64.
  CHECK(rows_per_group(64, 64, false, sm90, 64) == 1);
  CHECK(rows_per_group(128, 64, false, sm90, 64) == 2);
  // sm90: three rows' queries (two at H = 128) leave room for three consumers; next_n 4 is two
  // groups of 2, next_n 5 one of 3 and one of 2 (each group's width is the larger).
  CHECK(rows_per_group(192, 64, false, sm90, 64) == 3);
  CHECK(rows_per_group(256, 64, false, sm90, 64) == 2);
  CHECK(rows_per_group(320, 64, false, sm90, 64) == 3);
  CHECK(rows_per_group(32768, 1, false, sm90, 64) == 3);
  CHECK(rows_per_group(32768, 1, false, sm90, 128) == 2);
  CHECK(rows_per_group(256, 64, true, sm90, 64) == 1);  // candidate rows: one each
  // generic: the row scorers take 1, 2 or 4 rows.
  CHECK(rows_per_group(192, 64, false, generic, 64) == 4);
  CHECK(rows_per_group(32768, 1, false, generic, 64) == 4);
  for (const auto& t : {sm90, generic})
    for (const int heads : {32, 64, 128})
      for (int per_request = 1; per_request <= 64; ++per_request) {
        const int g = rows_per_group(int64_t{per_request} * 3, 3, false, t, heads);
        const int most = heads > 64 ? t.max_group_wide : t.max_group;
        const int fewest_groups = (per_request + most - 1) / most;
        CAPTURE(t.max_group, heads, per_request, g);
        CHECK(g >= 1);
        CHECK(g <= most);
        CHECK((per_request + g - 1) / g == fewest_groups);  // as few groups as the cap allows
        if (t.power_of_two)
          CHECK((g & (g - 1)) == 0);
        else
          CHECK(g == (per_request + fewest_groups - 1) / fewest_groups);  // split evenly
      }
}

TEST_CASE("candidate columns are the visible prefix", "[host][candidate]") {
  const int32_t ids[] = {0, 3, 7};
  CHECK(device::candidate_columns(ids, 3, 8, 64) == 24);  // block 7 covers 56..63, all visible
  CHECK(device::candidate_columns(ids, 3, 8, 60) == 20);  // 56..59 of block 7
  CHECK(device::candidate_columns(ids, 3, 8, 0) == 0);
  CHECK(device::candidate_columns(ids, 0, 8, 64) == 0);
}

// ---------------------------------------------------------------------------------------------
// GPU: logits against the float64 truth.

/// A workload's inputs in device memory plus the row_info pass.
struct device_problem {
  indexer_args args;  ///< the workload's, pointing at `inputs`
  testing::device_inputs inputs;
  device_buffer<device::row_info> rows;
  device_buffer<char> row_ws;
  device_buffer<uint32_t> error_word{1};

  explicit device_problem(const testing::host_workload& w)
      : args(w.indexer()),
        inputs(args),
        rows(static_cast<size_t>(std::max<int64_t>(w.num_tokens, 1))),
        row_ws(device::row_info_workspace(args.requests.num_requests)) {
    inputs.point(args);
    error_word.fill_bytes(0);
  }

  /// launch_row_info; batches of up to `fuse_up_to` requests take its single kernel, of up to
  /// `wide_up_to` in its wide blocks.
  void compute_rows(int fuse_up_to = device::fused_row_requests,
                    int wide_up_to = device::wide_row_requests) {
    const device::row_info_problem p = device::row_info_problem_of(
        args.queries, args.cache, args.requests, args.compress_ratio, args.max_model_len);
    gpu_check(device::launch_row_info(p, rows.data(), row_ws.data(), error_word.data(), nullptr,
                                      fuse_up_to, wide_up_to),
              "launch_row_info");
  }

  /// Every row, dense, into out [T][ld] with the -inf tail.
  device::paged_logits_args logits_args(float* out, int64_t ld) const {
    device::paged_logits_args a = device::paged_logits_args_of(
        args.queries, args.cache, args.requests, args.compress_ratio, rows.data());
    a.out = out;
    a.ld = ld;
    a.width = ld;
    a.clean = true;
    return a;
  }
};

/// Runs dense logits on `target` and checks every row (scores and the -inf tail).
void check_dense(const testing::host_workload& w, arch::target target) {
  device_problem d(w);
  d.compute_rows();
  const int64_t ld = w.max_model_len + 5;
  device_buffer<float> out(static_cast<size_t>(w.num_tokens * ld));
  out.fill_bytes(0x7F);  // poison: 0x7F7F7F7F is a large finite float no score equals
  device_buffer<char> ws(device::paged_logits_workspace(w.num_tokens, static_cast<int>(w.seq_lens.size())));
  device::paged_logits_args a = d.logits_args(out.data(), ld);
  a.plan_overlaps_prior = true;  // row_info came right before
  gpu_check(device::launch_paged_logits(a, ws.data(), nullptr, &target), "launch_paged_logits");
  gpu_check(platform::device_synchronize(), "synchronize");
  const std::vector<float> host = out.download();
  const std::vector<device::row_info> rows = d.rows.download();
  CHECK(d.error_word.download()[0] == 0u);
  for (int64_t t = 0; t < w.num_tokens; ++t) {
    REQUIRE(rows[t].visible == w.visible(t));
    REQUIRE(rows[t].request == w.request_of(t));
    const testing::row_truth truth = testing::exact_row(w, t);
    const std::string why = testing::check_logits_row(truth, host.data() + t * ld, ld, true);
    INFO("token " << t << " visible " << truth.visible);
    REQUIRE(why.empty());
  }
}

const char* name_of(arch::target t) {
  return t == arch::target::sm90 ? "sm90" : t == arch::target::gfx950 ? "gfx950" : "generic";
}

/// Every tile this device can run, the generic one last.
std::vector<arch::target> targets_here() {
  int device = 0;
  gpu_check(platform::get_device(&device), "get_device");
  std::vector<arch::target> out;
  for (const arch::target t : {arch::target::sm90, arch::target::gfx950, arch::target::generic}) {
    bool runs = false;
    gpu_check(arch::can_run(device, t, &runs), "can_run");
    if (runs) out.push_back(t);
  }
  return out;
}

TEST_CASE("GPU tile choice: a Hopper GPU runs sm90 when the build holds sm_90a, generic on wave64",
          "[gpu][arch]") {
  REQUIRE_GPU();
  int device = 0, major = 0, minor = 0;
  gpu_check(platform::get_device(&device), "get_device");
  gpu_check(platform::compute_capability(&major, &minor, device), "compute_capability");
  if (MXI_PLATFORM_HIP || major != 9) MXI_SKIP("not an NVIDIA Hopper GPU");
#if !defined(MXI_TEST_SM90A_BUILD)
  MXI_SKIP("this build has no sm_90a pass");
#endif
  arch::target chosen = arch::target::generic;
  gpu_check(arch::choose_target(device, &chosen), "choose_target");
  // An MXI_EMULATE_WAVE64 build runs 64-lane waves, which the warpgroup tile cannot.
  CHECK(chosen == (platform::wave64::emulated ? arch::target::generic : arch::target::sm90));
  CHECK(platform::last_error() == platform::success);  // the image probe leaves no error behind
}

TEST_CASE("GPU logits: decode next_n 1..4, every layout, pages 16/64/256", "[gpu][logits]") {
  REQUIRE_GPU();
  for (const arch::target target : targets_here())
    for (const cache_layout layout : {cache_layout::linear, cache_layout::mfma16, cache_layout::aiter32, cache_layout::aiter16})
      for (const int bs : {16, 64, 256})
        for (int next_n = 1; next_n <= 4; ++next_n) {
          if (!layout::holds(layout, {bs, 128})) continue;  // aiter32: whole runs of 32
          testing::workload_spec s = testing::decode_spec(3, 700, next_n, 11 * bs + next_n);
          s.layout = layout;
          s.block_size = bs;
          s.page_padding = 16;
          INFO(name_of(target) << " layout " << int(layout) << " bs " << bs << " next_n " << next_n);
          check_dense(testing::make_workload(s), target);
        }
}

TEST_CASE("GPU logits: ragged prefill and compress ratios", "[gpu][logits]") {
  REQUIRE_GPU();
  for (const arch::target target : targets_here())
    for (const int c : {1, 2, 4})
      for (const cache_layout layout : {cache_layout::linear, cache_layout::mfma16, cache_layout::aiter32, cache_layout::aiter16}) {
        testing::workload_spec s = testing::prefill_spec({300, 1, 77, 530}, 5 + c);
        s.compress_ratio = c;
        s.layout = layout;
        INFO(name_of(target) << " c " << c << " layout " << int(layout));
        check_dense(testing::make_workload(s), target);
      }
}

TEST_CASE("GPU logits: head counts, tied keys, a long single row", "[gpu][logits]") {
  REQUIRE_GPU();
  for (const arch::target target : targets_here()) {
    for (const int h : {16, 48, 128})
      for (const int next_n : {2, 3, 4, 5}) {  // sm90 at H <= 64: groups of 2, 3, 2 + 2, 3 + 2
        testing::workload_spec s = testing::decode_spec(2, 400, next_n, h + next_n);
        s.num_heads = h;
        INFO(name_of(target) << " H " << h << " next_n " << next_n);
        check_dense(testing::make_workload(s), target);
      }
    testing::workload_spec ties = testing::decode_spec(2, 500, 1, 3);
    ties.keys = testing::key_pattern::few_distinct;
    check_dense(testing::make_workload(ties), target);
    check_dense(testing::make_workload(testing::decode_spec(1, 20000, 1, 4)), target);
  }
}

TEST_CASE("GPU logits: more requests than the plan keeps in shared memory", "[gpu][logits]") {
  // Past plan_shared_requests the plan keeps its search table in the workspace; past
  // fused_row_requests row_info takes its two kernels.
  REQUIRE_GPU();
  const int requests = device::detail::plan_shared_requests + 52;
  static_assert(device::fused_row_requests < device::detail::plan_shared_requests + 52);
  for (const arch::target target : targets_here()) {
    INFO(name_of(target));
    check_dense(testing::make_workload(testing::decode_spec(requests, 80, 1, 17)), target);
  }
}

TEST_CASE("GPU logits: many tiles a block, its ring lapped many times", "[gpu][logits][large]") {
  // Each block's producer and consumer warps lap the sm90 kernel's ring dozens of times at their
  // own paces: a barrier wait that let one of them through a phase early (the parity waits cannot
  // tell phases two apart) scores a stale tile, or hangs: a ring of eight stages served by four
  // producer warps and three consumers passed every smaller case here and hung on the bench.
  REQUIRE_GPU();
  for (const arch::target target : targets_here())
    for (const int next_n : {1, 2, 3}) {
      testing::workload_spec s = testing::decode_spec(40, 9000, next_n, 70 + next_n);
      INFO(name_of(target) << " next_n " << next_n);
      check_dense(testing::make_workload(s), target);
    }
}

TEST_CASE("GPU logits: query rows whose block scales spread past the e4m3 fold", "[gpu][logits]") {
  REQUIRE_GPU();
  testing::workload_spec s = testing::decode_spec(2, 300, 3, 9);
  testing::host_workload w = testing::make_workload(s);
  // Token 0: head 5's block 2 is 2^-12 of its neighbours; token 2: one huge block.
  w.q_scales[0 * 64 * 4 + 5 * 4 + 2] = static_cast<uint8_t>(w.q_scales[5 * 4 + 1] - 12);
  w.q_scales[2 * 64 * 4 + 9 * 4 + 0] = 200;
  for (const arch::target target : targets_here()) check_dense(w, target);
}

/// Block `b`'s scale byte of the key at position `pos` of request `r` in a host workload's cache.
uint8_t& key_scale(testing::host_workload& w, int r, int64_t pos, int b) {
  const int bs = w.spec.block_size;
  const int64_t page = w.block_table[r * w.max_blocks + pos / bs];
  const layout::page_shape shape{bs, w.spec.head_dim};
  return layout::dispatch(w.spec.layout, [&](auto L) -> uint8_t& {
    return w.kv_cache[page * w.page_stride + decltype(L)::scale_offset(shape, static_cast<int>(pos % bs), b)];
  });
}

TEST_CASE("GPU logits: keys and rows outside the int8 fold mix with those inside", "[gpu][logits]") {
  REQUIRE_GPU();
  // One-row groups (decode's usual case), two-row and (sm90) three-row ones.
  for (const int next_n : {1, 2, 3}) {
    for (const cache_layout layout : {cache_layout::linear, cache_layout::mfma16}) {
      testing::workload_spec s = testing::decode_spec(3, 900, next_n, 41);
      s.layout = layout;
      testing::host_workload w = testing::make_workload(s);
      for (int r = 0; r < 3; ++r)
        for (int64_t pos = 0; pos < w.seq_lens[r]; ++pos) {
          if (pos % 7 == 3) {  // spread 4: one block 2^4 above the key's lowest
            uint8_t lo = 255;
            for (int b = 0; b < 4; ++b) lo = std::min(lo, key_scale(w, r, pos, b));
            key_scale(w, r, pos, static_cast<int>(pos % 4)) = static_cast<uint8_t>(lo + 4);
          }
          if (pos % 97 == 50)  // every block tiny: below the fold's range
            for (int b = 0; b < 4; ++b) key_scale(w, r, pos, b) = 90;
        }
      // Request 2's rows fall back as a group: one head weight below 2^-32.
      w.weights[static_cast<size_t>(w.query_start_loc[2]) * s.num_heads + 7] = 1e-12f;
      for (const arch::target target : targets_here()) {
        INFO(name_of(target) << " layout " << int(layout) << " next_n " << next_n);
        check_dense(w, target);
      }
    }
  }
}

TEST_CASE("GPU logits: candidate mode reads the listed blocks only", "[gpu][logits][candidate]") {
  // Candidate blocks of 1 .. 16 tokens in pages of 16 and 64 (blocks that straddle pages, several
  // a page, tokens out of page order in a tile), every layout. Each valid column must be within
  // the tolerance of the float64 truth and carry the bits the dense kernel gives its position
  // (the same key, the same row); columns past the valid prefix stay unwritten.
  REQUIRE_GPU();
  for (const arch::target target : targets_here())
    for (const cache_layout layout : {cache_layout::linear, cache_layout::mfma16, cache_layout::aiter32, cache_layout::aiter16})
      for (const int bs : {16, 64})
        for (const int cbs : {1, 5, 8, 16}) {
          if (!layout::holds(layout, {bs, 128})) continue;
          testing::workload_spec s = testing::decode_spec(3, 3000, 1, 21 + bs + cbs);
          s.layout = layout;
          s.block_size = bs;
          const testing::host_workload w = testing::make_workload(s);
          const int ncb = 600 / cbs;
          std::mt19937 rng(3 + cbs);
          std::vector<int32_t> ids(static_cast<size_t>(w.num_tokens * ncb), -1),
              counts(static_cast<size_t>(w.num_tokens));
          for (int64_t t = 0; t < w.num_tokens; ++t) {
            const int64_t live = (w.visible(t) + cbs - 1) / cbs;
            std::set<int32_t> pick;
            pick.insert(static_cast<int32_t>(live - 1));  // the newest, partly filled block
            while (static_cast<int64_t>(pick.size()) < std::min<int64_t>(ncb - 5, live))
              pick.insert(static_cast<int32_t>(rng() % live));
            std::copy(pick.begin(), pick.end(), ids.begin() + t * ncb);
            counts[t] = static_cast<int32_t>(pick.size());
          }
          device_problem d(w);
          d.compute_rows();
          device_buffer<int32_t> d_ids(ids), d_counts(counts);
          device_buffer<char> ws(device::paged_logits_workspace(
              w.num_tokens, static_cast<int>(w.seq_lens.size()), int64_t{ncb} * cbs));
          const int64_t dense_ld = w.max_model_len;
          device_buffer<float> dense(static_cast<size_t>(w.num_tokens * dense_ld));
          gpu_check(device::launch_paged_logits(d.logits_args(dense.data(), dense_ld), ws.data(),
                                                nullptr, &target),
                    "launch dense logits");
          const int64_t ld = ncb * cbs;
          device_buffer<float> out(static_cast<size_t>(w.num_tokens * ld));
          out.fill_bytes(0x7F);
          device::paged_logits_args a = d.logits_args(out.data(), ld);
          a.clean = false;
          a.candidate_ids = d_ids.data();
          a.candidate_stride = ncb;
          a.candidate_counts = d_counts.data();
          a.candidate_block_size = cbs;
          gpu_check(device::launch_paged_logits(a, ws.data(), nullptr, &target),
                    "launch candidate logits");
          const std::vector<float> host = out.download(), dense_host = dense.download();
          for (int64_t t = 0; t < w.num_tokens; ++t) {
            const testing::row_truth truth = testing::exact_row(w, t);
            const int64_t valid =
                device::candidate_columns(ids.data() + t * ncb, counts[t], cbs, w.visible(t));
            INFO(name_of(target) << " layout " << int(layout) << " bs " << bs << " cbs " << cbs
                                 << " token " << t);
            for (int64_t col = 0; col < counts[t] * cbs; ++col) {
              const int64_t pos = static_cast<int64_t>(ids[t * ncb + col / cbs]) * cbs + col % cbs;
              const float got = host[t * ld + col];
              if (col >= valid) {
                REQUIRE(pos >= truth.visible);
                REQUIRE(bit_cast<uint32_t>(got) == 0x7F7F7F7Fu);  // not written
                continue;
              }
              REQUIRE(std::fabs(got - truth.score[pos]) <= 1e-5 * truth.scale[pos]);
              REQUIRE(bit_cast<uint32_t>(got) ==
                      bit_cast<uint32_t>(dense_host[t * dense_ld + pos]));
            }
          }
        }
}

TEST_CASE("GPU row_info: broken requests set error bits and drop only their rows", "[gpu][row_info]") {
  REQUIRE_GPU();
  // The single kernel in wide blocks (the default for 4 requests) and in narrow ones, and the
  // two-kernel path of larger batches.
  const int path = GENERATE(0, 1, 2);
  const int fuse_up_to = path == 2 ? 0 : device::fused_row_requests;
  const int wide_up_to = path == 0 ? device::wide_row_requests : 0;
  INFO("fuse_up_to " << fuse_up_to << " wide_up_to " << wide_up_to);
  testing::workload_spec s = testing::decode_spec(4, 300, 2, 31);
  s.block_size = 16;
  testing::host_workload w = testing::make_workload(s);
  // Request 1: a bad page id in its last needed column; request 2: seq_len below its rows.
  const int64_t need1 = (w.seq_lens[1] + 15) / 16;
  w.block_table[1 * w.max_blocks + need1 - 1] = static_cast<int32_t>(w.num_pages + 7);
  w.seq_lens[2] = 1;
  // max_model_len one short of request 3's longest row.
  w.max_model_len = w.seq_lens[3] - 1;
  device_problem d(w);
  d.compute_rows(fuse_up_to, wide_up_to);
  const std::vector<device::row_info> rows = d.rows.download();
  const uint32_t bits = d.error_word.download()[0];
  CHECK(bits == (device_error_block_table | device_error_seq_len | device_error_max_model_len));
  for (int64_t t = 0; t < w.num_tokens; ++t) {
    const int r = w.request_of(t);
    INFO("token " << t << " request " << r);
    CHECK(rows[t].request == r);
    const int64_t vis = w.seq_lens[r] - 2 + (t - w.query_start_loc[r]) + 1;
    const bool broken = (r == 1 && (vis + 15) / 16 >= need1) || r == 2 || vis > w.max_model_len;
    CHECK(rows[t].visible == (broken ? -1 : vis));
  }
  // A non-monotone query_start_loc poisons the whole batch.
  std::vector<int32_t> qsl = w.query_start_loc;
  std::swap(qsl[1], qsl[2]);
  d.inputs.query_start_loc.upload(qsl);
  d.error_word.fill_bytes(0);
  d.rows.fill_bytes(0x55);  // every row must be written
  d.compute_rows(fuse_up_to, wide_up_to);
  CHECK((d.error_word.download()[0] & device_error_query_start_loc) != 0u);
  for (const device::row_info& r : d.rows.download()) {
    CHECK(r.visible == -1);
    CHECK(r.request == -1);
  }
}

TEST_CASE("GPU logits: rows row_info rejects come out -inf, the others exact", "[gpu][logits]") {
  REQUIRE_GPU();
  // The dense plan sizes its items from seq_lens without waiting for row_info, so the rejected
  // rows' items are walked: they must read no page (compute-sanitizer checks the reads) and write
  // nothing but the -inf fill, while the valid rows next to them score as usual. The plan overlapped with
  // row_info (launched right after it) and after it.
  const bool overlap = GENERATE(true, false);
  for (const arch::target target : targets_here()) {
    testing::workload_spec s = testing::decode_spec(4, 300, 2, 37);
    s.block_size = 16;
    testing::host_workload w = testing::make_workload(s);
    // Request 1: a bad page id in its last column; request 2: seq_len below its rows; request 3:
    // max_model_len one short of its longest row.
    const int64_t need1 = (w.seq_lens[1] + 15) / 16;
    w.block_table[1 * w.max_blocks + need1 - 1] = static_cast<int32_t>(w.num_pages + 7);
    w.seq_lens[2] = 1;
    w.max_model_len = w.seq_lens[3] - 1;
    device_problem d(w);
    d.compute_rows();
    const int64_t ld = w.max_model_len + 5;
    device_buffer<float> out(static_cast<size_t>(w.num_tokens * ld));
    out.fill_bytes(0x7F);
    device_buffer<char> ws(
        device::paged_logits_workspace(w.num_tokens, static_cast<int>(w.seq_lens.size())));
    device::paged_logits_args a = d.logits_args(out.data(), ld);
    a.plan_overlaps_prior = overlap;
    gpu_check(device::launch_paged_logits(a, ws.data(), nullptr, &target), "launch_paged_logits");
    gpu_check(platform::device_synchronize(), "synchronize");
    const std::vector<float> host = out.download();
    const std::vector<device::row_info> rows = d.rows.download();
    int rejected = 0;
    for (int64_t t = 0; t < w.num_tokens; ++t) {
      INFO(name_of(target) << " overlap " << overlap << " token " << t << " visible "
                           << rows[t].visible);
      if (rows[t].visible < 0) {
        ++rejected;
        for (int64_t c = 0; c < ld; ++c)
          REQUIRE(host[t * ld + c] == -std::numeric_limits<float>::infinity());
      } else {
        REQUIRE(testing::check_logits_row(testing::exact_row(w, t), host.data() + t * ld, ld, true)
                    .empty());
      }
    }
    CHECK(rejected >= 4);  // request 2's two rows, and at least one row of requests 1 and 3
    CHECK(rejected < w.num_tokens - 2);
  }
}

// ---------------------------------------------------------------------------------------------
// GPU: writer and quantizer, bit for bit with the host codec.

std::vector<float> random_rows(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = normal(rng) * std::ldexp(1.0f, static_cast<int>(rng() % 40) - 20);
  x[5] = 0.0f;
  x[40] = std::numeric_limits<float>::quiet_NaN();  // its block gets scale 255
  for (int i = 64; i < 96; ++i) x[i] = 0.0f;        // an all-zero block
  return x;
}

uint16_t to_bf16(float f) { return static_cast<uint16_t>(bit_cast<uint32_t>(f) >> 16); }
float from_bf16(uint16_t b) { return bit_cast<float>(static_cast<uint32_t>(b) << 16); }

/// `x` on the device from element `offset` on: offset 1 leaves the source off 16-byte alignment,
/// so the quantizers take their element loads instead of vector loads.
template <class T>
device_buffer<T> shifted(const std::vector<T>& x, int offset) {
  std::vector<T> padded(x.size() + offset);
  std::copy(x.begin(), x.end(), padded.begin() + offset);
  return device_buffer<T>(padded);
}

TEST_CASE("GPU q quantizer is bit-exact with format::quantize_row", "[gpu][quantize]") {
  REQUIRE_GPU();
  // D 128, and 32, 96, 512: 1, 3 and 16 blocks a row; sources aligned and not.
  const int64_t t = 37, h = 16, d = GENERATE(128, 32, 96, 512);
  const int offset = GENERATE(0, 1);
  const std::vector<float> x = random_rows(static_cast<size_t>(t * h * d), 5);
  std::vector<uint16_t> xb(x.size());
  for (size_t i = 0; i < x.size(); ++i) xb[i] = to_bf16(x[i]);
  for (const bool bf16 : {false, true})
    for (const auto rule : {format::scale_rule::ceil, format::scale_rule::floor}) {
      device_buffer<float> dx = shifted(x, offset);
      device_buffer<uint16_t> dxb = shifted(xb, offset);
      device_buffer<uint8_t> values(static_cast<size_t>(t * h * d / 2)), scales(static_cast<size_t>(t * h * d / 32));
      device::q_quantize_problem p;
      p.q = {bf16 ? static_cast<const void*>(dxb.data() + offset) : dx.data() + offset, bf16};
      CHECK(p.q.vectors == (offset == 0));
      p.num_rows = t * h;
      p.head_dim = static_cast<int>(d);
      p.values = values.data();
      p.scales = scales.data();
      p.rule = rule;
      gpu_check(device::launch_quantize_q(p, nullptr), "quantize");
      std::vector<uint8_t> want_v(values.size()), want_s(scales.size());
      for (int64_t r = 0; r < t * h; ++r)
        format::quantize_row([&](int i) { return bf16 ? from_bf16(xb[r * d + i]) : x[r * d + i]; }, d,
                             want_v.data() + r * d / 2, want_s.data() + r * d / 32, rule);
      CHECK(values.download() == want_v);
      CHECK(scales.download() == want_s);
    }
}

TEST_CASE("GPU row checks quantize a call's float queries as launch_quantize_q does, on each path",
          "[gpu][quantize][rows]") {
  REQUIRE_GPU();
  // The side job's blocks follow the row blocks of check_and_compute_rows (blocks of 1024 or 256
  // threads) or of compute_rows (the two-kernel path): the fusion limits, lowered, reach each.
  const testing::host_workload w = testing::make_workload(testing::decode_spec(3, 200, 5, 81));
  device_problem d(w);
  const device::row_info_problem rows_problem = device::row_info_problem_of(
      d.args.queries, d.args.cache, d.args.requests, d.args.compress_ratio, d.args.max_model_len);
  d.compute_rows();
  const std::vector<device::row_info> want_rows = d.rows.download();
  const int64_t t = w.num_tokens, h = 64, dim = 128;
  const std::vector<float> x = random_rows(static_cast<size_t>(t * h * dim), 6);
  std::vector<uint16_t> xb(x.size());
  for (size_t i = 0; i < x.size(); ++i) xb[i] = to_bf16(x[i]);
  struct path {
    int fuse_up_to, wide_up_to;
  };
  const path at = GENERATE(path{device::fused_row_requests, device::wide_row_requests},
                           path{device::fused_row_requests, 0}, path{0, 0});
  const int offset = GENERATE(0, 1);
  for (const bool bf16 : {false, true})
    for (const auto rule : {format::scale_rule::ceil, format::scale_rule::floor}) {
      INFO("fuse_up_to " << at.fuse_up_to << " wide_up_to " << at.wide_up_to << " offset "
                         << offset << " bf16 " << bf16 << " rule " << int(rule));
      device_buffer<float> dx = shifted(x, offset);
      device_buffer<uint16_t> dxb = shifted(xb, offset);
      device::q_quantize_problem p;
      p.q = {bf16 ? static_cast<const void*>(dxb.data() + offset) : dx.data() + offset, bf16};
      p.num_rows = t * h;
      p.head_dim = static_cast<int>(dim);
      p.rule = rule;
      device_buffer<uint8_t> want_v(static_cast<size_t>(t * h * dim / 2)),
          want_s(static_cast<size_t>(t * h * dim / 32));
      device_buffer<uint8_t> got_v(want_v.size()), got_s(want_s.size());
      got_v.fill_bytes(0xA5);
      got_s.fill_bytes(0xA5);
      p.values = want_v.data();
      p.scales = want_s.data();
      gpu_check(device::launch_quantize_q(p, nullptr), "quantize");
      p.values = got_v.data();
      p.scales = got_s.data();
      d.rows.fill_bytes(0xA5);
      gpu_check(device::launch_row_info(rows_problem, d.rows.data(), d.row_ws.data(),
                                        d.error_word.data(), nullptr, at.fuse_up_to,
                                        at.wide_up_to, device::q_quantize_job{p}),
                "launch_row_info with the quantizer");
      CHECK(got_v.download() == want_v.download());
      CHECK(got_s.download() == want_s.download());
      const std::vector<device::row_info> rows = d.rows.download();
      for (int64_t r = 0; r < t; ++r) {
        CHECK(rows[r].request == want_rows[r].request);
        CHECK(rows[r].visible == want_rows[r].visible);
      }
    }
  CHECK(d.error_word.download()[0] == 0u);
}

/// Blocks of 32 bf16 values holding every bf16 bit pattern at six scales: variant v of block b
/// is patterns 32b .. 32b + 31 (one sign and exponent, a quarter of the mantissas), where for
/// v > 0 element (b + 7v) % 32 is replaced by the block's largest magnitude times 2^v, so the
/// other values fall v binades lower against the block's scale, through every rounding boundary
/// of E2M1 (ties to even included), subnormals, NaN and infinity blocks among them.
std::vector<uint16_t> every_bf16_at_six_scales() {
  std::vector<uint16_t> xb;
  for (int v = 0; v < 6; ++v)
    for (uint32_t b = 0; b < 2048; ++b) {
      uint16_t largest = 0;
      for (uint32_t i = 0; i < 32; ++i)
        largest = std::max<uint16_t>(largest, (32 * b + i) & 0x7FFF);
      for (uint32_t i = 0; i < 32; ++i) {
        uint16_t x = static_cast<uint16_t>(32 * b + i);
        if (v > 0 && i == (b + 7 * v) % 32) {
          const float anchor = std::ldexp(from_bf16(largest), v);
          x = std::isfinite(anchor) ? to_bf16(anchor) : largest;  // a NaN block stays one
        }
        xb.push_back(x);
      }
    }
  return xb;
}

TEST_CASE("GPU quantizers encode every bf16 value as format::quantize_block does",
          "[gpu][quantize][writer]") {
  REQUIRE_GPU();
  // The bf16 source takes its own path on sm90 (format/bf16_pairs.hpp: two elements an
  // instruction); the Q quantizer runs it 4 lanes a block, the writer 1.
  const std::vector<uint16_t> xb = every_bf16_at_six_scales();
  const int64_t blocks = static_cast<int64_t>(xb.size() / 32);
  const device_buffer<uint16_t> dxb(xb);
  for (const auto rule : {format::scale_rule::ceil, format::scale_rule::floor}) {
    std::vector<uint8_t> want_v(xb.size() / 2), want_s(static_cast<size_t>(blocks));
    format::quantize_row([&](int i) { return from_bf16(xb[i]); }, static_cast<int>(xb.size()),
                         want_v.data(), want_s.data(), rule);
    device_buffer<uint8_t> values(want_v.size()), scales(want_s.size());
    device::q_quantize_problem p;
    p.q = {dxb.data(), true};
    p.num_rows = blocks;
    p.head_dim = 32;
    p.values = values.data();
    p.scales = scales.data();
    p.rule = rule;
    gpu_check(device::launch_quantize_q(p, nullptr), "quantize");
    INFO("rule " << int(rule));
    CHECK(values.download() == want_v);
    CHECK(scales.download() == want_s);

    // The writer: one token of D 32 a block, slot = token, pages of 64 in the linear layout.
    const int bs = 64;
    const int64_t pages = blocks / bs, stride = bs * (16 + 1);
    std::vector<int64_t> slots(static_cast<size_t>(blocks));
    std::iota(slots.begin(), slots.end(), 0);
    const device_buffer<int64_t> dslots(slots);
    device_buffer<uint8_t> dcache(static_cast<size_t>(pages * stride));
    device::k_cache_write_problem w;
    w.k = {dxb.data(), true};
    w.num_tokens = blocks;
    w.head_dim = 32;
    w.slot_mapping = dslots.data();
    w.cache = dcache.data();
    w.num_pages = pages;
    w.page_stride = stride;
    w.block_size = bs;
    w.rule = rule;
    gpu_check(device::launch_k_cache_write(w, cache_layout::linear, nullptr, nullptr), "write");
    std::vector<uint8_t> cache(dcache.size());
    const layout::page_shape shape{bs, 32};
    for (int64_t t = 0; t < blocks; ++t)
      layout::write_token<layout::linear>(cache.data() + t / bs * stride, shape,
                                          static_cast<int>(t % bs), want_v.data() + 16 * t,
                                          want_s.data() + t);
    CHECK(dcache.download() == cache);
  }
}

TEST_CASE("GPU k-cache writer is bit-exact, skips -1, flags bad slots", "[gpu][writer]") {
  REQUIRE_GPU();
  const int n = 90, d = GENERATE(128, 32, 96, 512);
  const int offset = GENERATE(0, 1);  // the source aligned for vector loads, and not
  const std::vector<float> drawn = random_rows(static_cast<size_t>(n * d), 9);
  std::vector<uint16_t> xb(drawn.size());
  for (size_t i = 0; i < drawn.size(); ++i) xb[i] = to_bf16(drawn[i]);
  for (const bool bf16 : {false, true}) {
    for (const cache_layout layout : {cache_layout::linear, cache_layout::mfma16, cache_layout::aiter32, cache_layout::aiter16}) {
      for (const int bs : {16, 48, 64}) {  // 48: the divider's non-power-of-two path
        if (!layout::holds(layout, {bs, d})) continue;
        std::vector<float> x(drawn);  // what the writer sees: bf16 widens exactly
        if (bf16)
          for (size_t i = 0; i < x.size(); ++i) x[i] = from_bf16(xb[i]);
        const int64_t pages = 8, stride = bs * (d / 2 + d / 32) + 32;  // 128+ slots for 90 rows
        std::vector<int64_t> slots(n);
        std::vector<int64_t> free_slots(static_cast<size_t>(pages * bs));
        for (int64_t i = 0; i < pages * bs; ++i) free_slots[i] = i;
        std::shuffle(free_slots.begin(), free_slots.end(), std::mt19937(bs));
        for (int i = 0; i < n; ++i) slots[i] = free_slots[i];
        slots[3] = -1;
        slots[7] = pages * bs;  // out of range
        std::vector<uint8_t> cache(static_cast<size_t>(pages * stride), 0xAB);
        device_buffer<uint8_t> dcache(cache);
        device_buffer<float> dx = shifted(x, offset);
        device_buffer<uint16_t> dxb = shifted(xb, offset);
        device_buffer<int64_t> dslots(slots);
        device_buffer<uint32_t> err(1);
        err.fill_bytes(0);
        device::k_cache_write_problem p;
        p.k = {bf16 ? static_cast<const void*>(dxb.data() + offset) : dx.data() + offset, bf16};
        p.num_tokens = n;
        p.slot_mapping = dslots.data();
        p.cache = dcache.data();
        p.num_pages = pages;
        p.page_stride = stride;
        p.block_size = bs;
        p.head_dim = d;
        gpu_check(device::launch_k_cache_write(p, layout, err.data(), nullptr), "write");
        const layout::page_shape shape{bs, d};
        for (int i = 0; i < n; ++i) {
          if (slots[i] < 0 || slots[i] >= pages * bs) continue;
          std::vector<uint8_t> v(d / 2), sc(d / 32);
          format::quantize_row([&](int e) { return x[static_cast<size_t>(i) * d + e]; }, d,
                               v.data(), sc.data(), format::scale_rule::ceil);
          uint8_t* page = cache.data() + slots[i] / bs * stride;
          layout::dispatch(layout, [&](auto l) {
            layout::write_token<decltype(l)>(page, shape, static_cast<int>(slots[i] % bs), v.data(),
                                             sc.data());
          });
        }
        INFO("layout " << int(layout) << " bs " << bs << " bf16 " << bf16 << " d " << d
                       << " offset " << offset);
        CHECK(dcache.download() == cache);
        CHECK(err.download()[0] == device_error_slot_mapping);
      }
    }
  }
}

}  // namespace
