// The cheap argument checks every entry point runs (docs/semantics.md, "Bad input") and the
// synchronous validate(). Every message reads "<field path> <rule>, got <value>".
#include <algorithm>
#include <string>
#include <vector>

#include "backend.hpp"
#include "cpu/rows.hpp"

namespace mxi {
namespace detail {
namespace {

/// Collects the first broken rule; later checks are skipped once one failed.
class rules {
 public:
  /// Records "<name> <rule>, got <got>" unless `ok`.
  rules& require(bool ok, const std::string& name, const char* rule, int64_t got) {
    if (!ok && first_.ok())
      first_ = status(status_code::invalid_argument,
                      name + " " + rule + ", got " + std::to_string(got));
    return *this;
  }
  /// Records "<name> must not be null <when>, got null" when the pointer is `needed` and null;
  /// `when` says which count needs it ("" when it is always needed).
  rules& not_null(const void* p, bool needed, const std::string& name, const std::string& when) {
    if (needed && p == nullptr && first_.ok())
      first_ = status(status_code::invalid_argument,
                      name + " must not be null" + (when.empty() ? "" : " " + when) + ", got null");
    return *this;
  }
  /// Records "<name> must be null <when>, got a pointer" when `p` is set where it must not be.
  rules& null(const void* p, bool required, const std::string& name, const std::string& when) {
    if (required && p != nullptr && first_.ok())
      first_ = status(status_code::invalid_argument,
                      name + " must be null " + when + ", got a pointer");
    return *this;
  }
  /// Records an overflow of a * b (both >= 0) in int64, naming the product and its factors.
  rules& product_fits(int64_t a, int64_t b, const std::string& what) {
    int64_t out;
    if (a >= 0 && b >= 0 && __builtin_mul_overflow(a, b, &out) && first_.ok())
      first_ = status(status_code::invalid_argument, what + " must fit in int64, got " +
                                                         std::to_string(a) + " * " +
                                                         std::to_string(b));
    return *this;
  }
  bool ok() const { return first_.ok(); }
  status result() const { return first_; }

