#include "index_case.hpp"

namespace mxi::tools {

int index_case::num_candidate_blocks() const {
  if (prob.mode == index_mode::consume) return static_cast<int>(candidate_blocks.shape[1]);
  return prob.num_candidate_blocks;
}

query_view index_case::queries() const {
  query_view q;
  q.values = q_values.data<uint8_t>();
  q.scales = q_scales.data<uint8_t>();
  q.weights = weights.data<float>();
  q.num_tokens = num_tokens();
  q.num_heads = prob.num_heads;
  q.head_dim = prob.head_dim;
  return q;
}

cache_view index_case::cache() const {
  cache_view c;
  c.data = kv_cache.data<uint8_t>();
  c.num_pages = kv_cache.shape[0];
  c.page_stride = kv_cache.shape[1];
  c.block_size = prob.block_size;
  c.head_dim = prob.head_dim;
  c.layout = prob.layout;
  return c;
}

request_view index_case::requests() const {
  request_view r;
  r.query_start_loc = query_start_loc.data<int32_t>();
  r.seq_lens = seq_lens.data<int32_t>();
  r.block_table = block_table.data<int32_t>();
  r.num_requests = static_cast<int>(seq_lens.shape[0]);
  r.block_table_stride = block_table.shape[1];
  return r;
}

index_case load_index_case(const std::filesystem::path& dir) {
  index_case c;
  const auto json = dir / "problem.json";
  c.prob = read_problem(json);
  const problem& p = c.prob;
  // The expected shapes below are built from these; their other rules are mxi::validate()'s.
  if (p.num_heads <= 0) throw input_error(json.string() + ": key 'num_heads' must be positive");
  if (p.head_dim <= 0 || p.head_dim % 32 != 0)
    throw input_error(json.string() + ": key 'head_dim' must be a positive multiple of 32");

  const int64_t h = p.num_heads, d = p.head_dim;
  c.q_values = read_npy(dir / "q_values.npy", "uint8", {{"T"}, {"H", h}, {"D/2", d / 2}});
  const int64_t t = c.num_tokens();
  c.q_scales = read_npy(dir / "q_scales.npy", "uint8", {{"T", t}, {"H", h}, {"D/32", d / 32}});
  c.weights = read_npy(dir / "weights.npy", "float32", {{"T", t}, {"H", h}});
  c.kv_cache = read_npy(dir / "kv_cache.npy", "uint8", {{"NB"}, {"page_stride"}});
  c.block_table = read_npy(dir / "block_table.npy", "int32", {{"R"}, {"max_blocks"}});
  const int64_t r = c.block_table.shape[0];
  c.seq_lens = read_npy(dir / "seq_lens.npy", "int32", {{"R", r}});
  c.query_start_loc = read_npy(dir / "query_start_loc.npy", "int32", {{"R+1", r + 1}});
  if (p.mode == index_mode::consume) {
    const int64_t ncb = p.num_candidate_blocks > 0 ? p.num_candidate_blocks : -1;
    c.candidate_blocks = read_npy(dir / "candidate_blocks.npy", "int32", {{"T", t}, {"NCB", ncb}});
  }
  return c;
}

}  // namespace mxi::tools
