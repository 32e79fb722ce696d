// The NPY reader on arbitrary file bytes: it returns an array or throws input_error, nothing else.
// An array it returns is self-consistent, passes its own shape check, fails a wrong one, and
// survives a write/read round trip when its dtype is one mxi writes.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "npy.hpp"

namespace {

using mxi::tools::input_error;
using mxi::tools::npy_array;

size_t element_size(const std::string& dtype) {
  if (dtype == "uint8" || dtype == "int8" || dtype == "bool") return 1;
  if (dtype == "uint16" || dtype == "int16" || dtype == "float16") return 2;
  if (dtype == "uint32" || dtype == "int32" || dtype == "float32") return 4;
  FUZZ_REQUIRE(dtype == "uint64" || dtype == "int64" || dtype == "float64");
  return 8;
}

template <class T>
void round_trip(const npy_array& a) {
  const auto file = mxi::fuzz::scratch_dir() / "round_trip.npy";
  mxi::tools::write_npy(file, a.shape, a.data<T>());
  const npy_array b = mxi::tools::read_npy(file);
  FUZZ_REQUIRE(b.dtype == a.dtype && b.shape == a.shape && b.bytes == a.bytes);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto file = mxi::fuzz::write_scratch("input.npy", data, size);
  npy_array a;
  try {
    a = mxi::tools::read_npy(file);
  } catch (const input_error&) {
    return 0;
  }
  const int64_t n = a.elements();
  FUZZ_REQUIRE(n >= 0);
  FUZZ_REQUIRE(a.bytes.size() == static_cast<uint64_t>(n) * element_size(a.dtype));

  std::vector<mxi::tools::dim> exact;
  for (size_t i = 0; i < a.shape.size(); ++i) exact.push_back({"d", a.shape[i]});
  const npy_array again = mxi::tools::read_npy(file, a.dtype, exact);
  FUZZ_REQUIRE(again.bytes == a.bytes);
  exact.push_back({"extra", 1});  // one rank too many
  bool rejected = false;
  try {
    mxi::tools::read_npy(file, a.dtype, exact);
  } catch (const input_error& e) {
    rejected = std::strstr(e.what(), "shape is") != nullptr;
  }
  FUZZ_REQUIRE(rejected);

  if (a.dtype == "uint8") round_trip<uint8_t>(a);
  if (a.dtype == "int32") round_trip<int32_t>(a);
  if (a.dtype == "int64") round_trip<int64_t>(a);
  if (a.dtype == "float32") round_trip<float>(a);
  return 0;
}
