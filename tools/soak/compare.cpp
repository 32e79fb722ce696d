#include "compare.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <limits>
#include <mutex>
#include <sstream>
#include <thread>
#include <type_traits>

#include "check.hpp"
#include "gpu_run.hpp"
#include "host_run.hpp"

namespace mxi::tools::soak {
namespace {

using testing::unwritten;
using testing::unwritten_logit;

/// What one backend wrote, in host memory.
struct outputs {
  status st;
  uint32_t error_word = 0;
  std::vector<int32_t> topk, candidates;
  std::vector<float> logits;
};

/// Runs `a` (host pointers, outputs null) on `where` with fresh outputs holding sentinels, so an
/// entry a backend must not write shows if it does. The GPU runs through the tools' GPU door,
/// which copies inputs and outputs to the device and back.
template <class Args>
outputs run_on(backend where, Args a) {
  constexpr bool entry_a = std::is_same_v<Args, indexer_args>;
  outputs o;
  const size_t t = static_cast<size_t>(a.queries.num_tokens);
  o.topk.assign(t * a.topk.stride, unwritten);
  a.topk.indices = o.topk.data();
  if constexpr (entry_a) {
    if (a.logits.stride > 0) {
      o.logits.assign(t * a.logits.stride, unwritten_logit);
      a.logits.data = o.logits.data();
    }
    if (a.candidates.num_blocks > 0) {
      o.candidates.assign(t * a.candidates.stride, unwritten);
      a.candidates.blocks = o.candidates.data();
    }
  }
  if (where == backend::gpu) {
    std::vector<double> seconds;
    if constexpr (entry_a)
      o.st = run_indexer_on_gpu(a, 1, seconds, o.error_word);
    else
      o.st = run_candidate_indexer_on_gpu(a, 1, seconds, o.error_word);
  } else {
    execution exec;
    exec.where = where;
    exec.error_word = &o.error_word;
    if constexpr (entry_a)
      o.st = run_indexer(a, exec);
    else
      o.st = run_candidate_indexer(a, exec);
  }
  return o;
}

/// A row as docs/semantics.md ("Bad input") says the running checks see it, computed here from
/// the batch description alone.
struct row_state {
  uint32_t error = device_error_none;
  int64_t visible = 0;
};

std::vector<row_state> expected_rows(const testing::host_workload& w, int64_t max_model_len) {
  const int64_t t_count = w.num_tokens;
  const int r_count = static_cast<int>(w.seq_lens.size());
  const std::vector<int32_t>& q = w.query_start_loc;
  std::vector<row_state> rows(static_cast<size_t>(t_count));
  bool starts_hold = q[0] == 0 && q[r_count] == t_count;
  for (int r = 0; r < r_count; ++r) starts_hold = starts_hold && q[r + 1] >= q[r];
  if (!starts_hold) {
    for (row_state& row : rows) row.error = device_error_query_start_loc;
    return rows;
  }
  const int bs = w.spec.block_size;
  for (int r = 0; r < r_count; ++r) {
    const int64_t n = q[r + 1] - q[r];
    for (int64_t i = 0; i < n; ++i) {
      row_state& row = rows[q[r] + i];
      if (w.seq_lens[r] < n) {
        row.error = device_error_seq_len;
        continue;
      }
      const int64_t visible = (w.seq_lens[r] - n + i + 1) / w.spec.compress_ratio;
      if (visible > max_model_len) {
        row.error = device_error_max_model_len;
        continue;
      }
      row.visible = visible;
      for (int64_t col = 0; col < (visible + bs - 1) / bs; ++col) {
        const int64_t page = col < w.max_blocks ? w.block_table[r * w.max_blocks + col] : -1;
        if (page < 0 || page >= w.num_pages) {
          row.error = device_error_block_table;
          break;
        }
      }
    }
  }
  return rows;
}

std::string words(uint32_t error_word) {
  std::ostringstream o;
  o << "0x" << std::hex << error_word << std::dec;
  if (error_word != 0) o << " (" << describe_device_errors(error_word) << ")";
  return o.str();
}

/// The first entry of [begin, end) of `row` that is not `want` (NaN-aware), or "".
template <class T>
std::string all_equal(const T* row, int64_t begin, int64_t end, T want, const char* what) {
  for (int64_t j = begin; j < end; ++j) {
    const bool same = std::isnan(static_cast<double>(want))
                          ? std::isnan(static_cast<double>(row[j]))
                          : row[j] == want;
    if (!same) {
      std::ostringstream o;
      o << what << " " << j << " is " << row[j] << ", expected " << want;
      return o.str();
    }
  }
  return "";
}

/// Checks row t of one backend's outputs: what a broken row must hold, or the exact checker's
/// acceptance; and that nothing past a row's width was written.
template <class Args>
std::string check_side(const testing::host_workload& w, const Args& a, const outputs& o, int64_t t,
                       const row_state& expect, const testing::row_truth* truth) {
  constexpr bool entry_a = std::is_same_v<Args, indexer_args>;
  const int32_t* topk = o.topk.data() + t * a.topk.stride;
  std::string why = all_equal(topk, a.topk.k, a.topk.stride, unwritten, "top-k entry (past k)");
  if (!why.empty()) return why;
  if (expect.error != device_error_none) {
    why = all_equal(topk, 0, a.topk.k, -1, "top-k entry of a broken row");
  } else {
    why = testing::check_topk_row(w, *truth, topk, a.topk);
  }
  if (!why.empty()) return why;
  if constexpr (entry_a) {
    if (a.candidates.num_blocks > 0) {
      const int32_t* pool = o.candidates.data() + t * a.candidates.stride;
      why = all_equal(pool, a.candidates.num_blocks, a.candidates.stride, unwritten,
                      "published id (past num_blocks)");
      if (why.empty())
        why = expect.error != device_error_none
                  ? all_equal(pool, 0, a.candidates.num_blocks, -1, "published id of a broken row")
                  : testing::check_candidate_row(*truth, pool, a.candidates.num_blocks,
                                                 a.candidates.block_size);
      if (!why.empty()) return "published candidates: " + why;
    }
    if (a.logits.stride > 0) {
      const float* logits = o.logits.data() + t * a.logits.stride;
      const int64_t mml = a.max_model_len;
      const float minus_inf = -std::numeric_limits<float>::infinity();
      why = all_equal(logits, mml, a.logits.stride, unwritten_logit, "logit (past max_model_len)");
      if (why.empty()) {
        if (expect.error != device_error_none) {
          why = all_equal(logits, 0, mml, a.logits.clean ? minus_inf : unwritten_logit,
                          "logit of a broken row");
        } else {
          why = testing::check_logits_row(*truth, logits, mml, a.logits.clean);
          if (why.empty() && !a.logits.clean)
            why = all_equal(logits, expect.visible, mml, unwritten_logit,
                            "logit (past the visible length, not clean)");
        }
      }
      if (!why.empty()) return "logits: " + why;
    }
  }
  return "";
}

/// Where the contract fixes a row, the two backends' rows must be the same: with at most k
/// candidates every one is listed (in position order the whole row is fixed, in score order
/// the set), and a published pool holding every live block lists them all.
template <class Args>
std::string check_fixed(const Args& a, const outputs& x, const outputs& y, int64_t t,
                        const row_state& expect, const testing::row_truth& truth, bool& differ) {
  const int64_t k = a.topk.k;
  const int32_t* rx = x.topk.data() + t * a.topk.stride;
  const int32_t* ry = y.topk.data() + t * a.topk.stride;
  differ = !std::equal(rx, rx + k, ry);
  if (static_cast<int64_t>(truth.positions.size()) <= k) {
    std::vector<int32_t> sx(rx, rx + k), sy(ry, ry + k);
    if (a.topk.order == output_order::score) {
      std::sort(sx.begin(), sx.end());
      std::sort(sy.begin(), sy.end());
    }
    if (sx != sy) return "rows differ although every candidate fits in k";
  }
  if constexpr (std::is_same_v<Args, indexer_args>) {
    const int ncb = a.candidates.num_blocks, cbs = a.candidates.block_size;
    if (ncb > 0 && (expect.visible + cbs - 1) / cbs <= ncb) {
      const int32_t* px = x.candidates.data() + t * a.candidates.stride;
      const int32_t* py = y.candidates.data() + t * a.candidates.stride;
      if (!std::equal(px, px + ncb, py))
        return "published pools differ although every live block fits";
    }
  }
  return "";
}

/// Calls f(i) for i in [0, n) on `threads` threads; a thread's exception becomes a message.
template <class F>
void parallel_for(int64_t n, int threads, F&& f, std::vector<std::string>& errors) {
  std::atomic<int64_t> next{0};
  std::mutex guard;
  const auto work = [&] {
    try {
      for (int64_t i = next++; i < n; i = next++) f(i);
    } catch (const std::exception& e) {
      const std::lock_guard<std::mutex> lock(guard);
      errors.push_back(std::string("checking: ") + e.what());
      next = n;
    }
  };
  const int64_t count = std::max<int64_t>(1, std::min<int64_t>(threads, n));
  std::vector<std::thread> pool;
  for (int64_t i = 1; i < count; ++i) pool.emplace_back(work);
  work();
  for (std::thread& th : pool) th.join();
}

/// Device bytes of a GPU run of `a`: inputs, outputs and workspace.
template <class Args>
double device_bytes(const soak_case& c, const Args& a) {
  const testing::host_workload& w = c.w;
  double bytes =
      static_cast<double>(w.q_values.size() + w.q_scales.size() + w.kv_cache.size()) +
      4.0 * static_cast<double>(w.weights.size() + w.block_table.size() + w.seq_lens.size() +
                                w.query_start_loc.size() + c.pool.size());
  const double t = static_cast<double>(w.num_tokens);
  bytes += 4.0 * t * static_cast<double>(a.topk.stride + c.logits_stride + c.publish_stride);
  size_t workspace = 0;
  if (workspace_bytes(a, backend::gpu, workspace).ok()) bytes += static_cast<double>(workspace);
  return bytes;
}

template <class Args>
verdict compare(const soak_case& c, const Args& a, pairing p, int threads, size_t max_messages) {
  verdict v;
  const testing::host_workload& w = c.w;
  const backend tested = tested_backend(p), baseline = baseline_backend(p);
  const char* tested_name = tested == backend::gpu ? "gpu" : "cpu";
  const char* baseline_name = baseline == backend::cpu ? "cpu" : "reference";
  if (tested == backend::gpu) {
    const double need = device_bytes(c, a), have = static_cast<double>(gpu_memory_bytes());
    if (need > 0.8 * have) {
      v.skipped = true;
      v.skip_reason = "needs " + std::to_string(need / (1 << 30)) + " GiB of device memory";
      return v;
    }
  }
  const outputs x = run_on(tested, a), y = run_on(baseline, a);
  const auto note = [&](const std::string& what) {
    if (v.mismatches.size() < max_messages) v.mismatches.push_back(what);
  };
  if (!x.st.ok() || !y.st.ok()) {
    note(std::string("status: ") + tested_name + " '" + x.st.message() + "', " + baseline_name +
         " '" + y.st.message() + "' (both must run)");
    return v;
  }
  const std::vector<row_state> expect = expected_rows(w, a.max_model_len);
  uint32_t expected_word = device_error_none;
  for (const row_state& row : expect) expected_word |= row.error;
  if (x.error_word != expected_word || y.error_word != expected_word)
    note(std::string("error word: ") + tested_name + " " + words(x.error_word) + ", " +
         baseline_name + " " + words(y.error_word) + ", expected " + words(expected_word));

  const int64_t t_count = w.num_tokens;
  v.rows = t_count;
  std::vector<std::string> found(static_cast<size_t>(t_count));
  std::vector<char> differ(static_cast<size_t>(t_count), 0);
  std::vector<std::string> errors;
  parallel_for(
      t_count, threads,
      [&](int64_t t) {
        const row_state& e = expect[t];
        testing::row_truth truth;
        if (e.error == device_error_none) {
          if constexpr (std::is_same_v<Args, indexer_args>) {
            truth = testing::exact_row(w, t);
          } else {
            truth =
                testing::exact_candidate_row(w, t, a.candidates.blocks + t * a.candidates.stride,
                                             a.candidates.num_blocks, a.candidates.block_size);
          }
        }
        std::string why = check_side(w, a, x, t, e, &truth);
        if (!why.empty()) why = std::string(tested_name) + ": " + why;
        if (why.empty()) {
          why = check_side(w, a, y, t, e, &truth);
          if (!why.empty()) why = std::string(baseline_name) + ": " + why;
        }
        if (why.empty() && e.error == device_error_none) {
          bool rows_differ = false;
          why = check_fixed(a, x, y, t, e, truth, rows_differ);
          differ[t] = rows_differ;
        }
        if (!why.empty()) {
          std::ostringstream o;
          o << "token " << t << " (visible " << e.visible;
          if (e.error != device_error_none) o << ", broken: " << words(e.error);
          o << "): " << why;
          found[t] = o.str();
        }
      },
      errors);
  for (const std::string& e : errors) note(e);
  int64_t bad_rows = 0;
  for (int64_t t = 0; t < t_count; ++t) {
    v.broken_rows += expect[t].error != device_error_none;
    v.differing_rows += differ[t];
    if (!found[t].empty()) {
      ++bad_rows;
      note(found[t]);
    }
  }
  if (bad_rows > 0 && v.mismatches.size() >= max_messages)
    v.mismatches.push_back(std::to_string(bad_rows) + " rows break the contract in all");
  return v;
}

}  // namespace

backend tested_backend(pairing p) { return p == pairing::gpu_vs_cpu ? backend::gpu : backend::cpu; }

backend baseline_backend(pairing p) {
  return p == pairing::gpu_vs_cpu ? backend::cpu : backend::reference;
}

verdict run_case(const soak_case& c, pairing p, int threads, size_t max_messages) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (c.candidate_entry) return compare(c, c.candidate_indexer(), p, threads, max_messages);
  return compare(c, c.indexer(), p, threads, max_messages);
}

}  // namespace mxi::tools::soak
