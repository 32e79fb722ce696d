#include "check.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>
#include <unordered_map>

namespace mxi::testing {
namespace {

/// Exact value of element i of a packed MXFP4 vector (double holds every product exactly).
double element(const uint8_t* values, const uint8_t* scales, int i) {
  return static_cast<double>(format::decode_e2m1(format::packed_code(values, i))) *
         static_cast<double>(format::decode_e8m0(scales[i / 32]));
}

uint64_t fnv1a(const uint8_t* p, size_t n, uint64_t h = 0xcbf29ce484222325ull) {
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

/// Rank class: NaN < -inf < finite < +inf.
int rank_class(double x) {
  if (std::isnan(x)) return 0;
  if (std::isinf(x)) return x < 0 ? 1 : 3;
  return 2;
}

/// One thing a row may choose (a position or a candidate block) as the acceptance rules see it.
struct item {
  int64_t id = 0;
  int cls = 0;
  double hi = 0, lo = 0;  ///< bounds of what a correct backend may compute (finite class only)
  uint64_t tie = 0;       ///< equal nonzero values: bitwise-equal scores in any backend
};

/// The identity under which items tie exactly: equal key bytes when finite, the class otherwise.
uint64_t tie_of(int cls, uint64_t finite_identity) {
  return cls == 2 ? finite_identity : static_cast<uint64_t>(cls) + 1;
}

/// Whether `a` may be chosen (or listed before) `b`: the tolerance rule (ties are checked apart).
bool may_precede(const item& a, const item& b) {
  if (a.cls != b.cls) return a.cls > b.cls;
  return a.cls != 2 || a.hi >= b.lo;
}

/// Checks that `chosen` are optimal against `others` within tolerance and that exact ties went to
/// the smaller id.
std::string check_choice(const std::vector<item>& chosen, const std::vector<item>& others) {
  if (chosen.empty() || others.empty()) return "";
  // Weakest chosen and strongest unchosen per class decide the tolerance rule.
  std::map<int, item> weakest, strongest;
  for (const item& a : chosen) {
    auto [it, fresh] = weakest.emplace(a.cls, a);
    if (!fresh && a.hi < it->second.hi) it->second = a;
  }
  for (const item& b : others) {
    auto [it, fresh] = strongest.emplace(b.cls, b);
    if (!fresh && b.lo > it->second.lo) it->second = b;
  }
  const item& low = weakest.begin()->second;
  const item& high = strongest.rbegin()->second;
  std::ostringstream why;
  why.precision(17);
  if (low.cls < high.cls) {
    why << "chose " << low.id << " (class " << low.cls << ") over " << high.id << " (class "
        << high.cls << ")";
    return why.str();
  }
  if (!may_precede(low, high)) {
    why << "chose " << low.id << " (score <= " << low.hi << ") over " << high.id << " (score >= "
        << high.lo << ")";
    return why.str();
  }
  std::unordered_map<uint64_t, int64_t> max_chosen;
  for (const item& a : chosen) {
    if (!a.tie) continue;
    const auto [it, fresh] = max_chosen.emplace(a.tie, a.id);
    if (!fresh) it->second = std::max(it->second, a.id);
  }
  for (const item& b : others) {
    const auto it = b.tie ? max_chosen.find(b.tie) : max_chosen.end();
    if (it != max_chosen.end() && it->second > b.id) {
      why << "exact tie broken against position order: chose " << it->second << ", left " << b.id;
      return why.str();
    }
  }
  return "";
}

/// Checks that `listed` is in descending order within tolerance, exact ties by ascending id.
std::string check_descending(const std::vector<item>& listed) {
  std::unordered_map<uint64_t, int64_t> last;
  for (size_t i = 0; i < listed.size(); ++i) {
    const item& b = listed[i];
    if (i > 0 && !may_precede(listed[i - 1], b))
      return "score order: " + std::to_string(listed[i - 1].id) + " listed before " +
             std::to_string(b.id);
    if (b.tie) {
      const auto it = last.find(b.tie);
      if (it != last.end() && it->second > b.id)
        return "score order: exact tie " + std::to_string(it->second) + " listed before " +
               std::to_string(b.id);
      last[b.tie] = b.id;
    }
  }
  return "";
}

item position_item(const row_truth& truth, size_t i, double rel_tol) {
  item it;
  it.id = truth.positions[i];
  it.cls = rank_class(truth.score[i]);
  const double tol = rel_tol * truth.scale[i];
  it.hi = truth.score[i] + tol;
  it.lo = truth.score[i] - tol;
  it.tie = tie_of(it.cls, truth.key_hash[i]);
  return it;
}

/// Fills scores for `truth.positions` of token t.
void score(const host_workload& w, row_truth& truth) {
  const int h_count = w.spec.num_heads, d = w.spec.head_dim, bs = w.spec.block_size;
  std::vector<double> q(static_cast<size_t>(h_count) * d), k(d);
  for (int h = 0; h < h_count; ++h) {
    const int64_t row = truth.token * h_count + h;
    for (int i = 0; i < d; ++i)
      q[h * d + i] = element(&w.q_values[row * d / 2], &w.q_scales[row * d / 32], i);
  }
  const layout::page_shape shape{bs, d};
  std::vector<uint8_t> values(d / 2), scales(d / 32);
  for (int64_t pos : truth.positions) {
    const int64_t page = w.block_table[truth.request * w.max_blocks + pos / bs];
    layout::dispatch(w.spec.layout, [&](auto L) {
      layout::read_token<decltype(L)>(&w.kv_cache[page * w.page_stride], shape,
                                      static_cast<int>(pos % bs), values.data(), scales.data());
    });
    for (int i = 0; i < d; ++i) k[i] = element(values.data(), scales.data(), i);
    double sum = 0.0, scale = 0.0;
    for (int h = 0; h < h_count; ++h) {
      double dot = 0.0;
      for (int i = 0; i < d; ++i) dot += q[h * d + i] * k[i];
      const double term = static_cast<double>(w.weights[truth.token * h_count + h]) *
                          (std::isnan(dot) || dot > 0.0 ? dot : 0.0);
      sum += term;
      scale += std::fabs(term);
    }
    truth.score.push_back(sum);
    truth.scale.push_back(scale);
    truth.key_hash.push_back(fnv1a(scales.data(), scales.size(), fnv1a(values.data(), values.size())));
  }
}

row_truth truth_header(const host_workload& w, int64_t t) {
  row_truth truth;
  truth.token = t;
  truth.request = w.request_of(t);
  truth.visible = w.visible(t);
  return truth;
}

std::string at_token(int64_t t, const std::string& what) {
  return what.empty() ? what : "token " + std::to_string(t) + ": " + what;
}

}  // namespace

row_truth exact_row(const host_workload& w, int64_t t) {
  row_truth truth = truth_header(w, t);
  for (int64_t p = 0; p < truth.visible; ++p) truth.positions.push_back(p);
  score(w, truth);
  return truth;
}

row_truth exact_candidate_row(const host_workload& w, int64_t t, const int32_t* ids, int num_blocks,
                              int block_size) {
  row_truth truth = truth_header(w, t);
  for (int i = 0; i < num_blocks; ++i) {
    const int64_t j = ids[i];
    if (j < 0) continue;
    for (int64_t p = j * block_size; p < (j + 1) * block_size && p < truth.visible; ++p)
      truth.positions.push_back(p);
  }
  std::sort(truth.positions.begin(), truth.positions.end());
  truth.positions.erase(std::unique(truth.positions.begin(), truth.positions.end()),
                        truth.positions.end());
  score(w, truth);
  return truth;
}

int64_t cache_slot(const host_workload& w, int request, int64_t pos) {
  const int bs = w.spec.block_size;
  return static_cast<int64_t>(w.block_table[request * w.max_blocks + pos / bs]) * bs + pos % bs;
}

std::string check_topk_row(const host_workload& w, const row_truth& truth, const int32_t* row,
                           const topk_output& out, double rel_tol) {
  const int64_t n = static_cast<int64_t>(truth.positions.size());
  const int64_t expect = std::min<int64_t>(n, out.k);
  std::unordered_map<int64_t, size_t> index;  // output value -> index in truth
  for (size_t i = 0; i < truth.positions.size(); ++i)
    index[out.space == index_space::cache_slot ? cache_slot(w, truth.request, truth.positions[i])
                                                : truth.positions[i]] = i;
  std::vector<char> taken(truth.positions.size(), 0);
  std::vector<item> chosen, others;
  for (int64_t j = 0; j < out.k; ++j) {
    if (j >= expect) {
      if (row[j] != -1) return "entry " + std::to_string(j) + " must be -1, got " + std::to_string(row[j]);
      continue;
    }
    const auto it = index.find(row[j]);
    if (it == index.end())
      return "entry " + std::to_string(j) + " = " + std::to_string(row[j]) + " is not a candidate";
    if (taken[it->second]) return "entry " + std::to_string(j) + " repeats " + std::to_string(row[j]);
    taken[it->second] = 1;
    chosen.push_back(position_item(truth, it->second, rel_tol));
  }
  for (size_t i = 0; i < truth.positions.size(); ++i)
    if (!taken[i]) others.push_back(position_item(truth, i, rel_tol));
  if (out.order == output_order::position) {
    for (size_t j = 1; j < chosen.size(); ++j)
      if (chosen[j].id <= chosen[j - 1].id)
        return "position order: " + std::to_string(chosen[j - 1].id) + " before " +
               std::to_string(chosen[j].id);
  } else {
    const std::string why = check_descending(chosen);
    if (!why.empty()) return why;
  }
  return check_choice(chosen, others);
}

std::string check_candidate_row(const row_truth& truth, const int32_t* row, int num_blocks,
                                int block_size, double rel_tol) {
  const int64_t live = (truth.visible + block_size - 1) / block_size;
  // Block items: the best class among the block's positions, bounds over those positions, and a
  // tie identity when every position that could be the block's max has the same key bytes.
  std::vector<item> blocks(static_cast<size_t>(live));
  for (int64_t j = 0; j < live; ++j) {
    item& b = blocks[j];
    b.id = j;
    b.cls = -1;
    std::vector<item> members;
    for (int64_t p = j * block_size; p < std::min<int64_t>((j + 1) * block_size, truth.visible); ++p)
      members.push_back(position_item(truth, static_cast<size_t>(p), rel_tol));
    for (const item& m : members) b.cls = std::max(b.cls, m.cls);
    b.hi = b.lo = -std::numeric_limits<double>::infinity();
    for (const item& m : members)
      if (m.cls == b.cls) b.hi = std::max(b.hi, m.hi), b.lo = std::max(b.lo, m.lo);
    uint64_t identity = 0;
    bool single = true;
    for (const item& m : members)
      if (m.cls == b.cls && m.hi >= b.lo) {
        if (identity && identity != m.tie) single = false;
        identity = m.tie;
      }
    b.tie = single ? identity : 0;
    if (j == live - 1) b.cls = 3, b.tie = tie_of(3, 0);  // the newest block counts as +inf
  }
  const int64_t expect = std::min<int64_t>(live, num_blocks);
  std::vector<char> taken(static_cast<size_t>(live), 0);
  std::vector<item> chosen, others;
  for (int64_t i = 0; i < num_blocks; ++i) {
    if (i >= expect) {
      if (row[i] != -1) return "candidate " + std::to_string(i) + " must be -1, got " + std::to_string(row[i]);
      continue;
    }
    if (row[i] < 0 || row[i] >= live)
      return "candidate " + std::to_string(i) + " = " + std::to_string(row[i]) + " is not a live block";
    if (i > 0 && row[i] <= row[i - 1]) return "candidate blocks are not strictly ascending";
    taken[row[i]] = 1;
    chosen.push_back(blocks[row[i]]);
  }
  for (int64_t j = 0; j < live; ++j)
    if (!taken[j]) others.push_back(blocks[j]);
  return check_choice(chosen, others);
}

std::string check_logits_row(const row_truth& truth, const float* row, int64_t max_model_len,
                             bool clean, double rel_tol) {
  for (size_t i = 0; i < truth.positions.size(); ++i) {
    const double s = truth.score[i], got = row[truth.positions[i]];
    const bool ok = rank_class(s) == 2 ? std::fabs(got - s) <= rel_tol * truth.scale[i]
                                       : (std::isnan(s) ? std::isnan(got) : got == s);
    if (!ok) {
      std::ostringstream why;
      why.precision(17);
      why << "logit " << truth.positions[i] << " = " << got << ", exact " << s;
      return why.str();
    }
  }
  if (clean)
    for (int64_t p = truth.visible; p < max_model_len; ++p)
      if (row[p] != -std::numeric_limits<float>::infinity())
        return "logit " + std::to_string(p) + " past the visible length is not -inf";
  return "";
}

std::string check_indexer(const host_workload& w, const indexer_args& args, double rel_tol) {
  for (int64_t t = 0; t < args.queries.num_tokens; ++t) {
    const row_truth truth = exact_row(w, t);
    std::string why =
        check_topk_row(w, truth, args.topk.indices + t * args.topk.stride, args.topk, rel_tol);
    if (why.empty() && args.candidates.blocks)
      why = check_candidate_row(truth, args.candidates.blocks + t * args.candidates.stride,
                                args.candidates.num_blocks, args.candidates.block_size, rel_tol);
    if (why.empty() && args.logits.data)
      why = check_logits_row(truth, args.logits.data + t * args.logits.stride, args.max_model_len,
                             args.logits.clean, rel_tol);
    if (!why.empty()) return at_token(t, why);
  }
  return "";
}

std::string check_candidate_indexer(const host_workload& w, const candidate_indexer_args& args,
                                    double rel_tol) {
  const auto& pool = args.candidates;
  for (int64_t t = 0; t < args.queries.num_tokens; ++t) {
    const row_truth truth =
        exact_candidate_row(w, t, pool.blocks + t * pool.stride, pool.num_blocks, pool.block_size);
    const std::string why =
        check_topk_row(w, truth, args.topk.indices + t * args.topk.stride, args.topk, rel_tol);
    if (!why.empty()) return at_token(t, why);
  }
  return "";
}

}  // namespace mxi::testing
