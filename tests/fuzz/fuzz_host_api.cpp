// The host API on arbitrary argument structs, CPU backends. The input picks an entry point and
// every scalar of its arguments (mostly near the rules' edges, sometimes any value), which
// pointers are null, and the contents of every buffer. Arguments the checks reject are passed
// with pointers to zero-byte allocations, so any read is an ASan report; arguments they accept
// get buffers of exactly the sizes docs/api.md gives, so any read or write past them is one
// too. Properties: the entry point returns what the checks say; the reference and threaded
// backends agree on the device error word and on how many entries each output row holds;
// validate() fails whenever the kernels report an error and passes only when they report none;
// nothing past a row's `k` (or `num_blocks`, or `max_model_len`) is written.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#include <set>
#include <type_traits>
#include <vector>

#include "backend.hpp"
#include "fuzz_support.hpp"
#include "mxi/mxi.hpp"

using namespace mxi;

namespace {

constexpr int64_t byte_budget = int64_t{1} << 22;  // all buffers of one call together
constexpr int64_t work_budget = int64_t{1} << 20;  // T * max_model_len * H * D, for the reference

/// One time in 16: take any value instead of one near the rules' edges (rarer would leave the
/// checks unexplored, more often would leave almost no call passing them all).
bool wild(FuzzedDataProvider& in) { return in.ConsumeIntegralInRange<int>(0, 15) == 0; }

/// A scalar near the rules' edges, base + [lo, hi] (wrapping), or any value.
template <class T>
T near(FuzzedDataProvider& in, T base, T lo, T hi) {
  using U = std::make_unsigned_t<T>;
  if (wild(in)) return in.ConsumeIntegral<T>();
  return static_cast<T>(static_cast<U>(base) + static_cast<U>(in.ConsumeIntegralInRange<T>(lo, hi)));
}
template <class T>
T scalar(FuzzedDataProvider& in, T lo, T hi) {
  return near<T>(in, 0, lo, hi);
}
/// m * [lo, hi], or any value.
template <class T>
T multiple(FuzzedDataProvider& in, T m, T lo, T hi) {
  return wild(in) ? in.ConsumeIntegral<T>() : m * in.ConsumeIntegralInRange<T>(lo, hi);
}

/// A page stride: the page's data plus -16 .. 48 bytes of padding, now and then not a multiple
/// of 16, or any value.
int64_t page_stride(FuzzedDataProvider& in, int64_t data) {
  if (wild(in)) return in.ConsumeIntegral<int64_t>();
  const int64_t odd = in.ConsumeIntegralInRange<int>(0, 7) == 0 ? 8 : 0;
  return data + 16 * in.ConsumeIntegralInRange<int>(-1, 3) + odd;
}

/// Deterministic filler for buffer contents (the input is too short to hold them).
struct filler {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  int64_t in(int64_t lo, int64_t hi) {  // [lo, hi]
    return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1));
  }
};

/// Byte sizes of the buffers a call needs, summed with overflow and budget checks.
class sizes {
 public:
  /// a * b * c bytes, or 0 and over() once anything overflows or the budget is spent.
  int64_t bytes(int64_t a, int64_t b, int64_t c = 1) {
    int64_t ab, abc;
    if (a < 0 || b < 0 || c < 0 || __builtin_mul_overflow(a, b, &ab) ||
        __builtin_mul_overflow(ab, c, &abc) || abc > byte_budget - total_) {
      over_ = true;
      return 0;
    }
    total_ += abc;
    return abc;
  }
  bool over() const { return over_; }

 private:
  int64_t total_ = 0;
  bool over_ = false;
};

/// Owned buffers of exact sizes (ASan sees one byte past the end), 64-byte aligned.
class arena {
 public:
  template <class T>
  T* make(int64_t bytes, int offset = 0) {
    auto* p = static_cast<uint8_t*>(
        ::operator new(static_cast<size_t>(bytes + offset), std::align_val_t{64}));
    blocks_.push_back(p);
    return reinterpret_cast<T*>(p + offset);
  }
  ~arena() {
    for (uint8_t* p : blocks_) ::operator delete(p, std::align_val_t{64});
  }

