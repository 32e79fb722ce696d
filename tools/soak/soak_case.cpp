#include "soak_case.hpp"

#include <algorithm>
#include <initializer_list>
#include <limits>
#include <random>
#include <sstream>

namespace mxi::tools::soak {
namespace {

constexpr int32_t int32_max = std::numeric_limits<int32_t>::max();
constexpr int32_t int32_min = std::numeric_limits<int32_t>::min();

/// Integer draws from one generator, so a case depends on its seed alone.
class dice {
 public:
  explicit dice(uint64_t seed) : rng_(seed) {}
  uint64_t next() { return rng_(); }
  uint64_t below(uint64_t n) { return rng_() % n; }
  bool percent(int p) { return below(100) < static_cast<uint64_t>(p); }
  /// Uniform in [lo, hi].
  int64_t between(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(below(static_cast<uint64_t>(hi - lo) + 1));
  }
  /// About log-uniform in [lo, hi], lo >= 1: an octave first, then a value in it.
  int64_t log_between(int64_t lo, int64_t hi) {
    int low = 0, high = 0;
    while ((int64_t{2} << low) <= lo) ++low;
    while ((int64_t{2} << high) <= hi) ++high;
    const int octave = static_cast<int>(between(low, high));
    return std::clamp<int64_t>(between(int64_t{1} << octave, (int64_t{2} << octave) - 1), lo, hi);
  }
  template <class T>
  T pick(std::initializer_list<T> values) {
    return *(values.begin() + below(values.size()));
  }

 private:
  std::mt19937_64 rng_;
};

/// How large a case may be. The exact check scores every checked position in double, so the cost
/// of a case is about its work: the sum over rows of visible positions times H * D.
struct size_class {
  const char* name;
  int64_t max_visible;  ///< a request's widest row, in compressed positions
  int max_requests;
  int64_t max_tokens;
  double max_work;
};

size_class draw_class(dice& d, pairing p) {
  const uint64_t roll = d.below(100);
  if (p == pairing::cpu_vs_reference) {
    if (roll < 35) return {"tiny", 64, 4, 64, 2e6};
    if (roll < 80) return {"small", 2048, 8, 512, 2e7};
    if (roll < 97) return {"medium", 8192, 16, 2048, 1e8};
    return {"large", 32768, 32, 4096, 4e8};
  }
  if (roll < 20) return {"tiny", 64, 8, 128, 2e7};
  if (roll < 60) return {"small", 2048, 16, 2048, 2e8};
  if (roll < 92) return {"medium", 16384, 64, 8192, 2e9};
  return {"large", int64_t{1} << 18, 512, 16384, 2e10};
}

/// Query tokens and sequence lengths of each request (uncompressed tokens).
struct batch {
  std::string kind;
  std::vector<int32_t> query_lens, seq_lens;

