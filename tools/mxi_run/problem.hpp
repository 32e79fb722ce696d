// CASE_DIR/problem.json: the scalar parameters of one indexer call (docs/mxi-run.md lists them).
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "mxi/mxi.hpp"

namespace mxi::tools {

enum class index_mode : uint8_t { single, consume };

struct problem {
  int num_heads = 64;
  int head_dim = 128;
  int block_size = 64;
  int topk = 2048;
  int compress_ratio = 1;
  int64_t max_model_len = 131072;
  cache_layout layout = cache_layout::linear;
  index_mode mode = index_mode::single;
  index_space space = index_space::position;
  output_order order = output_order::position;
  int candidate_block_size = 8;
  int num_candidate_blocks = 0;  ///< "single": > 0 also publishes candidates
};

/// Reads problem.json (comments allowed); throws input_error naming the file and the key on an
/// unknown key, a value of the wrong type, or an unknown enum value. Absent keys keep defaults;
/// ranges are left to mxi::validate().
problem read_problem(const std::filesystem::path& file);

/// The parsed JSON document itself, so a rewrite keeps every key the user wrote.
nlohmann::json read_problem_json(const std::filesystem::path& file);

/// The name problem.json uses for a layout.
const char* layout_name(cache_layout layout);

}  // namespace mxi::tools