 private:
  std::vector<uint8_t*> blocks_;
};

constexpr int32_t sentinel = 0x7EADBEEF;

/// The scalars and null flags of an indexer call (entry A or B), before buffers exist.
struct indexer_plan {
  query_view q;
  cache_view cache;
  request_view req;
  int compress_ratio = 1;
  int64_t max_model_len = 1;
  topk_output topk;
  bool logits = false, clean = false;
  int64_t logits_stride = 0;
  bool pool = false;
  int pool_blocks = 0, pool_block_size = 1;
  int64_t pool_stride = 0;
  bool misaligned = false;
  uint32_t nulls = 0;  ///< pointer_bit flags of the pointers passed as null
};

enum pointer_bit : uint32_t {
  null_cache = 1, null_values = 2, null_scales = 4, null_weights = 8, null_qsl = 16,
  null_seq = 32, null_table = 64, null_topk = 128, null_pool = 256,
};

indexer_plan read_plan(FuzzedDataProvider& in, bool entry_b) {
  indexer_plan p;
  p.cache.block_size = multiple<int>(in, 16, 0, 4);
  p.cache.head_dim = multiple<int>(in, 32, 0, 4);
  p.cache.layout = static_cast<cache_layout>(in.ConsumeIntegralInRange<int>(0, 2));
  p.cache.num_pages = scalar<int64_t>(in, -1, 8);
  const int64_t data = int64_t{p.cache.block_size} * (p.cache.head_dim / 2 + p.cache.head_dim / 32);
  p.cache.page_stride = page_stride(in, data);
  p.misaligned = in.ConsumeIntegralInRange<int>(0, 15) == 0;
  p.q.num_tokens = scalar<int64_t>(in, -1, 6);
  p.q.num_heads = multiple<int>(in, 16, 0, 3);
  p.q.head_dim = in.ConsumeIntegralInRange<int>(0, 15) == 0 ? multiple<int>(in, 32, 0, 5)
                                                           : p.cache.head_dim;
  p.req.num_requests = scalar<int>(in, -1, 4);
  p.req.block_table_stride = scalar<int64_t>(in, -1, 6);
  p.compress_ratio = scalar<int>(in, 0, 4);
  p.max_model_len = scalar<int64_t>(in, 0, 160);
  p.topk.k = scalar<int>(in, 0, 24);
  p.topk.stride = near<int64_t>(in, p.topk.k, -1, 3);
  p.topk.space = static_cast<index_space>(in.ConsumeIntegralInRange<int>(0, 2));
  p.topk.order = static_cast<output_order>(in.ConsumeIntegralInRange<int>(0, 2));
  if (!entry_b) {
    p.logits = in.ConsumeBool();
    p.clean = in.ConsumeBool();
    p.logits_stride = near<int64_t>(in, p.max_model_len, -1, 3);
  }
  p.pool = entry_b || in.ConsumeBool();
  p.pool_blocks = scalar<int>(in, 0, 6);
  p.pool_block_size = scalar<int>(in, 0, 9);
  p.pool_stride = near<int64_t>(in, p.pool_blocks, -1, 2);
  // Mostly no null pointer; sometimes one or several.
  p.nulls = in.ConsumeIntegralInRange<int>(0, 3) == 0 ? in.ConsumeIntegral<uint16_t>() : 0;
  return p;
}

/// Byte sizes of an indexer call's buffers, and the arena they come from.
struct indexer_buffers {
  arena mem;
  int64_t cache_bytes = 0, values = 0, scales = 0, weights = 0, qsl = 0, seq = 0, table = 0,
          topk = 0, logits = 0, pool = 0;
};

template <class T>
T* pointer(arena& mem, uint32_t nulls, uint32_t bit, int64_t bytes, int offset = 0) {
  return (nulls & bit) ? nullptr : mem.make<T>(bytes, offset);
}

