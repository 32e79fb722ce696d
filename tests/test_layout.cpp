// Page addressing of the cache layouts (include/mxi/layout/) and the conversion between them.
#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "catch.hpp"
#include "mxi/arch/key_tile.hpp"
#include "mxi/layout/convert.hpp"

namespace layout = mxi::layout;
using mxi::cache_layout;

namespace {

const int head_dims[] = {32, 64, 128, 256};

// Every page size the contract allows: 16 .. 1024 in steps of 16.
std::vector<int> page_sizes() {
  std::vector<int> v;
  for (int bs = 16; bs <= 1024; bs += 16) v.push_back(bs);
  return v;
}

// How often each byte of a page's data is addressed by a token's values or scales.
template <class Layout>
std::vector<int> hit_counts(layout::page_shape s) {
  std::vector<int> hits(static_cast<size_t>(s.data_bytes()), 0);
  for (int t = 0; t < s.block_size; ++t) {
    for (int c = 0; c < s.chunks(); ++c) {
      const int64_t v = Layout::value_offset(s, t, c);
      for (int b = 0; b < mxi::format::block_bytes; ++b)
        if (v + b >= 0 && v + b < s.data_bytes()) ++hits[v + b];
      const int64_t sc = Layout::scale_offset(s, t, c);
      if (sc >= 0 && sc < s.data_bytes()) ++hits[sc];
    }
  }
  return hits;
}

}  // namespace

TEMPLATE_TEST_CASE("Layout addressing is a bijection onto a page's data bytes", "[layout]",
                   layout::linear, layout::mfma16, layout::aiter32, layout::aiter16) {
  for (int d : head_dims) {
    for (int bs : page_sizes()) {
      const layout::page_shape s{bs, d};
      if (!layout::holds(TestType::kind, s)) continue;
      const std::vector<int> hits = hit_counts<TestType>(s);
      int64_t wrong = 0;
      for (int h : hits) wrong += h != 1;
      INFO("D = " << d << ", BS = " << bs);
      CHECK(wrong == 0);
    }
  }
}

TEST_CASE("linear layout: the vLLM/DeepGEMM offsets", "[layout]") {
  const layout::page_shape s{64, 128};
  CHECK(s.bytes_per_token() == 68);
  CHECK(layout::linear::value_offset(s, 0, 0) == 0);
  CHECK(layout::linear::value_offset(s, 5, 3) == 5 * 64 + 3 * 16);
  CHECK(layout::linear::scale_offset(s, 0, 0) == 64 * 64);
  CHECK(layout::linear::scale_offset(s, 63, 3) == 64 * 64 + 63 * 4 + 3);
}

TEST_CASE("mfma16 layout: lane l of a group reads token l%16 and chunk l/16 at base + 16 l",
          "[layout]") {
  for (int d : head_dims) {
    const layout::page_shape s{256, d};
    const int lanes = 16 * s.chunks();  // 64 for D = 128: one wave64 load covers the group
    for (int g = 0; g < s.block_size / 16; ++g) {
      const int64_t base = layout::mfma16::group_offset(s, 16 * g);
      CHECK(base == static_cast<int64_t>(g) * 16 * s.bytes_per_token());
      for (int l = 0; l < lanes; ++l) {
        INFO("D = " << d << ", group " << g << ", lane " << l);
        CHECK(layout::mfma16::value_offset(s, 16 * g + l % 16, l / 16) == base + 16 * l);
      }
      // The group's scales follow its values, [16 tokens][D/32].
      for (int t = 0; t < 16; ++t)
        for (int c = 0; c < s.chunks(); ++c)
          CHECK(layout::mfma16::scale_offset(s, 16 * g + t, c) ==
                base + 16 * s.value_bytes_per_token() + t * s.chunks() + c);
    }
  }
}

