#include "row_check.hpp"

#include <algorithm>
#include <vector>

#include "check.hpp"

namespace mxi::tools {

std::string check_row(const testing::host_workload& w, int64_t t, const int32_t* tested_row) {
  const int k = w.spec.topk, h_count = w.spec.num_heads, d = w.spec.head_dim;
  const int r = w.request_of(t);
  const int32_t n = w.query_start_loc[r + 1] - w.query_start_loc[r];
  const int32_t seq_len = w.seq_lens[r] - n + static_cast<int32_t>(t - w.query_start_loc[r]) + 1;
  const int32_t starts[2] = {0, 1};

  // The one-row sub-problem, pointing into the workload's buffers.
  indexer_args sub = w.indexer();
  sub.queries.values = w.q_values.data() + t * h_count * d / 2;
  sub.queries.scales = w.q_scales.data() + t * h_count * d / format::block_elems;
  sub.queries.weights = w.weights.data() + t * h_count;
  sub.queries.num_tokens = 1;
  sub.requests.query_start_loc = starts;
  sub.requests.seq_lens = &seq_len;
  sub.requests.block_table = w.block_table.data() + r * w.max_blocks;
  sub.requests.num_requests = 1;
  sub.max_model_len = std::max<int64_t>(1, w.visible(t));
  std::vector<int32_t> expected(k);
  sub.topk.indices = expected.data();
  execution exec;
  exec.where = backend::reference;
  const status s = run_indexer(sub, exec);
  if (!s.ok()) return "reference failed: " + s.message();
  if (std::equal(expected.begin(), expected.end(), tested_row)) return "";
  // A different choice is a mismatch unless the exact scores make it a near tie.
  return testing::check_topk_row(w, testing::exact_row(w, t), tested_row, w.indexer().topk);
}

}  // namespace mxi::tools