/// The argument struct a plan describes, pointing into `b`'s buffers (or into zero-byte ones
/// when `empty`, for arguments that must be rejected before any read).
template <class Args>
Args describe(const indexer_plan& p, indexer_buffers& b, bool empty) {
  auto size = [&](int64_t n) { return empty ? 0 : n; };
  Args a;
  a.queries = p.q;
  a.cache = p.cache;
  a.requests = p.req;
  a.compress_ratio = p.compress_ratio;
  a.max_model_len = p.max_model_len;
  a.topk = p.topk;
  a.cache.data = pointer<const uint8_t>(b.mem, p.nulls, null_cache, size(b.cache_bytes), p.misaligned);
  a.queries.values = pointer<const uint8_t>(b.mem, p.nulls, null_values, size(b.values));
  a.queries.scales = pointer<const uint8_t>(b.mem, p.nulls, null_scales, size(b.scales));
  a.queries.weights = pointer<const float>(b.mem, p.nulls, null_weights, size(b.weights));
  a.requests.query_start_loc = pointer<const int32_t>(b.mem, p.nulls, null_qsl, size(b.qsl));
  a.requests.seq_lens = pointer<const int32_t>(b.mem, p.nulls, null_seq, size(b.seq));
  a.requests.block_table = pointer<const int32_t>(b.mem, p.nulls, null_table, size(b.table));
  a.topk.indices = pointer<int32_t>(b.mem, p.nulls, null_topk, size(b.topk));
  if (p.pool) {
    a.candidates.blocks = pointer<int32_t>(b.mem, p.nulls, null_pool, size(b.pool));
    a.candidates.num_blocks = p.pool_blocks;
    a.candidates.block_size = p.pool_block_size;
    a.candidates.stride = p.pool_stride;
  }
  if constexpr (std::is_same_v<Args, indexer_args>) {
    if (p.logits) {
      a.logits.data = b.mem.make<float>(size(b.logits));
      a.logits.stride = p.logits_stride;
      a.logits.clean = p.clean;
    }
  }
  return a;
}

/// Sizes every buffer of an accepted plan; false when they overflow or exceed the budgets.
bool size_buffers(const indexer_plan& p, indexer_buffers& b) {
  sizes s;
  const int64_t t = p.q.num_tokens, h = p.q.num_heads, d = p.q.head_dim;
  b.cache_bytes = s.bytes(p.cache.num_pages, p.cache.page_stride);
  b.values = s.bytes(t, h, d / 2);
  b.scales = s.bytes(t, h, d / 32);
  b.weights = s.bytes(t, h, 4);
  b.qsl = s.bytes(int64_t{p.req.num_requests} + 1, 4);
  b.seq = s.bytes(p.req.num_requests, 4);
  b.table = s.bytes(p.req.num_requests, p.req.block_table_stride, 4);
  b.topk = s.bytes(t, p.topk.stride, 4);
  b.logits = p.logits ? s.bytes(t, p.logits_stride, 4) : 0;
  b.pool = p.pool ? s.bytes(t, p.pool_stride, 4) : 0;
  int64_t work;
  return !s.over() && !__builtin_mul_overflow(t * h * d, p.max_model_len, &work) &&
         work <= work_budget;
}