TEST_CASE("Which page shapes each layout holds", "[layout]") {
  for (const cache_layout k : {cache_layout::linear, cache_layout::mfma16})
    for (int d : head_dims)
      for (int bs : page_sizes()) CHECK(layout::holds(k, {bs, d}));
  CHECK(layout::holds(cache_layout::aiter32, {64, 64}));
  CHECK_FALSE(layout::holds(cache_layout::aiter32, {48, 128}));  // half a run
  CHECK_FALSE(layout::holds(cache_layout::aiter32, {64, 32}));   // one scale for two lanes
  CHECK(layout::holds(cache_layout::aiter16, {48, 128}));
  CHECK_FALSE(layout::holds(cache_layout::aiter16, {64, 64}));
  CHECK(std::string(layout::name(cache_layout::aiter16)) == "aiter16");
}

// The order vLLM writes on ROCm for aiter (D = 128, page of 64): runs of 32 tokens, values
// [4 chunks][32 tokens][16 B], then every run's scales [2 lanes][32 tokens][2].
TEST_CASE("aiter32 layout: runs of 32, chunk-major values, scales by lane at the page's end",
          "[layout]") {
  const layout::page_shape s{64, 128};
  using L = layout::aiter32;
  CHECK(L::value_offset(s, 0, 0) == 0);
  CHECK(L::value_offset(s, 1, 0) == 16);
  CHECK(L::value_offset(s, 0, 1) == 32 * 16);
  CHECK(L::value_offset(s, 31, 3) == (3 * 32 + 31) * 16);
  CHECK(L::value_offset(s, 32, 0) == 32 * 64);  // run 1 after run 0's 2 KiB
  CHECK(L::value_offset(s, 45, 2) == 32 * 64 + (2 * 32 + 13) * 16);
  const int64_t scales = 64 * 64;
  CHECK(L::scale_offset(s, 0, 0) == scales);
  CHECK(L::scale_offset(s, 0, 2) == scales + 1);        // chunk 2: lane 0, second byte
  CHECK(L::scale_offset(s, 0, 1) == scales + 32 * 2);   // chunk 1: lane 1
  CHECK(L::scale_offset(s, 5, 3) == scales + 32 * 2 + 5 * 2 + 1);
  CHECK(L::scale_offset(s, 33, 0) == scales + 32 * 4 + 2);  // run 1's scales after run 0's 128 B
  CHECK(L::scale_offset(s, 63, 3) == s.data_bytes() - 1);
}

TEST_CASE("aiter16 layout: runs of 16, scales [4 lanes][16 tokens][D/128]", "[layout]") {
  using L = layout::aiter16;
  const layout::page_shape s{32, 128};
  CHECK(L::value_offset(s, 17, 1) == 16 * 64 + (16 + 1) * 16);
  const int64_t scales = 32 * 64;
  for (int c = 0; c < 4; ++c) CHECK(L::scale_offset(s, 3, c) == scales + c * 16 + 3);
  CHECK(L::scale_offset(s, 20, 2) == scales + 64 + 2 * 16 + 4);
  const layout::page_shape wide{16, 256};  // two bytes a lane
  CHECK(L::scale_offset(wide, 3, 5) == 16 * 128 + (1 * 16 + 3) * 2 + 1);
}

// copy_tokens of every layout (the sm90 dense tiles use linear's and mfma16's; the aiter orders
// have no page tiles, but their runs copy the same way): each token of a run-aligned range lands
// where the destination page addresses it, from where the source page does.
TEMPLATE_TEST_CASE("copy_tokens moves whole runs to the same addresses", "[layout]", layout::linear,
                   layout::mfma16, layout::aiter32, layout::aiter16) {
  using L = TestType;
  const int run = L::block_size_multiple;
  for (const int bs : {run * 2, run * 4, 128}) {
    const layout::page_shape src{bs, 128}, dst{64, 128};
    for (int from = 0; from < bs; from += run)
      for (int to = 0; to + run <= 64; to += run) {
        const int count = std::min({bs - from, 64 - to, run + 1});
        std::vector<int64_t> source(static_cast<size_t>(dst.data_bytes()), -1);
        int misplaced = 0;
        L::copy_tokens(dst, src, to, from, count, [&](int64_t at, int64_t off, int64_t bytes) {
          misplaced += at % 16 != 0 || off % 16 != 0 || bytes % 16 != 0 ||
                       at + bytes > dst.data_bytes() || off + bytes > src.data_bytes();
          for (int64_t b = 0; b < bytes && at + b < dst.data_bytes(); ++b) source[at + b] = off + b;
        });
        int wrong = 0;
        for (int t = 0; t < count; ++t)
          for (int c = 0; c < 4; ++c) {
            for (int b = 0; b < 16; ++b)
              wrong += source[L::value_offset(dst, to + t, c) + b] != L::value_offset(src, from + t, c) + b;
            wrong += source[L::scale_offset(dst, to + t, c)] != L::scale_offset(src, from + t, c);
          }
        INFO("BS " << bs << " from " << from << " to " << to);
        CHECK(misplaced == 0);
        CHECK(wrong == 0);
      }
  }
}

