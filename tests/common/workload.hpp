// Seeded generators of realistic indexer problems in host memory, shared by the tests, the
// benchmarks and the main-job workload, so every backend is checked on the same cases.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "mxi/layout/convert.hpp"
#include "mxi/mxi.hpp"

namespace mxi::testing {

/// What keys look like.
enum class key_pattern : uint8_t {
  gaussian,      ///< independent N(0, 1) entries, quantized
  all_equal,     ///< every cached token holds the same row: every score ties
  few_distinct,  ///< rows drawn from 4 distinct rows: many exact ties
};

struct workload_spec {
  int num_heads = 64;
  int head_dim = 128;
  int block_size = 64;
  int topk = 2048;
  int compress_ratio = 1;
  cache_layout layout = cache_layout::linear;
  std::vector<int32_t> query_lens;  ///< n_r per request
  std::vector<int32_t> seq_lens;    ///< per request, >= n_r
  int64_t page_padding = 0;         ///< extra bytes a page (a multiple of 16)
  int64_t max_model_len = 0;        ///< 0: the largest visible length in the batch (at least 1)
  int extra_pages = 3;              ///< unused pages in the cache, so ids are not dense
  key_pattern keys = key_pattern::gaussian;
  format::scale_rule rule = format::scale_rule::ceil;
  uint64_t seed = 1;
};

/// Decode: `batch` requests, context lengths uniform in [0.7, 1.3] x `context`, `next_n` tokens each.
workload_spec decode_spec(int batch, int context, int next_n, uint64_t seed = 1);
/// Ragged prefill: one request per entry, each whole sequence is its query tokens.
workload_spec prefill_spec(std::vector<int32_t> lengths, uint64_t seed = 1);

/// A generated problem: host buffers plus the argument structs that point into them.
struct host_workload {
  workload_spec spec;
  int64_t num_tokens = 0;
  int64_t num_pages = 0;
  int64_t page_stride = 0;
  int64_t max_blocks = 0;
  int64_t max_model_len = 0;
  std::vector<uint8_t> q_values, q_scales;
  std::vector<float> weights;
  std::vector<uint8_t> kv_cache;
  std::vector<int32_t> block_table, seq_lens, query_start_loc;

  /// Visible (compressed) length of token t's row.
  int64_t visible(int64_t t) const;
  /// Request owning token t.
  int request_of(int64_t t) const;

  /// Views of the buffers above (host memory); outputs are left null for the caller to set.
  query_view queries() const;
  cache_view cache() const;
  request_view requests() const;
  indexer_args indexer() const;
  candidate_indexer_args candidate_indexer() const;
};

host_workload make_workload(const workload_spec& spec);

/// Small shapes (H = 16, D = 64, BS = 16) that keep the float64 checks of a test quick.
inline workload_spec small_shapes(workload_spec s) {
  s.num_heads = 16;
  s.head_dim = 64;
  s.block_size = 16;
  return s;
}

}  // namespace mxi::testing
