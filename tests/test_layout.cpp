// Page addressing of both cache layouts (include/mxi/layout/) and the conversion between them.
#include <cstdint>
#include <random>
#include <type_traits>
#include <vector>

#include "catch.hpp"
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
                   layout::linear, layout::mfma16) {
  for (int d : head_dims) {
    for (int bs : page_sizes()) {
      const layout::page_shape s{bs, d};
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
