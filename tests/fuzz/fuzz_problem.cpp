// problem.json parsing on arbitrary file bytes: read_problem returns or throws input_error, and
// nothing else escapes. An accepted problem written back as JSON reads back equal.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "fuzz_support.hpp"
#include "npy.hpp"
#include "problem.hpp"

namespace {

using mxi::tools::problem;

const char* name_of(mxi::tools::index_mode m) {
  return m == mxi::tools::index_mode::single ? "single" : "consume";
}
const char* name_of(mxi::index_space s) {
  return s == mxi::index_space::position ? "position" : "cache_slot";
}
const char* name_of(mxi::output_order o) {
  return o == mxi::output_order::position ? "position" : "score";
}

nlohmann::json to_json(const problem& p) {
  return {{"num_heads", p.num_heads},
          {"head_dim", p.head_dim},
          {"block_size", p.block_size},
          {"topk", p.topk},
          {"compress_ratio", p.compress_ratio},
          {"max_model_len", p.max_model_len},
          {"layout", mxi::tools::layout_name(p.layout)},
          {"mode", name_of(p.mode)},
          {"index_space", name_of(p.space)},
          {"order", name_of(p.order)},
          {"candidate_block_size", p.candidate_block_size},
          {"num_candidate_blocks", p.num_candidate_blocks}};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto file = mxi::fuzz::write_scratch("problem.json", data, size);
  problem p;
  try {
    p = mxi::tools::read_problem(file);
  } catch (const mxi::tools::input_error&) {
    return 0;
  }
  FUZZ_REQUIRE(mxi::tools::read_problem_json(file).is_object());
  const std::string text = to_json(p).dump();
  const auto copy = mxi::fuzz::write_scratch("copy.json", text.data(), text.size());
  const problem q = mxi::tools::read_problem(copy);
  FUZZ_REQUIRE(to_json(q) == to_json(p));
  return 0;
}
