// The float64 reference backend: written to be read, not to be fast. Every score is the exact
// sum over heads of w * relu(q . k) on the decoded MXFP4 values, rounded to fp32 once; selection
// sorts with the contract's ranking spelled out as a comparator.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backend.hpp"
#include "cpu/output.hpp"
#include "cpu/quantize.hpp"
#include "cpu/rows.hpp"
#include "mxi/format/relu.hpp"

namespace mxi::detail::reference {
namespace {

/// Decodes D MXFP4 values exactly into doubles (the product of an E2M1 value and a power of two
/// never rounds in double; an E8M0 NaN gives NaN).
void decode(const uint8_t* values, const uint8_t* scales, int d, double* out) {
  for (int i = 0; i < d; ++i)
    out[i] = static_cast<double>(format::decode_e2m1(format::packed_code(values, i))) *
             static_cast<double>(format::decode_e8m0(scales[i / format::block_elems]));
}

/// Scores of token t over `positions` (all in pages the caller checked).
std::vector<float> score_positions(const query_view& q, const cache_view& cache,
                                   const request_view& req, int64_t t, int request,
                                   const std::vector<int64_t>& positions) {
  const int h_count = q.num_heads, d = q.head_dim;
  std::vector<double> query(static_cast<size_t>(h_count) * d), key(d);
  for (int h = 0; h < h_count; ++h) {
    const int64_t row = t * h_count + h;
    decode(q.values + row * (d / 2), q.scales + row * (d / 32), d, &query[h * d]);
  }
  const layout::page_shape shape{cache.block_size, d};
  std::vector<uint8_t> values(d / 2), scales(d / 32);
  std::vector<float> scores;
  scores.reserve(positions.size());
  for (int64_t pos : positions) {
    const int64_t page = page_of_column(req, cache.num_pages, request, pos / cache.block_size);
    const uint8_t* base = cache.data + layout::page_offset(page, cache.page_stride);
    layout::dispatch(cache.layout, [&](auto L) {
      layout::read_token<decltype(L)>(base, shape, static_cast<int>(pos % cache.block_size),
                                      values.data(), scales.data());
    });
    decode(values.data(), scales.data(), d, key.data());
    double sum = 0.0;
    for (int h = 0; h < h_count; ++h) {
      double dot = 0.0;
      for (int i = 0; i < d; ++i) dot += query[h * d + i] * key[i];
      sum += static_cast<double>(q.weights[t * h_count + h]) * format::relu(dot);
    }
    scores.push_back(static_cast<float>(sum));
  }
  return scores;
}

struct scored {
  float score;
  int64_t position;
};

/// The contract's ranking: NaN below everything, then by value (-0 == +0), ties to the smaller
/// position.
bool better(const scored& a, const scored& b) {
  const bool a_nan = std::isnan(a.score), b_nan = std::isnan(b.score);
  if (a_nan != b_nan) return b_nan;
  if (!a_nan && a.score != b.score) return a.score > b.score;
  return a.position < b.position;
}

/// The positions a row holds, in the requested order: all of them when at most k, else the best k.
std::vector<int64_t> choose(const std::vector<int64_t>& positions, const std::vector<float>& scores,
                            int k, output_order order) {
  std::vector<scored> items;
  for (size_t i = 0; i < positions.size(); ++i) items.push_back({scores[i], positions[i]});
  if (items.size() > static_cast<size_t>(k)) {
    std::sort(items.begin(), items.end(), better);
    items.resize(k);
  }
  if (order == output_order::position)
    std::sort(items.begin(), items.end(),
              [](const scored& a, const scored& b) { return a.position < b.position; });
  else
    std::sort(items.begin(), items.end(), better);
  std::vector<int64_t> chosen;
  for (const scored& s : items) chosen.push_back(s.position);
  return chosen;
}

}  // namespace

status run_indexer(const indexer_args& a, const execution& exec) {
  const std::vector<row_plan> rows = plan_rows(a);
  const candidate_pool_output* pool = a.candidates.blocks ? &a.candidates : nullptr;
  uint32_t errors = device_error_none;
  std::vector<uint64_t> scratch;
  for (int64_t t = 0; t < a.queries.num_tokens; ++t) {
    const row_plan& row = rows[t];
    if (row.error) {
      errors |= row.error;
      write_failed_row(a.topk, &a.logits, pool, a.max_model_len, t);
      continue;
    }
    std::vector<int64_t> positions(static_cast<size_t>(row.visible));
    for (int64_t p = 0; p < row.visible; ++p) positions[p] = p;
    const std::vector<float> scores =
        score_positions(a.queries, a.cache, a.requests, t, row.request, positions);
    if (a.logits.data) write_logits_row(a.logits, t, scores.data(), row.visible, a.max_model_len);
    if (pool) publish_candidates(*pool, t, scores.data(), row.visible, scratch);
    const std::vector<int64_t> chosen = choose(positions, scores, a.topk.k, a.topk.order);
    write_topk_row(a.topk, t, chosen.data(), static_cast<int64_t>(chosen.size()), a.requests,
                   a.cache, row.request);
  }
  report_errors(exec, errors);
  return status();
}

status run_candidate_indexer(const candidate_indexer_args& a, const execution& exec) {
  const std::vector<row_plan> rows = plan_rows(a);
  uint32_t errors = device_error_none;
  std::vector<int64_t> positions;
  for (int64_t t = 0; t < a.queries.num_tokens; ++t) {
    const row_plan& row = rows[t];
    if (row.error) {
      errors |= row.error;
      write_failed_row(a.topk, nullptr, nullptr, a.max_model_len, t);
      continue;
    }
    candidate_positions(a.candidates.blocks + t * a.candidates.stride, a.candidates.num_blocks,
                        a.candidates.block_size, row.visible, positions);
    const std::vector<float> scores =
        score_positions(a.queries, a.cache, a.requests, t, row.request, positions);
    const std::vector<int64_t> chosen = choose(positions, scores, a.topk.k, a.topk.order);
    write_topk_row(a.topk, t, chosen.data(), static_cast<int64_t>(chosen.size()), a.requests,
                   a.cache, row.request);
  }
  report_errors(exec, errors);
  return status();
}

status write_k_cache(const k_cache_write_args& a, const execution& exec) {
  uint32_t errors = device_error_none;
  for (int64_t i = 0; i < a.num_tokens; ++i) errors |= write_k_row(a, i);
  report_errors(exec, errors);
  return status();
}

status quantize_q(const q_quantize_args& a, const execution&) {
  for (int64_t row = 0; row < a.num_tokens * a.num_heads; ++row) quantize_q_row(a, row);
  return status();
}

}  // namespace mxi::detail::reference
