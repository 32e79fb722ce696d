// The threaded fp32 CPU backend. Each row's scores come from tiles of 16 keys x all heads, with
// each 32-element block dot an exact int16 sum scaled by two exact powers of two, and blocks and
// heads summed in fp32 in a fixed order: a position's score never depends on the thread count or
// on how the work was split. Selection is std::nth_element on integer rank keys.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <utility>
#include <vector>

#include "backend.hpp"
#include "cpu/output.hpp"
#include "cpu/quantize.hpp"
#include "cpu/rank_key.hpp"
#include "cpu/rows.hpp"
#include "cpu/tile.hpp"
#include "mxi/format/relu.hpp"

namespace mxi::detail::cpu {
namespace {

/// Heads handled together, so each decoded key element is loaded once for several heads.
constexpr int head_group = 8;

// One lane per key of a tile (GCC vector extensions: AVX2 registers in the avx2 clone, pairs of
// SSE2 registers otherwise).
typedef int16_t i16_lanes __attribute__((vector_size(2 * tile_keys)));
typedef float f32_lanes __attribute__((vector_size(4 * tile_keys)));

/// scores[l] = sum_h w[h] * relu(q[h] . k[l]) for the tile's keys. Built for AVX2 too where the
/// machine has it; both versions do the same operations in the same order (no FMA contraction in
/// ISO C++ mode), so results do not depend on the machine.
__attribute__((target_clones("avx2", "default")))
void score_tile(const int16_t* q_values, const float* q_scales, const float* weights,
                const int16_t* k_values, const float* k_scales, int heads, int dim,
                float* scores) {
  const int chunks = dim / format::block_elems;
  f32_lanes total = {};
  for (int h = 0; h < heads; h += head_group) {
    f32_lanes dot[head_group] = {};
    for (int c = 0; c < chunks; ++c) {
      // Exact: |sum| <= 32 * 12 * 12 = 4608 fits in int16.
      i16_lanes acc[head_group] = {};
      for (int e = 0; e < format::block_elems; ++e) {
        const int i = c * format::block_elems + e;
        i16_lanes k;
        std::memcpy(&k, k_values + i * tile_keys, sizeof(k));
        for (int j = 0; j < head_group; ++j) acc[j] += q_values[(h + j) * dim + i] * k;
      }
      f32_lanes ks;
      std::memcpy(&ks, k_scales + c * tile_keys, sizeof(ks));
      for (int j = 0; j < head_group; ++j)
        dot[j] += __builtin_convertvector(acc[j], f32_lanes) * q_scales[(h + j) * chunks + c] * ks;
    }
    for (int j = 0; j < head_group; ++j) total += weights[h + j] * format::relu(dot[j]);
  }
  std::memcpy(scores, &total, sizeof(total));
}

/// A row to compute: what it reads and where its scores go.
struct row_work {
  int64_t token = 0;
  row_plan plan;
  const int64_t* positions = nullptr;  ///< candidate positions (entry B); null: 0 .. count-1
  int64_t count = 0;                   ///< positions scored
  bool scored = false;                 ///< false: the output needs no scores
  float* scores = nullptr;             ///< [count]
};

/// Positions of consecutive rows scored together; bounds the score buffer.
constexpr int64_t group_positions = int64_t{1} << 22;
/// Positions one task scores (a multiple of tile_keys, so A's tiles never straddle a page).
constexpr int64_t task_positions = 512;

int thread_count(const execution& exec) {
  return exec.num_threads > 0 ? exec.num_threads : omp_get_max_threads();
}

/// Scores positions [begin, end) of a row into row.scores.
void score_range(const query_view& q, const cache_view& cache, const request_view& req,
                 const row_work& row, const query_operand& query, int64_t begin, int64_t end) {
  const layout::page_shape shape{cache.block_size, cache.head_dim};
  key_operand keys;
  float tile[tile_keys];
  layout::dispatch(cache.layout, [&](auto L) {
    for (int64_t s = begin; s < end; s += tile_keys) {
      const int n = static_cast<int>(std::min<int64_t>(tile_keys, end - s));
      keys.load<decltype(L)>(shape, n, [&](int i) {
        const int64_t pos = row.positions ? row.positions[s + i] : s + i;
        const int64_t page =
            page_of_column(req, cache.num_pages, row.plan.request, pos / cache.block_size);
        return std::make_pair(cache.data + layout::page_offset(page, cache.page_stride),
                              static_cast<int>(pos % cache.block_size));
      });
      score_tile(query.values.data(), query.scales.data(), query.weights, keys.values.data(),
                 keys.scales.data(), q.num_heads, q.head_dim, tile);
      std::copy(tile, tile + n, row.scores + s);
    }
  });
}

/// Scores every row of a group that needs scores, in tasks of task_positions spread over threads.
void score_rows(const query_view& q, const cache_view& cache, const request_view& req,
                std::vector<row_work>& rows, int threads) {
  std::vector<std::pair<size_t, int64_t>> tasks;  // (row, first position)
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i].scored)
      for (int64_t s = 0; s < rows[i].count; s += task_positions) tasks.emplace_back(i, s);
  std::vector<query_operand> queries(rows.size());
#pragma omp parallel for schedule(dynamic) num_threads(threads)
  for (int64_t i = 0; i < static_cast<int64_t>(rows.size()); ++i)
    if (rows[i].scored) queries[i].load(q, rows[i].token);
#pragma omp parallel for schedule(dynamic) num_threads(threads)
  for (int64_t i = 0; i < static_cast<int64_t>(tasks.size()); ++i) {
    const row_work& row = rows[tasks[i].first];
    const int64_t begin = tasks[i].second;
    score_range(q, cache, req, row, queries[tasks[i].first], begin,
                std::min(begin + task_positions, row.count));
  }
}