/// Fills the inputs: random bytes for MXFP4 data, weights either small or any bit pattern, and
/// index arrays either well formed or raw, then a few single entries overwritten.
template <class Args>
void fill_inputs(FuzzedDataProvider& in, const indexer_plan& p, const indexer_buffers& b,
                 const Args& a) {
  filler f{in.ConsumeIntegral<uint64_t>()};
  auto bytes = [&](const void* ptr, int64_t n) {
    auto* out = const_cast<uint8_t*>(static_cast<const uint8_t*>(ptr));
    for (int64_t i = 0; ptr && i < n; ++i) out[i] = static_cast<uint8_t>(f.next());
  };
  bytes(a.cache.data, b.cache_bytes);
  bytes(a.queries.values, b.values);
  bytes(a.queries.scales, b.scales);
  auto* w = const_cast<float*>(a.queries.weights);
  const bool raw_weights = in.ConsumeBool();
  for (int64_t i = 0; w && i < b.weights / 4; ++i) {
    const uint32_t bits = static_cast<uint32_t>(f.next());
    w[i] = raw_weights ? bit_cast<float>(bits) : static_cast<float>(static_cast<int8_t>(bits)) / 16;
  }
  const int r_count = p.req.num_requests;
  const int64_t t = p.q.num_tokens, nb = p.cache.num_pages;
  auto* qsl = const_cast<int32_t*>(a.requests.query_start_loc);
  auto* seq = const_cast<int32_t*>(a.requests.seq_lens);
  auto* table = const_cast<int32_t*>(a.requests.block_table);
  const bool well_formed = in.ConsumeBool();
  if (qsl) {
    qsl[0] = 0;
    for (int r = 1; r <= r_count; ++r)
      qsl[r] = static_cast<int32_t>(well_formed ? (r == r_count ? t : f.in(qsl[r - 1], t))
                                                : f.in(-2, t + 2));
  }
  // max_model_len may be any value here (negative ones are refused later): clamp before the
  // product, which overflowed for values near INT64_MIN (found by a 30-minute run).
  const int64_t longest = std::clamp<int64_t>(p.max_model_len, 0, 1 << 20) * std::max(p.compress_ratio, 1);
  for (int r = 0; seq && r < r_count; ++r) {
    const int64_t n = qsl ? int64_t{qsl[r + 1]} - qsl[r] : 0;
    seq[r] = static_cast<int32_t>(well_formed ? std::max<int64_t>(n, 0) + f.in(0, longest)
                                             : f.in(-3, longest + 3));
  }
  for (int64_t i = 0; table && i < b.table / 4; ++i)
    table[i] = static_cast<int32_t>(well_formed && nb > 0 ? f.in(0, std::min<int64_t>(nb, 1 << 20) - 1)
                                                          : f.in(-2, std::min<int64_t>(nb, 1 << 20) + 1));
  int32_t* pool = nullptr;
  if constexpr (std::is_same_v<Args, candidate_indexer_args>) pool = const_cast<int32_t*>(a.candidates.blocks);
  for (int64_t i = 0; pool && i < b.pool / 4; ++i) pool[i] = static_cast<int32_t>(f.in(-2, 24));
  // A few entries of any value, anywhere.
  for (int pokes = in.ConsumeIntegralInRange<int>(0, 3); pokes > 0; --pokes) {
    const int which = in.ConsumeIntegralInRange<int>(0, 3);
    const int32_t value = in.ConsumeIntegral<int32_t>();
    int32_t* target = which == 0 ? qsl : which == 1 ? seq : which == 2 ? table : pool;
    const int64_t n = which == 0 ? b.qsl / 4 : which == 1 ? b.seq / 4 : which == 2 ? b.table / 4 : b.pool / 4;
    if (target && n > 0) target[in.ConsumeIntegralInRange<int64_t>(0, n - 1)] = value;
  }
}

/// Prefills the outputs with a sentinel, so unwritten entries show.
template <class Args>
void prefill_outputs(const indexer_buffers& b, const Args& a) {
  if (a.topk.indices) std::fill(a.topk.indices, a.topk.indices + b.topk / 4, sentinel);
  if constexpr (std::is_same_v<Args, indexer_args>) {
    if (a.candidates.blocks) std::fill(a.candidates.blocks, a.candidates.blocks + b.pool / 4, sentinel);
    if (a.logits.data) std::fill(a.logits.data, a.logits.data + b.logits / 4, 1234.5f);
  }
}

template <class Args>
status call(const Args& a, const execution& e) {
  if constexpr (std::is_same_v<Args, indexer_args>)
    return run_indexer(a, e);
  else
    return run_candidate_indexer(a, e);
}