TEST_CASE("The key-tile loader's page tiles exist only where a key's scales are one word", "[layout]") {
  STATIC_REQUIRE(mxi::arch::has_page_tile<layout::linear>);
  STATIC_REQUIRE(mxi::arch::has_page_tile<layout::mfma16>);
  STATIC_REQUIRE_FALSE(mxi::arch::has_page_tile<layout::aiter32>);
  STATIC_REQUIRE_FALSE(mxi::arch::has_page_tile<layout::aiter16>);
}

TEST_CASE("Converting between any two layouts and back is the identity on every byte", "[layout]") {
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<int> byte(0, 255);
  const cache_layout all[] = {cache_layout::linear, cache_layout::mfma16, cache_layout::aiter32,
                              cache_layout::aiter16};
  for (int d : {64, 128, 256})
    for (int bs : {32, 64, 96, 1024}) {
      const layout::page_shape s{bs, d};
      const int64_t pages = 2, stride = s.data_bytes() + 32;
      std::vector<uint8_t> original(static_cast<size_t>(pages * stride));
      for (uint8_t& b : original) b = static_cast<uint8_t>(byte(rng));
      for (const cache_layout from : all)
        for (const cache_layout to : all) {
          if (from == to || !layout::holds(from, s) || !layout::holds(to, s)) continue;
          std::vector<uint8_t> there(original.size()), back(original.size());
          layout::convert_pages(original.data(), there.data(), pages, stride, s, from, to);
          layout::convert_pages(there.data(), back.data(), pages, stride, s, to, from);
          INFO("D " << d << " BS " << bs << " " << layout::name(from) << " -> " << layout::name(to));
          CHECK(back == original);
          CHECK(there != original);
        }
    }
}

TEST_CASE("Converting linear -> mfma16 -> linear is the identity on every byte", "[layout]") {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int d : head_dims) {
    for (int bs : page_sizes()) {
      const layout::page_shape s{bs, d};
      const int64_t pages = 2, stride = s.data_bytes() + (bs % 64 == 0 ? 48 : 0);  // some padding
      std::vector<uint8_t> linear(static_cast<size_t>(pages * stride));
      for (uint8_t& b : linear) b = static_cast<uint8_t>(byte(rng));
      std::vector<uint8_t> mfma(linear.size()), back(linear.size());
      layout::convert_pages(linear.data(), mfma.data(), pages, stride, s, cache_layout::linear,
                            cache_layout::mfma16);
      layout::convert_pages(mfma.data(), back.data(), pages, stride, s, cache_layout::mfma16,
                            cache_layout::linear);
      INFO("D = " << d << ", BS = " << bs);
      REQUIRE(back == linear);
      // Each token reads back the same through either layout's addressing.
      uint8_t v1[128], s1[8], v2[128], s2[8];
      for (int64_t p = 0; p < pages; ++p) {
        for (int t = 0; t < bs; t += 7) {
          layout::read_token<layout::linear>(linear.data() + p * stride, s, t, v1, s1);
          layout::read_token<layout::mfma16>(mfma.data() + p * stride, s, t, v2, s2);
          CHECK(std::equal(v1, v1 + d / 2, v2));
          CHECK(std::equal(s1, s1 + d / 32, s2));
        }
      }
    }
  }
}