/// The positions row holds, in the requested order: all when at most k, else the best k.
void select(const row_work& row, const topk_output& out, std::vector<uint64_t>& keys,
            std::vector<int64_t>& chosen) {
  auto position = [&](int64_t i) { return row.positions ? row.positions[i] : i; };
  chosen.clear();
  if (row.count <= out.k && out.order == output_order::position) {
    for (int64_t i = 0; i < row.count; ++i) chosen.push_back(position(i));
    return;
  }
  keys.resize(static_cast<size_t>(row.count));
  for (int64_t i = 0; i < row.count; ++i) keys[i] = rank_key(row.scores[i], position(i));
  const auto last = keys.begin() + std::min<int64_t>(row.count, out.k);
  if (last != keys.end()) std::nth_element(keys.begin(), last, keys.end(), std::greater<uint64_t>());
  if (out.order == output_order::score) std::sort(keys.begin(), last, std::greater<uint64_t>());
  for (auto it = keys.begin(); it != last; ++it) chosen.push_back(rank_index(*it));
  if (out.order == output_order::position) std::sort(chosen.begin(), chosen.end());
}

/// Runs an entry point over the batch in groups of rows: plan, score (in parallel tasks), then
/// select and write (in parallel over rows). `prepare(row, positions)` sets what an unbroken row
/// reads (filling `positions` for entry B). Entry A passes its optional logits and candidate
/// outputs; B passes null.
template <class Args, class Prepare>
uint32_t run_rows(const Args& a, const execution& exec, const logits_output* logits,
                  const candidate_pool_output* pool, Prepare&& prepare) {
  const int threads = thread_count(exec);
  const bool all_scores = logits != nullptr || pool != nullptr;
  const std::vector<row_plan> plans = plan_rows(a);
  std::vector<std::vector<int64_t>> positions;
  std::vector<row_work> rows;
  std::vector<float> scores;
  uint32_t errors = device_error_none;
  for (int64_t first = 0; first < a.queries.num_tokens;) {
    rows.clear();
    int64_t total = 0;
    for (int64_t t = first; t < a.queries.num_tokens && (rows.empty() || total < group_positions);
         ++t) {
      rows.push_back({t, plans[t]});
      total += plans[t].visible;
    }
    first += static_cast<int64_t>(rows.size());
    positions.resize(rows.size());
#pragma omp parallel for schedule(dynamic) num_threads(threads) reduction(| : errors)
    for (int64_t i = 0; i < static_cast<int64_t>(rows.size()); ++i) {
      row_work& row = rows[i];
      if (!row.plan.error) prepare(row, positions[i]);
      errors |= row.plan.error;
      row.scored = !row.plan.error &&
                   (all_scores || row.count > a.topk.k || a.topk.order == output_order::score);
    }
    int64_t needed = 0;
    for (const row_work& row : rows) needed += row.scored ? row.count : 0;
    scores.resize(static_cast<size_t>(needed));
    needed = 0;
    for (row_work& row : rows)
      if (row.scored) row.scores = scores.data() + std::exchange(needed, needed + row.count);
    score_rows(a.queries, a.cache, a.requests, rows, threads);
#pragma omp parallel num_threads(threads)
    {
      std::vector<uint64_t> keys;
      std::vector<int64_t> chosen;
#pragma omp for schedule(dynamic)
      for (int64_t i = 0; i < static_cast<int64_t>(rows.size()); ++i) {
        const row_work& row = rows[i];
        if (row.plan.error) {
          write_failed_row(a.topk, logits, pool, a.max_model_len, row.token);
          continue;
        }
        if (logits) write_logits_row(*logits, row.token, row.scores, row.count, a.max_model_len);
        if (pool) publish_candidates(*pool, row.token, row.scores, row.count, keys);
        select(row, a.topk, keys, chosen);
        write_topk_row(a.topk, row.token, chosen.data(), static_cast<int64_t>(chosen.size()),
                       a.requests, a.cache, row.plan.request);
      }
    }
  }
  return errors;
}

}  // namespace

status run_indexer(const indexer_args& a, const execution& exec) {
  const uint32_t errors =
      run_rows(a, exec, a.logits.data ? &a.logits : nullptr,
               a.candidates.blocks ? &a.candidates : nullptr,
               [&](row_work& row, std::vector<int64_t>&) { row.count = row.plan.visible; });
  report_errors(exec, errors);
  return status();
}

status run_candidate_indexer(const candidate_indexer_args& a, const execution& exec) {
  const candidate_pool_input& pool = a.candidates;
  const uint32_t errors =
      run_rows(a, exec, nullptr, nullptr, [&](row_work& row, std::vector<int64_t>& positions) {
        candidate_positions(pool.blocks + row.token * pool.stride, pool.num_blocks,
                            pool.block_size, row.plan.visible, positions);
        row.positions = positions.data();
        row.count = static_cast<int64_t>(positions.size());
      });
  report_errors(exec, errors);
  return status();
}

status write_k_cache(const k_cache_write_args& a, const execution& exec) {
  uint32_t errors = device_error_none;
#pragma omp parallel for schedule(static) num_threads(thread_count(exec)) reduction(| : errors)
  for (int64_t i = 0; i < a.num_tokens; ++i) errors |= write_k_row(a, i);
  report_errors(exec, errors);
  return status();
}

status quantize_q(const q_quantize_args& a, const execution& exec) {
#pragma omp parallel for schedule(static) num_threads(thread_count(exec))
  for (int64_t row = 0; row < a.num_tokens * a.num_heads; ++row) quantize_q_row(a, row);
  return status();
}

}  // namespace mxi::detail::cpu
