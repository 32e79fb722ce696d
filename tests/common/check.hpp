// Checking indexer results against exact float64 scores, for every backend (reference, threaded
// CPU, GPU). Independent of the library's own code paths: it decodes the workload's bytes with
// format:: and layout:: only, and states the acceptance rules of docs/semantics.md (entry points
// A and B) directly.
//
// A result row is accepted iff
//   - its shape is right: the chosen positions are distinct, come from the row's candidate set,
//     -1 fills the rest exactly when the set has at most k positions (then every position is
//     chosen), and the order is the requested one;
//   - its choice is optimal within tolerance: for every chosen a and unchosen b,
//     s[a] + tol[a] >= s[b] - tol[b] with tol = rel_tol * scale (scale: sum over heads of
//     |w * relu(dot)|), NaN below everything and infinities compared exactly;
//   - exact ties are broken by position: positions whose keys are the same bytes (so any
//     correct backend gives them bitwise equal scores), and equal non-finite scores.
// Checkers return "" when the row is accepted, else what is wrong (for Catch2's INFO / CHECK).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "workload.hpp"

namespace mxi::testing {

/// Exact scores of one query token over a set of positions.
struct row_truth {
  int64_t token = 0;
  int request = 0;
  int64_t visible = 0;
  std::vector<int64_t> positions;  ///< ascending: what the row may choose from
  std::vector<double> score;       ///< exact score of each position (NaN and +-inf kept)
  std::vector<double> scale;       ///< sum over heads of |w * relu(dot)|: the tolerance scale
  std::vector<uint64_t> key_hash;  ///< hash of each position's key bytes (equal bytes, equal hash)
};

/// Truth of token t over all its visible positions (entry A).
row_truth exact_row(const host_workload& w, int64_t t);

/// Truth of token t over the visible positions of a candidate row (entry B): ids < 0, repeated,
/// or whose block holds no visible position are skipped.
row_truth exact_candidate_row(const host_workload& w, int64_t t, const int32_t* ids, int num_blocks,
                              int block_size);

/// The cache slot of position `pos` of request r (the workload's block table).
int64_t cache_slot(const host_workload& w, int request, int64_t pos);

/// Checks one top-k row (`row` holds out.k entries) against `truth`, in out.space and out.order.
std::string check_topk_row(const host_workload& w, const row_truth& truth, const int32_t* row,
                           const topk_output& out, double rel_tol = 1e-5);

/// Checks one published candidate row (num_blocks entries) against the truth of all visible
/// positions (exact_row).
std::string check_candidate_row(const row_truth& truth, const int32_t* row, int num_blocks,
                                int block_size, double rel_tol = 1e-5);

/// Checks one logits row over [0, visible): each within rel_tol * scale of the exact score (NaN
/// and infinities exactly); and -inf on [visible, max_model_len) when `clean`.
std::string check_logits_row(const row_truth& truth, const float* row, int64_t max_model_len,
                             bool clean, double rel_tol = 1e-5);

/// Whole-batch forms: every row of an entry-A run (top-k; candidates and logits when given), or
/// of an entry-B run. Rows whose request data is broken are not expected here.
std::string check_indexer(const host_workload& w, const indexer_args& args, double rel_tol = 1e-5);
std::string check_candidate_indexer(const host_workload& w, const candidate_indexer_args& args,
                                    double rel_tol = 1e-5);

}  // namespace mxi::testing