TEST_CASE("Offsets are 64-bit: caches beyond 4 GiB", "[layout]") {
  static_assert(std::is_same_v<decltype(layout::page_offset(int32_t{1}, int64_t{1})), int64_t>);
  const layout::page_shape s{1024, 256};  // 136 KiB a page
  const int32_t page = 2'000'000;         // a block-table id: int32
  const int64_t stride = s.data_bytes() + 16;
  const int64_t expected = 2'000'000LL * (1024LL * 136 + 16);
  CHECK(expected > (int64_t{1} << 32));
  CHECK(layout::page_offset(page, stride) == expected);
  // The last byte of the last page, through both layouts.
  CHECK(layout::page_offset(page, stride) + layout::linear::scale_offset(s, 1023, 7) ==
        expected + s.data_bytes() - 1);
  CHECK(layout::page_offset(page, stride) + layout::mfma16::scale_offset(s, 1023, 7) ==
        expected + s.data_bytes() - 1);
}

// The sm90 key-tile loader's copies (arch::dense_tile_copy, one a lane of the staging warp): for
// every page size, tile start and tile length, the copies fill each token's bytes of the tile from
// that token's page, each tile byte at most once, 16-byte aligned and inside tile and page.
TEMPLATE_TEST_CASE("Dense tile copies move every token of a tile once, from its own page", "[layout][tile]",
                   layout::linear, layout::mfma16) {
  using L = TestType;
  namespace arch = mxi::arch;
  const layout::page_shape tile = arch::page_tile<L>::shape;
  for (const int bs : page_sizes()) {
    const layout::page_shape page{bs, arch::key_tile_shape::head_dim};
    arch::tile_start stepped = arch::tile_start::of(0, bs);
    for (int k0 = 0; k0 < 6 * (bs > 64 ? bs : 64); k0 += arch::key_tile_shape::keys, stepped.next(bs)) {
      const arch::tile_start at = arch::tile_start::of(k0, bs);
      INFO("BS " << bs << " k0 " << k0);
      REQUIRE(stepped.page == at.page);  // next() steps as a division would
      REQUIRE(stepped.token == at.token);
      for (const int n : {1, 15, 16, 17, 33, 48, 63, 64}) {
        INFO("n " << n);
        // source[tile byte] = page * page bytes + byte in page, -1 where no copy writes; the
        // checks count their failures (one assertion a case keeps the debug build's run short).
        std::vector<int64_t> source(static_cast<size_t>(tile.data_bytes()), -1);
        int misplaced = 0, overlapping = 0, wrong = 0;
        for (int lane = 0; lane < 32; ++lane) {
          const arch::tile_copy c = arch::dense_tile_copy<L>(bs, at, n, lane / 2, lane % 2);
          if (c.bytes == 0) continue;
          misplaced += c.to % 16 != 0 || c.from % 16 != 0 || c.bytes % 16 != 0 ||
                       c.to + c.bytes > tile.data_bytes() || c.from + c.bytes > page.data_bytes();
          for (int64_t b = 0; b < c.bytes && c.to + b < tile.data_bytes(); ++b) {
            overlapping += source[c.to + b] != -1;
            source[c.to + b] = c.page * page.data_bytes() + c.from + b;
          }
        }
        for (int t = 0; t < n; ++t) {
          const int64_t p = (k0 + t) / bs;
          const int token = (k0 + t) % bs;
          for (int chunk = 0; chunk < tile.chunks(); ++chunk) {
            for (int b = 0; b < mxi::format::block_bytes; ++b)
              wrong += source[L::value_offset(tile, t, chunk) + b] !=
                       p * page.data_bytes() + L::value_offset(page, token, chunk) + b;
            wrong += source[L::scale_offset(tile, t, chunk)] != p * page.data_bytes() + L::scale_offset(page, token, chunk);
          }
        }
        CHECK(misplaced == 0);
        CHECK(overlapping == 0);
        REQUIRE(wrong == 0);
      }
    }
  }
}
