// Run-time values to compile-time ones: the one ladder every launcher uses to turn a head count, a
// thread count, a target or a wave size into the template argument its kernel is built for. Host
// code (the launchers'); device code picks among instantiations with if constexpr.
#pragma once

#include <type_traits>

namespace mxi::platform {

namespace detail {

template <bool LastFits, auto C, auto... Rest, class Fits, class F, class Otherwise>
decltype(auto) with_constant_from(Fits& fits, F& f, Otherwise& otherwise) {
  if constexpr (sizeof...(Rest) == 0 && LastFits) {
    return f(std::integral_constant<decltype(C), C>{});
  } else {
    if (fits(C)) return f(std::integral_constant<decltype(C), C>{});
    if constexpr (sizeof...(Rest) > 0)
      return with_constant_from<LastFits, Rest...>(fits, f, otherwise);
    else
      return otherwise();
  }
}

struct no_fallback {
  void operator()() const {}
};

}  // namespace detail

/// Calls f(std::integral_constant<T, C>{}) for the first C of Candidates (values of one type T,
/// tried in order) that fits(C) accepts, and returns what f returns; where none does, returns
/// otherwise(). Every f(C) and otherwise() return the same type.
///   with_constant<1, 2, 3>([&](int r) { return r == rows; }, launch, [] { return invalid_value; })
template <auto... Candidates, class Fits, class F, class Otherwise>
decltype(auto) with_constant(Fits&& fits, F&& f, Otherwise&& otherwise) {
  static_assert(sizeof...(Candidates) > 0, "at least one candidate");
  return detail::with_constant_from<false, Candidates...>(fits, f, otherwise);
}

/// The same with the last candidate taken where no earlier one fits (fits is not asked of it):
///   with_constant<32, 64, 128>([&](int h) { return heads <= h; }, f)  // 128 above 64
template <auto... Candidates, class Fits, class F>
decltype(auto) with_constant(Fits&& fits, F&& f) {
  static_assert(sizeof...(Candidates) > 0, "at least one candidate");
  detail::no_fallback none;
  return detail::with_constant_from<true, Candidates...>(fits, f, none);
}

}  // namespace mxi::platform
