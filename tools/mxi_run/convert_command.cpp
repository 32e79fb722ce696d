#include <fstream>
#include <stdexcept>
#include <vector>

#include "commands.hpp"
#include "mxi/layout/convert.hpp"
#include "npy.hpp"
#include "problem.hpp"
#include "staged_output.hpp"

namespace mxi::tools {
namespace fs = std::filesystem;
namespace {

// The page-shape rules the conversion itself relies on (the rest of the case is not read).
void check_page_shape(const fs::path& json, const fs::path& cache, const problem& p,
                      int64_t page_stride) {
  if (p.block_size < 16 || p.block_size > 1024 || p.block_size % 16 != 0)
    throw input_error(json.string() + ": key 'block_size' must be a multiple of 16 in [16, 1024]");
  if (p.head_dim < 32 || p.head_dim > 1024 || p.head_dim % 32 != 0)
    throw input_error(json.string() + ": key 'head_dim' must be a multiple of 32 in [32, 1024]");
  const int64_t data = layout::page_shape{p.block_size, p.head_dim}.data_bytes();
  if (page_stride < data)
    throw input_error(cache.string() + ": page_stride " + std::to_string(page_stride) +
                      " is below the " + std::to_string(data) + " bytes a page's data needs");
}

}  // namespace

void run_convert_cache(const fs::path& case_dir, cache_layout to, const fs::path& out_dir) {
  const fs::path json = case_dir / "problem.json", cache = case_dir / "kv_cache.npy";
  const problem p = read_problem(json);
  nlohmann::json doc = read_problem_json(json);
  const npy_array in = read_npy(cache, "uint8", {{"NB"}, {"page_stride"}});
  const int64_t pages = in.shape[0], stride = in.shape[1];
  check_page_shape(json, cache, p, stride);

  staged_output staged(out_dir);
  std::vector<uint8_t> out(in.bytes.size());
  layout::convert_pages(in.data<uint8_t>(), out.data(), pages, stride,
                        layout::page_shape{p.block_size, p.head_dim}, p.layout, to);
  write_npy(staged.dir() / "kv_cache.npy", {pages, stride}, out.data());

  doc["layout"] = layout_name(to);
  const fs::path rewritten_json = staged.dir() / "problem.json";
  std::ofstream rewritten(rewritten_json);
  rewritten << doc.dump(2) << '\n';
  rewritten.close();
  if (!rewritten) throw std::runtime_error(rewritten_json.string() + ": write failed");
  for (const auto& entry : fs::directory_iterator(case_dir)) {
    const auto name = entry.path().filename();
    if (name != "problem.json" && name != "kv_cache.npy")
      fs::copy(entry.path(), staged.dir() / name, fs::copy_options::recursive);
  }
  staged.commit();
}

}  // namespace mxi::tools
