// Example: an engine's own scoring kernel that selects with mxi's block top-k
// (mxi/block/block_topk.hpp). One block takes one query row: it scores the row's visible columns
// itself (an int8 dot product plus a per-column bias that may be NaN or +-inf), writes their
// order-preserving keys (block::score_key: NaN lowest) into shared memory, and lets block_topk
// pick the k best, ties to the smaller column: in ascending column order, and in score order. The
// host checks both against a sort that spells out the same ranking.
//
// Exit code: 0 agrees, 1 disagrees, 4 no GPU (skipped).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "gpu_host.hpp"
#include "mxi/block/block_topk.hpp"

namespace {

constexpr int threads = 256, max_columns = 2048, dim = 16, rows = 6, k = 64;
constexpr int sort_items = 1;  // score order: threads * sort_items >= k winners a block sorts

/// The block's shared memory: block_topk's storage, the row's keys (which the score-order sort
/// reuses once select has read them), the staged winners of the score order.
template <int SortItems>
struct select_shared {
  using topk = mxi::block::block_topk<threads, SortItems>;
  typename topk::storage_type storage;
  union {
    uint4 keys[topk::row_vectors(max_columns)];
    typename topk::sort_storage_type sort;
  } row;
  uint64_t staged[SortItems == 0 ? 1 : threads * SortItems];
};

MXI_DEVICE float score(const int8_t* q, const int8_t* key, float bias) {
  int dot = 0;  // small integers: exact, so the host computes the same floats
  for (int d = 0; d < dim; ++d) dot += q[d] * key[d];
  return static_cast<float>(dot) + bias;
}

/// Row r: columns [0, visible[r]) of keys [max_columns][dim] scored against q[r]; out[r][0, k):
/// the winners' columns, -1 past them.
template <int SortItems>
__global__ __launch_bounds__(threads) void score_and_select(const int8_t* q, const int8_t* keys,
                                                            const float* bias,
                                                            const int32_t* visible, int32_t* out) {
  using shared_t = select_shared<SortItems>;
  using topk = typename shared_t::topk;
  static_assert(SortItems == 0 || k <= topk::max_k, "the score-order sort holds k winners");
  static_assert(max_columns <= topk::max_columns, "a row fits block_topk");
  __shared__ shared_t shared;
  const int r = static_cast<int>(blockIdx.x);
  const int n = visible[r];
  int32_t* out_row = out + r * k;
  if (n <= 0) {  // block_topk takes rows of at least one column
    for (int s = static_cast<int>(threadIdx.x); s < k; s += threads) out_row[s] = -1;
    return;
  }
  auto* words = reinterpret_cast<uint32_t*>(shared.row.keys);
  for (int c = static_cast<int>(threadIdx.x); c < n; c += threads)
    words[c] = mxi::block::score_key(score(q + r * dim, keys + c * dim, bias[c]));
  const mxi::block::key_row row{shared.row.keys, 0, n};
  topk::count(row, k, shared.storage);  // its first barrier makes the keys visible
  // The winners' columns, then -1 up to k.
  const auto emit = [&](int slot, int column) { out_row[slot] = column; };
  if constexpr (SortItems == 0)
    topk::select(row, k, shared.storage, emit);
  else
    topk::select(row, k, shared.storage, shared.staged, shared.row.sort, emit);
}

/// The contract's ranking, spelled out: NaN below everything, then by value (-0 == +0), equal
/// scores to the smaller column.
bool ranks_before(float a, int ca, float b, int cb) {
  if (std::isnan(a) != std::isnan(b)) return std::isnan(b);
  if (!std::isnan(a) && a != b) return a > b;
  return ca < cb;
}

std::vector<int32_t> expected_row(const std::vector<float>& scores, int n, bool score_order) {
  std::vector<int32_t> columns(static_cast<size_t>(std::max(n, 0)));
  std::iota(columns.begin(), columns.end(), 0);
  std::sort(columns.begin(), columns.end(),
            [&](int32_t a, int32_t b) { return ranks_before(scores[a], a, scores[b], b); });
  columns.resize(static_cast<size_t>(std::min(n, k)));
  if (!score_order) std::sort(columns.begin(), columns.end());
  columns.resize(k, -1);
  return columns;
}

template <int SortItems>
int run(const example::device_array<int8_t>& q, const example::device_array<int8_t>& keys,
        const example::device_array<float>& bias, const example::device_array<int32_t>& visible,
        const std::vector<std::vector<float>>& scores, const std::vector<int32_t>& n) {
  const example::device_array<int32_t> out(std::vector<int32_t>(rows * k, 0x7F7F7F7F));
  score_and_select<SortItems>
      <<<rows, threads>>>(q.data(), keys.data(), bias.data(), visible.data(), out.data());
  example::check(mxi::platform::last_error(), "launch");
  const std::vector<int32_t> got = out.download();
  const char* order = SortItems == 0 ? "position order" : "score order";
  int bad_rows = 0;
  for (int r = 0; r < rows; ++r) {
    const std::vector<int32_t> want = expected_row(scores[r], n[r], SortItems != 0);
    if (!std::equal(want.begin(), want.end(), got.begin() + r * k)) {
      ++bad_rows;
      int s = 0;
      while (want[s] == got[r * k + s]) ++s;
      std::printf("%s, row %d (%d columns): slot %d holds %d, expected %d\n", order, r, n[r], s,
                  got[r * k + s], want[s]);
    }
  }
  std::printf("own_scores_topk %s: %d rows, %d wrong\n", order, rows, bad_rows);
  return bad_rows;
}

}  // namespace

int main() {
  example::require_gpu("example_own_scores_topk");
  // Rows shorter than k, empty, exactly k, and long; values in [-3, 3] make many equal scores.
  const std::vector<int32_t> n = {max_columns, 0, 40, k, 1000, max_columns - 5};
  std::mt19937 rng(8);
  std::uniform_int_distribution<int> small(-3, 3);
  std::vector<int8_t> q(rows * dim), keys(max_columns * dim);
  for (int8_t& x : q) x = static_cast<int8_t>(small(rng));
  for (int8_t& x : keys) x = static_cast<int8_t>(small(rng));
  std::vector<float> bias(max_columns, 0.0f);
  const float inf = std::numeric_limits<float>::infinity();
  for (int c = 0; c < max_columns; c += 97) bias[c] = std::numeric_limits<float>::quiet_NaN();
  for (int c = 13; c < max_columns; c += 211) bias[c] = -inf;
  for (int c = 500; c < max_columns; c += 601) bias[c] = inf;
  bias[3] = -0.0f;  // equal to +0: a tie broken by column

  std::vector<std::vector<float>> scores(rows, std::vector<float>(max_columns));
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < max_columns; ++c) {
      int dot = 0;
      for (int d = 0; d < dim; ++d) dot += q[r * dim + d] * keys[c * dim + d];
      scores[r][c] = static_cast<float>(dot) + bias[c];
    }

  const example::device_array<int8_t> d_q(q), d_keys(keys);
  const example::device_array<float> d_bias(bias);
  const example::device_array<int32_t> d_n(n);
  const int bad = run<0>(d_q, d_keys, d_bias, d_n, scores, n) +
                  run<sort_items>(d_q, d_keys, d_bias, d_n, scores, n);
  return bad == 0 ? example::exit_ok : example::exit_mismatch;
}