 private:
  status first_;
};

bool multiple_in(int64_t v, int64_t m, int64_t lo, int64_t hi) {
  return v % m == 0 && v >= lo && v <= hi;
}

void check_heads(rules& r, int heads, const std::string& name) {
  r.require(multiple_in(heads, 16, 16, 128), name, "must be a multiple of 16 in [16, 128]", heads);
}

void check_head_dim(rules& r, int dim, const std::string& name) {
  r.require(multiple_in(dim, 32, 32, 512), name, "must be a multiple of 32 in [32, 512]", dim);
}

template <class Byte>
void check_cache(rules& r, const basic_cache_view<Byte>& c) {
  r.require(c.layout == cache_layout::linear || c.layout == cache_layout::mfma16 ||
                c.layout == cache_layout::aiter32 || c.layout == cache_layout::aiter16,
            "cache.layout", "must be linear, mfma16, aiter32 or aiter16", static_cast<int>(c.layout));
  r.require(multiple_in(c.block_size, 16, 16, 1024), "cache.block_size",
            "must be a multiple of 16 in [16, 1024]", c.block_size);
  check_head_dim(r, c.head_dim, "cache.head_dim");
  if (!r.ok()) return;
  // The aiter orders fill whole runs of tokens and split each token's scales evenly over lanes.
  layout::dispatch(c.layout, [&](auto l) {
    using L = decltype(l);
    const std::string with = std::string(" with layout ") + layout::name(c.layout);
    r.require(c.block_size % L::block_size_multiple == 0, "cache.block_size",
              ("must be a multiple of " + std::to_string(L::block_size_multiple) + with).c_str(),
              c.block_size);
    r.require(c.head_dim % L::head_dim_multiple == 0, "cache.head_dim",
              ("must be a multiple of " + std::to_string(L::head_dim_multiple) + with).c_str(),
              c.head_dim);
  });
  r.require(c.num_pages >= 0, "cache.num_pages", "must be >= 0", c.num_pages);
  // A cache without pages is never addressed, so its stride is not checked (empty batches).
  if (!r.ok() || c.num_pages == 0) return;
  const layout::page_shape shape{c.block_size, c.head_dim};
  r.require(c.page_stride >= shape.data_bytes(), "cache.page_stride",
            ("must be >= block_size * (head_dim/2 + head_dim/32) = " +
             std::to_string(shape.data_bytes()))
                .c_str(),
            c.page_stride);
  r.require(c.page_stride % 16 == 0, "cache.page_stride", "must be a multiple of 16",
            c.page_stride);
  r.not_null(c.data, true, "cache.data", "when cache.num_pages > 0");
  r.require(reinterpret_cast<uintptr_t>(c.data) % 16 == 0, "cache.data",
            "must be 16-byte aligned; address mod 16", reinterpret_cast<uintptr_t>(c.data) % 16);
  r.product_fits(c.num_pages, c.page_stride, "cache.num_pages * cache.page_stride");
  r.product_fits(c.num_pages, c.block_size, "cache.num_pages * cache.block_size");
}

bool valid_float_type(float_type t) { return t == float_type::f32 || t == float_type::bf16; }
bool valid_rule(format::scale_rule s) {
  return s == format::scale_rule::ceil || s == format::scale_rule::floor;
}

/// A buffer of fp32 or bf16 elements starts on an element: every backend reads whole elements.
void check_float_alignment(rules& r, const void* p, float_type type, const std::string& name) {
  const int64_t bytes = type == float_type::f32 ? 4 : 2;
  const int64_t off = static_cast<int64_t>(reinterpret_cast<uintptr_t>(p) % bytes);
  r.require(off == 0, name,
            (type == float_type::f32 ? "must be 4-byte aligned (f32 elements); address mod 4"
                                     : "must be 2-byte aligned (bf16 elements); address mod 2"),
            off);
}

void check_queries(rules& r, const query_view& q, int cache_head_dim) {
  r.require(q.num_tokens >= 0, "queries.num_tokens", "must be >= 0", q.num_tokens);
  check_heads(r, q.num_heads, "queries.num_heads");
  check_head_dim(r, q.head_dim, "queries.head_dim");
  r.require(q.head_dim == cache_head_dim, "queries.head_dim",
            ("must equal cache.head_dim = " + std::to_string(cache_head_dim)).c_str(), q.head_dim);
  r.require(valid_float_type(q.q_type), "queries.q_type", "must be f32 or bf16",
            static_cast<int>(q.q_type));
  r.require(valid_rule(q.rule), "queries.rule", "must be ceil or floor", static_cast<int>(q.rule));
  if (!r.ok()) return;
  const bool any = q.num_tokens > 0;
  // The queries come either quantized (values and scales) or in floating point (q), not both.
  if (q.q != nullptr) {
    const char* quantized_by_call = "when queries.q is set (the call quantizes q itself)";
    r.null(q.values, any, "queries.values", quantized_by_call);
    r.null(q.scales, any, "queries.scales", quantized_by_call);
    if (any) check_float_alignment(r, q.q, q.q_type, "queries.q");
  } else {
    const char* quantized = "when queries.num_tokens > 0 and queries.q is null";
    r.not_null(q.values, any, "queries.values", quantized);
    r.not_null(q.scales, any, "queries.scales", quantized);
  }
  r.not_null(q.weights, any, "queries.weights", "when queries.num_tokens > 0");
  r.product_fits(q.num_tokens, int64_t{q.num_heads} * q.head_dim, "queries.num_tokens * H * D");
}

void check_requests(rules& r, const request_view& req, int64_t num_tokens) {
  r.require(req.num_requests >= 0, "requests.num_requests", "must be >= 0", req.num_requests);
  r.require(req.block_table_stride >= 0, "requests.block_table_stride", "must be >= 0",
            req.block_table_stride);
  if (!r.ok()) return;
  r.not_null(req.query_start_loc, req.num_requests > 0 || num_tokens > 0,
             "requests.query_start_loc", "when requests.num_requests or queries.num_tokens > 0");
  r.not_null(req.seq_lens, req.num_requests > 0, "requests.seq_lens",
             "when requests.num_requests > 0");
  r.not_null(req.block_table, req.num_requests > 0 && req.block_table_stride > 0,
             "requests.block_table",
             "when requests.num_requests and requests.block_table_stride are > 0");
  r.product_fits(req.num_requests, req.block_table_stride,
                 "requests.num_requests * requests.block_table_stride");
}

// Strides and bounds of per-token data are checked only when there are tokens: a
// default-constructed call is a valid empty one.
void check_shared(rules& r, int compress_ratio, int64_t max_model_len, int64_t num_tokens) {
  r.require(compress_ratio >= 1, "compress_ratio", "must be >= 1", compress_ratio);
  r.require(max_model_len >= 1 || num_tokens == 0, "max_model_len",
            "must be >= 1 when queries.num_tokens > 0", max_model_len);
}

void check_topk(rules& r, const topk_output& o, const cache_view& cache, int64_t num_tokens) {
  r.require(o.k >= 1 && o.k <= max_topk_k, "topk.k",
            ("must be in [1, " + std::to_string(max_topk_k) + "]").c_str(), o.k);
  r.require(o.stride >= o.k || num_tokens == 0, "topk.stride",
            "must be >= topk.k when queries.num_tokens > 0", o.stride);
  r.require(o.space == index_space::position || o.space == index_space::cache_slot, "topk.space",
            "must be position or cache_slot", static_cast<int>(o.space));
  r.require(o.order == output_order::position || o.order == output_order::score, "topk.order",
            "must be position or score", static_cast<int>(o.order));
  r.not_null(o.indices, num_tokens > 0, "topk.indices", "when queries.num_tokens > 0");
  r.product_fits(num_tokens, o.stride, "queries.num_tokens * topk.stride");
  // Slots are int32 in the output.
  if (o.space == index_space::cache_slot && r.ok())
    r.require(cache.num_pages * cache.block_size <= INT32_MAX,
              "cache.num_pages * cache.block_size",
              "must be <= INT32_MAX with topk.space = cache_slot",
              cache.num_pages * cache.block_size);
}

template <class Id>
void check_pool(rules& r, const basic_candidate_pool<Id>& p, int64_t num_tokens) {
  if (num_tokens == 0) return;  // no row reads or writes the pool
  r.require(p.num_blocks >= 1, "candidates.num_blocks", "must be >= 1", p.num_blocks);
  r.require(p.block_size >= 1, "candidates.block_size", "must be >= 1", p.block_size);
  r.require(p.stride >= p.num_blocks, "candidates.stride", "must be >= candidates.num_blocks",
            p.stride);
  r.product_fits(num_tokens, p.stride, "queries.num_tokens * candidates.stride");
}

template <class Args>
void check_indexer_common(rules& r, const Args& a) {
  check_cache(r, a.cache);
  check_queries(r, a.queries, a.cache.head_dim);
  check_requests(r, a.requests, a.queries.num_tokens);
  check_shared(r, a.compress_ratio, a.max_model_len, a.queries.num_tokens);
  if (r.ok()) check_topk(r, a.topk, a.cache, a.queries.num_tokens);
}

}  // namespace

status check_arguments(const indexer_args& a) {
  rules r;
  check_indexer_common(r, a);
  if (a.logits.data != nullptr && a.queries.num_tokens > 0) {
    r.require(a.logits.stride >= a.max_model_len, "logits.stride", "must be >= max_model_len",
              a.logits.stride);
    r.product_fits(a.queries.num_tokens, a.logits.stride, "queries.num_tokens * logits.stride");
  }
  if (a.candidates.blocks != nullptr) check_pool(r, a.candidates, a.queries.num_tokens);
  return r.result();
}

status check_arguments(const candidate_indexer_args& a) {
  rules r;
  check_indexer_common(r, a);
  r.not_null(a.candidates.blocks, a.queries.num_tokens > 0, "candidates.blocks",
             "when queries.num_tokens > 0");
  check_pool(r, a.candidates, a.queries.num_tokens);
  return r.result();
}

status check_arguments(const k_cache_write_args& a) {
  rules r;
  r.require(a.num_tokens >= 0, "num_tokens", "must be >= 0", a.num_tokens);
  r.require(valid_float_type(a.k_type), "k_type", "must be f32 or bf16", static_cast<int>(a.k_type));
  r.require(valid_rule(a.rule), "rule", "must be ceil or floor", static_cast<int>(a.rule));
  check_cache(r, a.cache);
  if (!r.ok()) return r.result();
  r.not_null(a.k, a.num_tokens > 0, "k", "when num_tokens > 0");
  if (a.num_tokens > 0) check_float_alignment(r, a.k, a.k_type, "k");
  r.not_null(a.slot_mapping, a.num_tokens > 0, "slot_mapping", "when num_tokens > 0");
  r.product_fits(a.num_tokens, a.cache.head_dim, "num_tokens * cache.head_dim");
  return r.result();
}

status check_arguments(const q_quantize_args& a) {
  rules r;
  r.require(a.num_tokens >= 0, "num_tokens", "must be >= 0", a.num_tokens);
  check_heads(r, a.num_heads, "num_heads");
  check_head_dim(r, a.head_dim, "head_dim");
  r.require(valid_float_type(a.q_type), "q_type", "must be f32 or bf16", static_cast<int>(a.q_type));
  r.require(valid_rule(a.rule), "rule", "must be ceil or floor", static_cast<int>(a.rule));
  if (!r.ok()) return r.result();
  const bool any = a.num_tokens > 0;
  const char* when = "when num_tokens > 0";
  r.not_null(a.q, any, "q", when);
  if (any) check_float_alignment(r, a.q, a.q_type, "q");
  r.not_null(a.values, any, "values", when);
  r.not_null(a.scales, any, "scales", when);
  r.product_fits(a.num_tokens, int64_t{a.num_heads} * a.head_dim, "num_tokens * num_heads * head_dim");
  return r.result();
}

namespace {

/// The first entries of query_start_loc, for a message.
std::string leading_entries(const request_view& req) {
  std::string out;
  const int shown = std::min(req.num_requests + 1, 8);
  for (int i = 0; i < shown; ++i) out += (i ? ", " : "[") + std::to_string(req.query_start_loc[i]);
  return out + (shown < req.num_requests + 1 ? ", ...]" : "]");
}

/// What the first unusable block-table column covering [0, visible) of request r holds.
std::string first_bad_column(const request_view& req, const cache_view& cache, int r,
                             int64_t visible) {
  for (int64_t c = 0; c * cache.block_size < visible; ++c) {
    if (c >= req.block_table_stride)
      return "column " + std::to_string(c) + " past requests.block_table_stride = " +
             std::to_string(req.block_table_stride);
    if (page_of_column(req, cache.num_pages, r, c) < 0)
      return "requests.block_table[" + std::to_string(r) + "][" + std::to_string(c) + "] = " +
             std::to_string(req.block_table[r * req.block_table_stride + c]);
  }
  return "?";
}

/// The first device-data error of a batch, as the kernels would find it, or ok.
template <class Args>
status validate_rows(const Args& a) {
  const request_view& req = a.requests;
  const int64_t t_count = a.queries.num_tokens;
  auto fail = [](const std::string& what) { return status(status_code::invalid_argument, what); };
  if (req.query_start_loc == nullptr) return status();  // allowed for an empty batch only
  if (!query_start_loc_ok(req, t_count))
    return fail("requests.query_start_loc must be non-decreasing from 0 to queries.num_tokens = " +
                std::to_string(t_count) + ", got " + leading_entries(req));
  for (int r = 0; r < req.num_requests; ++r)
    if (!seq_len_ok(req, r))
      return fail("requests.seq_lens[" + std::to_string(r) + "] must be >= the request's " +
                  std::to_string(req.query_start_loc[r + 1] - req.query_start_loc[r]) +
                  " query tokens, got " + std::to_string(req.seq_lens[r]));
  for (int64_t t = 0; t < t_count; ++t) {
    const row_plan row = plan_row(a, t);
    const std::string token =
        "token " + std::to_string(t) + " (request " + std::to_string(row.request) + ")";
    if (row.error & device_error_max_model_len)
      return fail("max_model_len must be >= the visible length of " + token + ", got " +
                  std::to_string(a.max_model_len) + " (requests.seq_lens[" +
                  std::to_string(row.request) + "] = " + std::to_string(req.seq_lens[row.request]) +
                  ")");
    if (row.error & device_error_block_table)
      return fail("requests.block_table must hold a page id in [0, cache.num_pages = " +
                  std::to_string(a.cache.num_pages) + ") in every column covering the visible "
                  "positions of " + token + ", got " +
                  first_bad_column(req, a.cache, row.request, row.visible));
  }
  return status();
}

}  // namespace
}  // namespace detail

status validate(const indexer_args& args) {
  const status s = detail::check_arguments(args);
  return s.ok() ? detail::validate_rows(args) : s;
}

status validate(const candidate_indexer_args& args) {
  const status s = detail::check_arguments(args);
  return s.ok() ? detail::validate_rows(args) : s;
}

}  // namespace mxi
