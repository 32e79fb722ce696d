// A small batch as an engine holds it before mxi: float keys for every cached position, float
// queries and head weights, and the page bookkeeping of two requests. Both README examples
// (indexer_cpu.cpp, indexer_gpu.cpp) start from it.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "mxi/mxi.hpp"

namespace toy {

inline constexpr int heads = 16, head_dim = 128, block_size = 64, k = 8;
inline constexpr int64_t num_pages = 4;
// One token takes head_dim/2 packed bytes plus head_dim/32 scale bytes (68 for 128).
inline constexpr int64_t page_stride = block_size * (head_dim / 2 + head_dim / 32);
inline constexpr int64_t max_model_len = num_pages * block_size;

struct batch {
  // Request 0 decodes one token after 99 cached ones, request 1 checks 3 draft tokens, request 2
  // is a 5-token prompt whose last token sees fewer positions than k.
  std::vector<int32_t> query_start_loc = {0, 1, 4, 5};  // [R + 1]
  std::vector<int32_t> seq_lens = {100, 40, 5};         // [R], query tokens included
  std::vector<int32_t> block_table = {2, 0,    // request 0: pages of positions 0-63, 64-127
                                      3, -1,   // -1: a column past a request's positions
                                      1, -1};  //     is never read
  int num_requests = 3;
  int64_t block_table_stride = 2;
  int64_t num_tokens = 5;  // T

  std::vector<float> keys;            // [positions][head_dim]: every position of every request
  std::vector<int64_t> slot_mapping;  // [positions]: page * block_size + offset in the page
  std::vector<float> queries;         // [T][heads][head_dim]
  std::vector<float> weights;         // [T][heads]
};

/// Smooth pseudo-random values, the same on every machine.
inline float wave(int64_t i, double f) { return static_cast<float>(std::sin(0.37 * i * f + f)); }

inline batch make_batch() {
  batch b;
  for (int r = 0; r < b.num_requests; ++r)
    for (int64_t pos = 0; pos < b.seq_lens[r]; ++pos) {
      const int64_t page = b.block_table[r * b.block_table_stride + pos / block_size];
      b.slot_mapping.push_back(page * block_size + pos % block_size);
      for (int d = 0; d < head_dim; ++d) b.keys.push_back(wave(pos * head_dim + d, 1.0 + r));
    }
  for (int64_t i = 0; i < b.num_tokens * heads * head_dim; ++i) b.queries.push_back(wave(i, 0.3));
  for (int64_t i = 0; i < b.num_tokens * heads; ++i) b.weights.push_back(0.1f + 0.05f * (i % 7));
  return b;
}

/// Prints each token's row of top-k positions (-1: fewer than k visible).
inline void print_rows(const std::vector<int32_t>& topk) {
  for (size_t t = 0; t < topk.size() / k; ++t) {
    std::printf("token %zu:", t);
    for (int i = 0; i < k; ++i) std::printf(" %d", topk[t * k + i]);
    std::printf("\n");
  }
}

}  // namespace toy
