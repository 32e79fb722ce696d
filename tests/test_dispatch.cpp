// platform::with_constant, the ladder every launcher turns run-time values into template
// arguments with: the first candidate that fits, the last one or the fallback where none does,
// and f's result passed through.
#include <type_traits>

#include "catch.hpp"
#include "mxi/platform/dispatch.hpp"

using mxi::platform::with_constant;

namespace {

/// The head count the logits kernels are built for (device::detail::with_heads' ladder).
int padded_heads(int heads) {
  return with_constant<32, 64, 128>([&](int h) { return heads <= h; },
                                    [](auto h) { return decltype(h)::value; });
}

/// An exact match among 1, 2 and 3, -1 for any other value.
int exact_rows(int rows) {
  return with_constant<1, 2, 3>([&](int r) { return r == rows; },
                                [](auto r) { return decltype(r)::value; }, [] { return -1; });
}

enum class kind { a, b, c };

}  // namespace

TEST_CASE("with_constant takes the first candidate that fits, else the last") {
  CHECK(padded_heads(1) == 32);
  CHECK(padded_heads(32) == 32);
  CHECK(padded_heads(33) == 64);
  CHECK(padded_heads(64) == 64);
  CHECK(padded_heads(65) == 128);
  CHECK(padded_heads(1000) == 128);  // the last candidate is not asked
}

TEST_CASE("with_constant with a fallback returns it where no candidate fits") {
  CHECK(exact_rows(1) == 1);
  CHECK(exact_rows(2) == 2);
  CHECK(exact_rows(3) == 3);
  CHECK(exact_rows(0) == -1);
  CHECK(exact_rows(4) == -1);
}

TEST_CASE("with_constant passes the candidate's own type and calls f once") {
  int calls = 0;
  const kind got = with_constant<kind::b, kind::c, kind::a>(
      [](kind k) { return k == kind::c; },
      [&](auto k) {
        static_assert(std::is_same_v<typename decltype(k)::value_type, kind>, "enum constants");
        ++calls;
        return decltype(k)::value;
      });
  CHECK(got == kind::c);
  CHECK(calls == 1);
  int void_calls = 0;
  with_constant<1, 2>([](int) { return false; }, [&](auto) { ++void_calls; });  // void f
  CHECK(void_calls == 1);
}
