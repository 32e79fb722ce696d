// One indexer call read from CASE_DIR: problem.json plus the NPY tensors, each checked for dtype
// and shape against the problem and against each other (values are left to mxi::validate()).
#pragma once

#include <filesystem>

#include "npy.hpp"
#include "problem.hpp"

namespace mxi::tools {

struct index_case {
  problem prob;
  npy_array q_values, q_scales, weights;
  npy_array kv_cache;
  npy_array block_table, seq_lens, query_start_loc;
  npy_array candidate_blocks;  ///< mode "consume" only

  int64_t num_tokens() const { return q_values.shape[0]; }
  /// Candidate blocks a row: read (consume) or published (single); 0 when neither.
  int num_candidate_blocks() const;

  query_view queries() const;
  cache_view cache() const;
  request_view requests() const;
};

/// Throws input_error naming the file (or problem.json key) that is missing or malformed.
index_case load_index_case(const std::filesystem::path& case_dir);

}  // namespace mxi::tools