/// Entries of a top-k row that are not -1, checked for range and for nothing past k.
template <class Args>
int64_t check_topk_row(const Args& a, int64_t t) {
  const int32_t* row = a.topk.indices + t * a.topk.stride;
  const int64_t slots = a.cache.num_pages * a.cache.block_size;
  int64_t n = 0;
  for (int i = 0; i < a.topk.k; ++i) {
    FUZZ_REQUIRE(row[i] != sentinel);
    if (row[i] == -1) continue;
    FUZZ_REQUIRE(n == i);  // entries first, then -1
    ++n;
    FUZZ_REQUIRE(row[i] >= 0);
    FUZZ_REQUIRE(a.topk.space == index_space::cache_slot ? row[i] < slots : row[i] < a.max_model_len);
  }
  for (int64_t i = a.topk.k; i < a.topk.stride; ++i) FUZZ_REQUIRE(row[i] == sentinel);
  return n;
}

template <class Args>
void run_indexer_case(FuzzedDataProvider& in) {
  const indexer_plan p = read_plan(in, std::is_same_v<Args, candidate_indexer_args>);
  execution bad_exec;
  bad_exec.where = static_cast<backend>(in.ConsumeIntegralInRange<int>(0, 3));
  bad_exec.num_threads = in.ConsumeIntegralInRange<int>(-1, 2);
  const bool exec_ok = static_cast<int>(bad_exec.where) <= 2 && bad_exec.num_threads >= 0;

  indexer_buffers empty;
  const Args rejected = describe<Args>(p, empty, true);
  const status checks = detail::check_arguments(rejected);
  size_t bytes = 1;
  const status sized = workspace_bytes(rejected, backend::cpu, bytes);
  FUZZ_REQUIRE(sized.code() == checks.code() && sized.message() == checks.message());
  if (!checks.ok()) {
    FUZZ_REQUIRE(checks.code() == status_code::invalid_argument && !checks.message().empty());
    uint32_t word = 0;
    bad_exec.error_word = &word;
    const status s = call(rejected, bad_exec);
    FUZZ_REQUIRE(s.code() == status_code::invalid_argument && word == 0);
    if (exec_ok) FUZZ_REQUIRE(s.message() == checks.message());
    return;
  }
  FUZZ_REQUIRE(bytes == 0);

  indexer_buffers b;
  if (!size_buffers(p, b)) return;
  const Args ref = describe<Args>(p, b, false);
  fill_inputs(in, p, b, ref);
  Args cpu = ref;  // same inputs, its own outputs
  cpu.topk.indices = cpu.topk.indices ? b.mem.make<int32_t>(b.topk) : nullptr;
  if constexpr (std::is_same_v<Args, indexer_args>) {
    if (cpu.candidates.blocks) cpu.candidates.blocks = b.mem.make<int32_t>(b.pool);
    if (cpu.logits.data) cpu.logits.data = b.mem.make<float>(b.logits);
  }
  prefill_outputs(b, ref);
  prefill_outputs(b, cpu);

  if (!exec_ok) FUZZ_REQUIRE(call(ref, bad_exec).code() == status_code::invalid_argument);
  if (exec_ok && bad_exec.where == backend::gpu)  // a CPU-only build
    FUZZ_REQUIRE(call(ref, bad_exec).code() == status_code::backend_unavailable);
  uint32_t ref_word = 0, cpu_word = 0;
  execution e;
  e.where = backend::reference;
  e.error_word = &ref_word;
  FUZZ_REQUIRE(call(ref, e).ok());
  e.where = backend::cpu;
  e.error_word = &cpu_word;
  e.num_threads = std::max(bad_exec.num_threads, 0);
  FUZZ_REQUIRE(call(cpu, e).ok());
  FUZZ_REQUIRE(ref_word == cpu_word);
  const status valid = validate(ref);
  if (valid.ok()) FUZZ_REQUIRE(ref_word == 0);
  if (ref_word != 0) FUZZ_REQUIRE(valid.code() == status_code::invalid_argument);

  for (int64_t t = 0; t < p.q.num_tokens; ++t) {
    const int64_t n = check_topk_row(ref, t);
    FUZZ_REQUIRE(check_topk_row(cpu, t) == n);
    // Rows listing every candidate in position order are fully determined.
    if (n < p.topk.k && p.topk.order == output_order::position)
      FUZZ_REQUIRE(std::equal(ref.topk.indices + t * p.topk.stride,
                              ref.topk.indices + t * p.topk.stride + p.topk.k,
                              cpu.topk.indices + t * p.topk.stride));
    if constexpr (std::is_same_v<Args, indexer_args>) {
      if (ref.candidates.blocks) {
        const int32_t* r = ref.candidates.blocks + t * p.pool_stride;
        const int32_t* c = cpu.candidates.blocks + t * p.pool_stride;
        FUZZ_REQUIRE(std::count(r, r + p.pool_blocks, -1) == std::count(c, c + p.pool_blocks, -1));
        for (int64_t i = p.pool_blocks; i < p.pool_stride; ++i)
          FUZZ_REQUIRE(r[i] == sentinel && c[i] == sentinel);
      }
      if (ref.logits.data)
        for (int64_t i = p.max_model_len; i < p.logits_stride; ++i)
          FUZZ_REQUIRE(ref.logits.data[t * p.logits_stride + i] == 1234.5f &&
                       cpu.logits.data[t * p.logits_stride + i] == 1234.5f);
    }
  }
}

