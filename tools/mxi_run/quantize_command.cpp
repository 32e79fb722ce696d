#include <limits>
#include <vector>

#include "commands.hpp"
#include "npy.hpp"
#include "staged_output.hpp"

namespace mxi::tools {

void run_quantize(const std::filesystem::path& input, const std::filesystem::path& out_dir,
                  format::scale_rule rule) {
  const npy_array in = read_npy(input, "float32", {{"N"}, {"D"}});
  const int64_t n = in.shape[0], d = in.shape[1];
  if (d % format::block_elems != 0 || d == 0 || d > std::numeric_limits<int>::max())
    throw input_error(input.string() + ": D = " + std::to_string(d) +
                      " must be a positive multiple of 32 (and fit an int)");
  staged_output staged(out_dir);
  std::vector<uint8_t> values(static_cast<size_t>(n * d / 2));
  std::vector<uint8_t> scales(static_cast<size_t>(n * d / format::block_elems));
  const float* x = in.data<float>();
  for (int64_t i = 0; i < n; ++i) {
    format::quantize_row([&](int j) { return x[i * d + j]; }, static_cast<int>(d),
                         values.data() + i * d / 2, scales.data() + i * d / format::block_elems,
                         rule);
  }
  write_npy(staged.dir() / "values.npy", {n, d / 2}, values.data());
  write_npy(staged.dir() / "scales.npy", {n, d / format::block_elems}, scales.data());
  staged.commit();
}

}  // namespace mxi::tools