  void add(int64_t n, int64_t seq) {
    query_lens.push_back(static_cast<int32_t>(n));
    seq_lens.push_back(static_cast<int32_t>(std::min<int64_t>(seq, int32_max)));
  }
  int64_t tokens() const {
    int64_t t = 0;
    for (int32_t n : query_lens) t += n;
    return t;
  }
  /// Sum over tokens of their visible lengths, times H * D.
  double work(int c, int heads, int head_dim) const {
    // F(m) = sum of floor(q / c) for q in [0, m].
    const auto f = [c](int64_t m) {
      const double full = static_cast<double>(m / c);
      return c * full * (full - 1) / 2 + full * static_cast<double>(m - (m / c) * c + 1);
    };
    double sum = 0;
    for (size_t r = 0; r < seq_lens.size(); ++r)
      if (query_lens[r] > 0) sum += f(seq_lens[r]) - f(seq_lens[r] - query_lens[r]);
    return sum * heads * head_dim;
  }
  /// Halves every request (a prefill stays a prefill, a decode keeps its query tokens while it
  /// can).
  void halve() {
    for (size_t r = 0; r < seq_lens.size(); ++r) {
      int32_t &n = query_lens[r], &s = seq_lens[r];
      if (n == s) {
        n = s = n > 1 ? n / 2 : n;
      } else {
        s = std::max(n, s / 2);
      }
    }
  }
};

/// A sequence length whose last token sees `visible` compressed positions.
int64_t sequence_seeing(dice& d, int64_t visible, int c) {
  return visible * c + d.between(0, c - 1);
}

batch draw_batch(dice& d, const size_class& size, int c) {
  batch b;
  const auto visible = [&] { return d.log_between(1, size.max_visible); };
  if (size.max_requests >= 16 && d.percent(4)) {
    // Past 128 requests the GPU checks a batch with smaller blocks, past 1024 with other kernels
    // (device/row_info.hpp).
    b.kind = "decode, many requests";
    const int64_t next_n = d.between(1, 2);
    for (int64_t r = d.between(129, 2048); r > 0; --r)
      b.add(next_n, std::max(next_n, sequence_seeing(d, d.log_between(1, 256), c)));
    return b;
  }
  const uint64_t roll = d.below(100);
  if (roll < 2) {
    b.kind = "empty";
    if (d.percent(50)) b.add(0, d.between(0, 100));
    return b;
  }
  if (roll < 42) {
    b.kind = "decode";
    const int64_t next_n = d.between(1, 4);
    for (int64_t r = d.between(1, size.max_requests); r > 0; --r)
      b.add(next_n, std::max(next_n, sequence_seeing(d, visible(), c)));
  } else if (roll < 60) {
    b.kind = "prefill";
    for (int64_t r = d.between(1, std::min(4, size.max_requests)); r > 0; --r) {
      const int64_t len = std::max<int64_t>(1, sequence_seeing(d, visible(), c));
      b.add(len, len);
    }
  } else if (roll < 80) {
    b.kind = "chunked prefill";
    for (int64_t r = d.between(1, 3); r > 0; --r) {
      const int64_t chunk = d.log_between(1, 512);
      b.add(chunk, chunk + sequence_seeing(d, visible(), c));
    }
  } else {
    b.kind = "mixed";
    const int64_t next_n = d.between(1, 4);
    for (int64_t r = d.between(1, std::max(1, size.max_requests / 2)); r > 0; --r)
      b.add(next_n, std::max(next_n, sequence_seeing(d, visible(), c)));
    const int64_t chunk = d.log_between(1, 256);
    b.add(chunk, chunk + sequence_seeing(d, visible(), c));
    const int64_t len = d.between(1, 64);
    b.add(len, len);
  }
  if (d.percent(15)) {  // a request with no query tokens in this step
    const size_t at = d.below(b.seq_lens.size() + 1);
    b.query_lens.insert(b.query_lens.begin() + at, 0);
    b.seq_lens.insert(b.seq_lens.begin() + at,
                      d.percent(30) ? 0 : static_cast<int32_t>(sequence_seeing(d, visible(), c)));
  }
  return b;
}

/// Puts NaN and infinite values into weights, query blocks and key blocks (scale byte 255 makes
/// a block NaN). Keys are never made infinite: only a scale past fp32's range does that, where
/// docs/semantics.md lets fp32 backends differ from the exact score (decision 10).
void add_specials(dice& d, soak_case& c) {
  testing::host_workload& w = c.w;
  const int h = w.spec.num_heads, dim = w.spec.head_dim, bs = w.spec.block_size;
  const float inf = std::numeric_limits<float>::infinity();
  if (w.num_tokens > 0 && d.percent(60)) {
    const int64_t count = d.between(1, 4);
    for (int64_t i = 0; i < count; ++i)
      w.weights[d.below(w.weights.size())] =
          d.pick({std::numeric_limits<float>::quiet_NaN(), inf, -inf});
    c.specials.push_back(std::to_string(count) + " NaN/inf weights");
  }
  if (w.num_tokens > 0 && d.percent(15)) {
    const int64_t t = d.between(0, w.num_tokens - 1);
    std::fill_n(w.weights.begin() + t * h, h, std::numeric_limits<float>::quiet_NaN());
    c.specials.push_back("token " + std::to_string(t) + "'s weights all NaN");
  }
  if (w.num_tokens > 0 && d.percent(30)) {
    const int64_t count = d.between(1, 3);
    for (int64_t i = 0; i < count; ++i) w.q_scales[d.below(w.q_scales.size())] = format::nan_scale;
    c.specials.push_back(std::to_string(count) + " NaN query blocks");
  }
  if (w.num_pages > 0 && d.percent(50)) {
    const layout::page_shape shape{bs, dim};
    std::vector<uint8_t> values(dim / 2), scales(dim / 32);
    const bool whole = d.percent(20);
    const int64_t tokens = whole ? bs : d.between(1, 40);
    const int64_t page = d.between(0, w.num_pages - 1);
    for (int64_t i = 0; i < tokens; ++i) {
      // One page whole, or tokens of pages anywhere (used pages or not).
      uint8_t* at =
          w.kv_cache.data() + (whole ? page : d.between(0, w.num_pages - 1)) * w.page_stride;
      const int token = static_cast<int>(whole ? i : d.between(0, bs - 1));
      layout::dispatch(w.spec.layout, [&](auto L) {
        layout::read_token<decltype(L)>(at, shape, token, values.data(), scales.data());
        scales[d.below(scales.size())] = format::nan_scale;
        layout::write_token<decltype(L)>(at, shape, token, values.data(), scales.data());
      });
    }
    c.specials.push_back(whole ? "page " + std::to_string(page) + " all NaN keys"
                               : std::to_string(tokens) + " NaN key blocks");
  }
}

/// Entry B's candidate ids, drawn against each row's visible blocks: live ids, repeats, -1, other
/// negatives, ids past the context and near INT32_MAX (their first position overflows int32).
void draw_pool(dice& d, soak_case& c) {
  const testing::host_workload& w = c.w;
  c.pool_blocks = d.pick({1, 2, 3, 5, 8, 12, 32, 100, 700, 2048, 4096});
  c.pool_block_size = d.pick({1, 2, 4, 8, 8, 16, 32, 64, 128});
  while (c.pool_blocks > 1 && w.num_tokens * c.pool_blocks > (int64_t{8} << 20)) c.pool_blocks /= 2;
  c.pool_stride = c.pool_blocks + (d.percent(30) ? d.between(1, 3) : 0);
  // Padding past num_blocks holds block 0, live in most rows: a backend reading it would
  // score positions the row does not name.
  c.pool.assign(static_cast<size_t>(w.num_tokens * c.pool_stride), 0);
  for (int64_t t = 0; t < w.num_tokens; ++t) {
    int32_t* row = c.pool.data() + t * c.pool_stride;
    const int64_t live = (w.visible(t) + c.pool_block_size - 1) / c.pool_block_size;
    for (int i = 0; i < c.pool_blocks; ++i) {
      const uint64_t roll = d.below(100);
      int64_t id;
      if (roll < 55 && live > 0)
        id = d.between(0, live - 1);
      else if (roll < 65 && i > 0)
        id = row[d.below(i)];
      else if (roll < 75)
        id = -1;
      else if (roll < 80)
        id = d.pick({-2, -77, int32_min});
      else if (roll < 95)
        id = live + d.between(0, 50);
      else
        id = d.pick<int64_t>(
            {int32_max, int64_t{int32_max} / c.pool_block_size + 1, int64_t{1} << 30});
      row[i] = static_cast<int32_t>(std::clamp<int64_t>(id, int32_min, int32_max));
    }
  }
}

/// Columns of the block table that row t needs (a corrupt seq_len may make it any number).
int64_t columns_needed(const testing::host_workload& w, int64_t t) {
  return (std::max<int64_t>(0, w.visible(t)) + w.spec.block_size - 1) / w.spec.block_size;
}

/// Breaks the batch description in one of the ways only the running checks can see. Falls back
/// to a page id when the batch has nothing the drawn kind needs.
void corrupt(dice& d, soak_case& c) {
  testing::host_workload& w = c.w;
  const int r_count = static_cast<int>(w.seq_lens.size());
  const int64_t stride = w.max_blocks, pages = w.num_pages;
  // A second corruption sees the first: requests are looked at only while query_start_loc holds.
  bool starts_hold = w.query_start_loc[0] == 0 && w.query_start_loc[r_count] == w.num_tokens;
  for (int r = 0; r < r_count; ++r)
    starts_hold = starts_hold && w.query_start_loc[r + 1] >= w.query_start_loc[r];
  std::vector<int> with_tokens, without_tokens;
  std::vector<int64_t> needed(r_count, 0);  // columns the request's rows need, at most the stride
  for (int r = 0; r < r_count && starts_hold; ++r) {
    (w.query_start_loc[r + 1] > w.query_start_loc[r] ? with_tokens : without_tokens).push_back(r);
    for (int64_t t = w.query_start_loc[r]; t < w.query_start_loc[r + 1]; ++t)
      needed[r] = std::min(stride, std::max(needed[r], columns_needed(w, t)));
  }
  std::vector<int> reading;  // requests some of whose rows read a page
  for (int r : with_tokens)
    if (needed[r] > 0) reading.push_back(r);
  const int c_ratio = w.spec.compress_ratio;
  const auto cell = [&](int r, int64_t col) -> int32_t& { return w.block_table[r * stride + col]; };
  const auto say = [&](const std::string& what) { c.corruptions.push_back(what); };

  uint64_t kind = d.below(8);
  if ((kind == 1 || kind == 2 || kind == 0) && reading.empty()) kind = 3;
  if ((kind == 3 || kind == 4 || kind == 5) && with_tokens.empty()) kind = 6;
  if (kind == 7 && without_tokens.empty()) kind = 6;
  switch (kind) {
    case 0: {
      const int r = reading[d.below(reading.size())];
      const int64_t col = d.between(0, needed[r] - 1);
      const int64_t id = d.pick<int64_t>({-1, -3, pages, pages + 5, int32_max, int32_min});
      cell(r, col) = static_cast<int32_t>(id);
      say("block_table[" + std::to_string(r) + "][" + std::to_string(col) +
          "] = " + std::to_string(id) + " (a page the request's rows read)");
      break;
    }
    case 1: {  // a bad id where no row looks: no error, or a page id if every column is read
      const int r = reading[d.below(reading.size())];
      if (needed[r] < stride) {
        const int64_t col = d.between(needed[r], stride - 1);
        cell(r, col) = d.pick({-1, int32_max, int32_min});
        say("block_table[" + std::to_string(r) + "][" + std::to_string(col) +
            "] bad past every row's visible range (no error)");
      } else {
        cell(r, needed[r] - 1) = static_cast<int32_t>(pages);
        say("block_table[" + std::to_string(r) + "][" + std::to_string(needed[r] - 1) + "] = NB");
      }
      break;
    }
    case 2: {  // too few columns
      int64_t widest = 0;
      for (int r : reading) widest = std::max(widest, needed[r]);
      const int64_t keep = d.between(0, widest - 1);
      std::vector<int32_t> table(static_cast<size_t>(r_count * keep));
      for (int r = 0; r < r_count; ++r)
        for (int64_t col = 0; col < keep; ++col) table[r * keep + col] = cell(r, col);
      w.block_table = std::move(table);
      w.max_blocks = keep;
      say("block_table_stride = " + std::to_string(keep) + " where rows need up to " +
          std::to_string(widest) + " columns");
      break;
    }
    case 3: {
      const int r = with_tokens[d.below(with_tokens.size())];
      const int32_t n = w.query_start_loc[r + 1] - w.query_start_loc[r];
      w.seq_lens[r] = d.pick<int32_t>({n - 1, -1, -1000, int32_min});
      say("seq_lens[" + std::to_string(r) + "] = " + std::to_string(w.seq_lens[r]) + " with " +
          std::to_string(n) + " query tokens");
      break;
    }
    case 4: {
      const int r = with_tokens[d.below(with_tokens.size())];
      const int64_t n = w.query_start_loc[r + 1] - w.query_start_loc[r];
      const int64_t past = (w.max_model_len + d.between(1, 3)) * c_ratio + n - 1;
      w.seq_lens[r] =
          static_cast<int32_t>(d.percent(25) ? int32_max : std::min<int64_t>(past, int32_max));
      say("seq_lens[" + std::to_string(r) + "] = " + std::to_string(w.seq_lens[r]) +
          ", past max_model_len " + std::to_string(w.max_model_len));
      break;
    }
    case 5: {  // longer, within max_model_len: new positions in the last page, or columns of -1
      const int r = with_tokens[d.below(with_tokens.size())];
      const int64_t most = w.max_model_len * c_ratio;
      const int64_t longer =
          std::min<int64_t>(w.seq_lens[r] + d.between(1, 3 * w.spec.block_size * c_ratio), most);
      w.seq_lens[r] = static_cast<int32_t>(std::max<int64_t>(longer, w.seq_lens[r]));
      say("seq_lens[" + std::to_string(r) + "] raised to " + std::to_string(w.seq_lens[r]));
      break;
    }
    case 6: {
      std::vector<int32_t>& q = w.query_start_loc;
      const uint64_t how = d.below(r_count >= 2 ? 4 : 3);
      if (how == 0) {
        q[0] = d.pick({-1, 1});
        say("query_start_loc[0] = " + std::to_string(q[0]));
      } else if (how == 1) {
        q[r_count] += d.pick({-1, 1});
        say("query_start_loc[R] = " + std::to_string(q[r_count]) + " with T " +
            std::to_string(w.num_tokens));
      } else if (how == 2) {
        w.seq_lens.clear();
        w.block_table.clear();
        q.assign(1, 0);
        say("no requests for " + std::to_string(w.num_tokens) + " tokens");
      } else {
        const int64_t i = d.between(1, r_count - 1);
        q[i] = q[i - 1] - 1;
        say("query_start_loc[" + std::to_string(i) + "] decreases");
      }
      break;
    }
    default: {
      const int r = without_tokens[d.below(without_tokens.size())];
      w.seq_lens[r] = d.pick({-1, int32_min});
      say("seq_lens[" + std::to_string(r) + "] = " + std::to_string(w.seq_lens[r]) +
          " of a request with no query tokens (no error)");
      break;
    }
  }
}

const char* order_name(output_order o) { return o == output_order::score ? "score" : "position"; }
const char* space_name(index_space s) {
  return s == index_space::cache_slot ? "cache_slot" : "position";
}
const char* keys_name(testing::key_pattern k) {
  switch (k) {
    case testing::key_pattern::all_equal:
      return "all equal";
    case testing::key_pattern::few_distinct:
      return "few distinct";
    default:
      return "gaussian";
  }
}

}  // namespace

soak_case draw_case(uint64_t seed, pairing p) {
  const bool gpu = p == pairing::gpu_vs_cpu;
  dice d(seed);
  soak_case c;
  c.seed = seed;
  const size_class size = draw_class(d, p);
  c.size_class = size.name;

  testing::workload_spec s;
  s.compress_ratio = d.pick({1, 1, 1, 2, 3, 4, 4, 8, 128});
  s.num_heads = 16 * static_cast<int>(d.between(1, 8));
  s.head_dim = gpu ? 128 : d.pick({32, 64, 128, 128, 128, 256, 512});
  s.block_size = d.pick({16, 16, 32, 48, 64, 64, 64, 80, 128, 256, 512, 1024});
  s.layout = d.percent(50) ? cache_layout::linear : cache_layout::mfma16;
  s.page_padding = d.pick({0, 0, 0, 16, 32, 64});
  s.extra_pages = static_cast<int>(d.between(0, 5));
  s.topk = d.pick({1,   2,   3,    5,    8,    16,   31,   64,   100,  128,  255, 256,
                   500, 512, 1000, 1024, 2000, 2047, 2048, 2049, 3000, 4095, 4096});
  s.keys = d.percent(70)   ? testing::key_pattern::gaussian
           : d.percent(67) ? testing::key_pattern::few_distinct
                           : testing::key_pattern::all_equal;
  s.rule = d.percent(80) ? format::scale_rule::ceil : format::scale_rule::floor;
  s.seed = d.next();

  batch b = draw_batch(d, size, s.compress_ratio);
  for (int i = 0; i < 64 && (b.tokens() > size.max_tokens ||
                             b.work(s.compress_ratio, s.num_heads, s.head_dim) > size.max_work);
       ++i)
    b.halve();
  c.batch_kind = b.kind;
  int64_t widest = 1;
  for (int32_t seq : b.seq_lens) widest = std::max<int64_t>(widest, seq / s.compress_ratio);
  // A k at least the widest row fixes every row (all positions, then -1); most such draws get a
  // k the rows exceed, so selection is what is compared.
  if (s.topk >= widest && widest > 1 && d.percent(60))
    s.topk = static_cast<int>(d.log_between(1, widest - 1));
  const uint64_t bound = d.below(100);
  if (bound < 50)
    s.max_model_len = 0;  // the widest row: the newest tokens see exactly the bound
  else if (bound < 85)
    s.max_model_len = widest + d.between(1, 1000);
  else
    s.max_model_len =
        d.pick<int64_t>({int64_t{1} << 20, (int64_t{1} << 20) + 17, int64_t{3} << 20});
  s.query_lens = b.query_lens;
  s.seq_lens = b.seq_lens;
  c.w = testing::make_workload(s);
  const testing::host_workload& w = c.w;

  c.order = d.percent(50) ? output_order::score : output_order::position;
  c.space = d.percent(30) ? index_space::cache_slot : index_space::position;
  c.topk_stride = s.topk + (d.percent(30) ? d.between(1, 7) : 0);
  c.candidate_entry = d.percent(40);
  if (c.candidate_entry) {
    draw_pool(d, c);
  } else {
    const int64_t logits_cap = gpu ? int64_t{64} << 20 : int64_t{8} << 20;  // floats
    if (d.percent(30) && w.num_tokens * (w.max_model_len + 32) <= logits_cap) {
      c.logits_stride = w.max_model_len + d.pick({0, 1, 5, 32});
      c.clean = d.percent(50);
    }
    if (d.percent(40)) {
      c.publish_blocks = d.pick({1, 2, 3, 8, 16, 64, 300, 1024, 4096});
      c.publish_block_size = d.pick({1, 2, 4, 8, 8, 8, 16, 64, 128});
      c.publish_stride = c.publish_blocks + (d.percent(30) ? d.between(1, 3) : 0);
    }
  }
  const bool corrupted = w.num_tokens > 0 && d.percent(20);
  if (d.percent(corrupted ? 10 : 25)) add_specials(d, c);
  if (corrupted) {
    corrupt(d, c);
    if (d.percent(20)) corrupt(d, c);
  }
  return c;
}

indexer_args soak_case::indexer() const {
  indexer_args a = w.indexer();
  a.topk.order = order;
  a.topk.space = space;
  a.topk.stride = topk_stride;
  if (logits_stride > 0) {
    a.logits.stride = logits_stride;
    a.logits.clean = clean;
  }
  if (publish_blocks > 0) {
    a.candidates.num_blocks = publish_blocks;
    a.candidates.block_size = publish_block_size;
    a.candidates.stride = publish_stride;
  }
  return a;
}

candidate_indexer_args soak_case::candidate_indexer() const {
  candidate_indexer_args a = w.candidate_indexer();
  a.topk.order = order;
  a.topk.space = space;
  a.topk.stride = topk_stride;
  a.candidates.blocks = pool.data();
  a.candidates.num_blocks = pool_blocks;
  a.candidates.block_size = pool_block_size;
  a.candidates.stride = pool_stride;
  return a;
}

std::string soak_case::describe() const {
  const testing::workload_spec& s = w.spec;
  std::ostringstream o;
  o << (candidate_entry ? "entry B" : "entry A") << ", " << size_class << " " << batch_kind
    << ": R " << w.seq_lens.size() << ", T " << w.num_tokens << ", H " << s.num_heads << ", D "
    << s.head_dim << ", BS " << s.block_size << " "
    << (s.layout == cache_layout::mfma16 ? "mfma16" : "linear") << " (padding " << s.page_padding
    << ", " << w.num_pages << " pages), c " << s.compress_ratio << ", k " << s.topk << " (stride "
    << topk_stride << "), max_model_len " << w.max_model_len << ", " << order_name(order)
    << " order, " << space_name(space) << " space, keys " << keys_name(s.keys);
  if (logits_stride > 0) o << ", logits (stride " << logits_stride << (clean ? ", clean)" : ")");
  if (publish_blocks > 0) o << ", publishing " << publish_blocks << " x " << publish_block_size;
  if (candidate_entry) o << ", pool " << pool_blocks << " x " << pool_block_size;
  for (const std::string& x : specials) o << "; " << x;
  for (const std::string& x : corruptions) o << "; corrupt: " << x;
  return o.str();
}

}  // namespace mxi::tools::soak