void run_writer_case(FuzzedDataProvider& in) {
  k_cache_write_args a;
  a.num_tokens = scalar<int64_t>(in, -1, 8);
  a.k_type = static_cast<float_type>(in.ConsumeIntegralInRange<int>(0, 2));
  a.rule = static_cast<format::scale_rule>(in.ConsumeIntegralInRange<int>(0, 2));
  a.cache.block_size = multiple<int>(in, 16, 0, 4);
  a.cache.head_dim = multiple<int>(in, 32, 0, 5);
  a.cache.layout = static_cast<cache_layout>(in.ConsumeIntegralInRange<int>(0, 2));
  a.cache.num_pages = scalar<int64_t>(in, -1, 6);
  a.cache.page_stride =
      page_stride(in, int64_t{a.cache.block_size} * (a.cache.head_dim / 2 + a.cache.head_dim / 32));
  const uint32_t nulls = in.ConsumeIntegralInRange<int>(0, 3) == 0 ? in.ConsumeIntegral<uint8_t>() : 0;

  arena mem;
  a.k = (nulls & 1) ? nullptr : mem.make<float>(0);
  a.slot_mapping = (nulls & 2) ? nullptr : mem.make<int64_t>(0);
  a.cache.data = (nulls & 4) ? nullptr : mem.make<uint8_t>(0);
  const status checks = detail::check_arguments(a);
  if (!checks.ok()) {
    execution e;
    FUZZ_REQUIRE(write_k_cache(a, e).message() == checks.message());
    return;
  }
  sizes s;
  const int64_t elem = a.k_type == float_type::f32 ? 4 : 2;
  const int64_t k_bytes = s.bytes(a.num_tokens, a.cache.head_dim, elem);
  const int64_t slot_bytes = s.bytes(a.num_tokens, 8);
  const int64_t cache_bytes = s.bytes(a.cache.num_pages, a.cache.page_stride);
  if (s.over()) return;
  filler f{in.ConsumeIntegral<uint64_t>()};
  if (a.k) {
    auto* k = mem.make<uint8_t>(k_bytes);
    const bool raw = in.ConsumeBool();
    for (int64_t i = 0; i < k_bytes; ++i)
      k[i] = raw || i % 2 == 0 ? static_cast<uint8_t>(f.next()) : static_cast<uint8_t>(f.in(0x38, 0x44));
    a.k = k;
  }
  const int64_t slots = a.cache.num_pages * a.cache.block_size;
  std::set<int64_t> seen;
  bool unique = true;
  if (a.slot_mapping) {
    auto* m = mem.make<int64_t>(slot_bytes);
    for (int64_t i = 0; i < a.num_tokens; ++i) {
      m[i] = in.ConsumeIntegralInRange<int>(0, 7) == 0 ? in.ConsumeIntegral<int64_t>()
                                                      : f.in(-2, std::min<int64_t>(slots, 1 << 20) + 1);
      if (m[i] != -1) unique = unique && seen.insert(m[i]).second;
    }
    a.slot_mapping = m;
  }
  uint8_t* ref_cache = a.cache.data ? mem.make<uint8_t>(cache_bytes) : nullptr;
  uint8_t* cpu_cache = a.cache.data ? mem.make<uint8_t>(cache_bytes) : nullptr;
  for (int64_t i = 0; ref_cache && i < cache_bytes; ++i) ref_cache[i] = cpu_cache[i] = static_cast<uint8_t>(f.next());

  uint32_t ref_word = 0, cpu_word = 0;
  execution e;
  e.where = backend::reference;
  e.error_word = &ref_word;
  a.cache.data = ref_cache;
  FUZZ_REQUIRE(write_k_cache(a, e).ok());
  e.where = backend::cpu;
  e.error_word = &cpu_word;
  a.cache.data = cpu_cache;
  FUZZ_REQUIRE(write_k_cache(a, e).ok());
  FUZZ_REQUIRE(ref_word == cpu_word);
  if (unique && ref_cache) FUZZ_REQUIRE(std::memcmp(ref_cache, cpu_cache, cache_bytes) == 0);
}

