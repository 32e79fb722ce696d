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

// The cache rules `index` applies (block_size, head_dim, page_stride, alignment), checked by the
// library itself: an empty K-cache write runs exactly the cache checks and writes nothing.
void check_cache(const fs::path& case_dir, const problem& p, npy_array& cache) {
  k_cache_write_args empty;
  empty.cache.data = cache.bytes.data();
  empty.cache.num_pages = cache.shape[0];
  empty.cache.page_stride = cache.shape[1];
  empty.cache.block_size = p.block_size;
  empty.cache.head_dim = p.head_dim;
  empty.cache.layout = p.layout;
  const status s = write_k_cache(empty, execution{});
  if (!s.ok()) throw input_error(case_dir.string() + ": " + s.message());
}

}  // namespace

void run_convert_cache(const fs::path& case_dir, cache_layout to, const fs::path& out_dir) {
  const fs::path json = case_dir / "problem.json", cache = case_dir / "kv_cache.npy";
  const problem p = read_problem(json);
  nlohmann::json doc = read_problem_json(json);
  npy_array in = read_npy(cache, "uint8", {{"NB"}, {"page_stride"}});
  const int64_t pages = in.shape[0], stride = in.shape[1];
  check_cache(case_dir, p, in);
  problem converted = p;  // the target order has its own page rules (the aiter orders' runs)
  converted.layout = to;
  check_cache(case_dir, converted, in);

  staged_output staged(out_dir);
  std::vector<uint8_t> out(in.bytes.size());
  layout::convert_pages(in.data<uint8_t>(), out.data(), pages, stride,
                        layout::page_shape{p.block_size, p.head_dim}, p.layout, to);
  write_npy(staged.dir() / "kv_cache.npy", {pages, stride}, out.data());

  doc["layout"] = layout_name(to);  // rewritten as plain JSON: comments go, keys come out sorted
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