void run_quantizer_case(FuzzedDataProvider& in) {
  q_quantize_args a;
  a.num_tokens = scalar<int64_t>(in, -1, 6);
  a.num_heads = multiple<int>(in, 16, 0, 3);
  a.head_dim = multiple<int>(in, 32, 0, 5);
  a.q_type = static_cast<float_type>(in.ConsumeIntegralInRange<int>(0, 2));
  a.rule = static_cast<format::scale_rule>(in.ConsumeIntegralInRange<int>(0, 2));
  const uint32_t nulls = in.ConsumeIntegralInRange<int>(0, 3) == 0 ? in.ConsumeIntegral<uint8_t>() : 0;
  arena mem;
  a.q = (nulls & 1) ? nullptr : mem.make<float>(0);
  a.values = (nulls & 2) ? nullptr : mem.make<uint8_t>(0);
  a.scales = (nulls & 4) ? nullptr : mem.make<uint8_t>(0);
  const status checks = detail::check_arguments(a);
  if (!checks.ok()) {
    execution e;
    FUZZ_REQUIRE(quantize_q(a, e).message() == checks.message());
    return;
  }
  sizes s;
  const int64_t rows = a.num_tokens * a.num_heads;
  const int64_t q_bytes = s.bytes(rows, a.head_dim, a.q_type == float_type::f32 ? 4 : 2);
  const int64_t v_bytes = s.bytes(rows, a.head_dim / 2);
  const int64_t s_bytes = s.bytes(rows, a.head_dim / 32);
  if (s.over()) return;
  filler f{in.ConsumeIntegral<uint64_t>()};
  if (a.q) {
    auto* q = mem.make<uint8_t>(q_bytes);
    for (int64_t i = 0; i < q_bytes; ++i) q[i] = static_cast<uint8_t>(f.next());
    a.q = q;
  }
  q_quantize_args cpu = a;
  if (a.values) {
    a.values = mem.make<uint8_t>(v_bytes);
    cpu.values = mem.make<uint8_t>(v_bytes);
  }
  if (a.scales) {
    a.scales = mem.make<uint8_t>(s_bytes);
    cpu.scales = mem.make<uint8_t>(s_bytes);
  }
  execution e;
  e.where = backend::reference;
  FUZZ_REQUIRE(quantize_q(a, e).ok());
  e.where = backend::cpu;
  FUZZ_REQUIRE(quantize_q(cpu, e).ok());
  if (rows > 0) {
    FUZZ_REQUIRE(std::memcmp(a.values, cpu.values, v_bytes) == 0);
    FUZZ_REQUIRE(std::memcmp(a.scales, cpu.scales, s_bytes) == 0);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  switch (in.ConsumeIntegralInRange<int>(0, 3)) {
    case 0: run_indexer_case<indexer_args>(in); break;
    case 1: run_indexer_case<candidate_indexer_args>(in); break;
    case 2: run_writer_case(in); break;
    default: run_quantizer_case(in); break;
  }
  return 0;
}
