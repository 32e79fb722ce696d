#include "tensor_args.hpp"

#include <c10/util/Exception.h>
#include <torch/version.h>

#include <limits>
#include <sstream>
#include <vector>

namespace mxi_torch {
namespace {

[[noreturn]] void fail(const std::string& message) { TORCH_CHECK_VALUE(false, message); }

// Sizes and strides as integers. Under torch.compile's symbolic shapes a size is a SymInt: reading
// it guards on its value (the op's rules depend on it), which torch 2 spells guard_int.
int64_t size_of(const at::Tensor& t, int64_t d) {
#if TORCH_VERSION_MAJOR >= 2
  return t.sym_size(d).guard_int(__FILE__, __LINE__);
#else
  return t.size(d);
#endif
}

int64_t stride_of(const at::Tensor& t, int64_t d) {
#if TORCH_VERSION_MAJOR >= 2
  return t.sym_stride(d).guard_int(__FILE__, __LINE__);
#else
  return t.stride(d);
#endif
}

std::vector<int64_t> shape_of(const at::Tensor& t) {
  std::vector<int64_t> s;
  for (int64_t d = 0; d < t.dim(); ++d) s.push_back(size_of(t, d));
  return s;
}

std::string text(const std::vector<int64_t>& shape) {
  std::ostringstream out;
  out << '[';
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << ']';
  return out.str();
}

// torch's spelling of a dtype ("uint8", "bfloat16", ...), made once a dtype: the checks run on
// every call.
std::string spelled(at::ScalarType type) {
  static const std::pair<const char*, const char*> names[] = {
      {"Byte", "uint8"},     {"Char", "int8"},         {"Int", "int32"},
      {"Long", "int64"},     {"Float", "float32"},     {"BFloat16", "bfloat16"},
      {"Half", "float16"},   {"Double", "float64"},    {"Bool", "bool"},
      {"Float4_e2m1fn_x2", "float4_e2m1fn_x2"},        {"Float8_e8m0fnu", "float8_e8m0fnu"}};
  const std::string c10_name = c10::toString(type);
  for (const auto& [from, to] : names)
    if (c10_name == from) return to;
  return c10_name;
}

const std::string& dtype_name(at::ScalarType type) {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all;
    for (int i = 0; i < static_cast<int>(at::ScalarType::NumOptions); ++i)
      all.push_back(spelled(static_cast<at::ScalarType>(i)));
    return all;
  }();
  return names.at(static_cast<size_t>(type));
}

void expect_dtype(const at::Tensor& t, const char* name, std::initializer_list<const char*> allowed) {
  const std::string& got = dtype_name(t.scalar_type());
  std::string list;
  for (const char* a : allowed) {
    if (got == a) return;
    list += (list.empty() ? "" : " or ") + std::string(a);
  }
  fail(std::string(name) + " must be " + list + ", got " + got);
}

void expect_dim(const at::Tensor& t, const char* name, std::initializer_list<int64_t> dims,
                const char* form) {
  for (int64_t d : dims)
    if (t.dim() == d) return;
  fail(std::string(name) + " must be " + form + ", got shape " + text(shape_of(t)));
}

void expect_shape(const at::Tensor& t, const char* name, const std::vector<int64_t>& shape,
                  const std::string& why) {
  if (shape_of(t) != shape)
    fail(std::string(name) + " must have shape " + text(shape) + " (" + why + "), got " +
         text(shape_of(t)));
}

void expect_device(const at::Tensor& t, const char* name, const at::Tensor& like, const char* like_name) {
  if (t.device() != like.device())
    fail(std::string(name) + " must be on " + like_name + "'s device (" + like.device().str() +
         "), got " + t.device().str());
}

// Whether dims [from, dim) are packed row-major (a size-1 dimension's stride does not matter).
bool packed_from(const at::Tensor& t, int64_t from) {
  int64_t expected = 1;
  for (int64_t d = t.dim() - 1; d >= from; --d) {
    const int64_t n = size_of(t, d);
    if (n != 1 && stride_of(t, d) != expected) return false;
    expected *= n;
  }
  return true;
}

void expect_contiguous(const at::Tensor& t, const char* name) {
  if (!packed_from(t, 0))
    fail(std::string(name) + " must be contiguous (the op reads it in place, never a copy)");
}

// Rows of a 2-D tensor: the distance between rows, whose elements are contiguous.
int64_t row_stride(const at::Tensor& t, const char* name) {
  if (!packed_from(t, 1))
    fail(std::string(name) + " must have contiguous rows (stride(1) == 1), got strides [" +
         std::to_string(stride_of(t, 0)) + ", " + std::to_string(stride_of(t, 1)) + "]");
  const int64_t rows = size_of(t, 0), cols = size_of(t, 1);
  return rows > 1 ? stride_of(t, 0) : cols;
}

int narrow(int64_t v, const char* name) {
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
    fail(std::string(name) + " must fit in int32, got " + std::to_string(v));
  return static_cast<int>(v);
}

template <class T>
T* data_of(const at::Tensor& t, pointers p) {
  if (p == pointers::placeholder) return reinterpret_cast<T*>(uintptr_t{256});
  return static_cast<T*>(t.data_ptr());
}

mxi::cache_layout layout_of(const std::string& name) {
  for (const mxi::cache_layout k : {mxi::cache_layout::linear, mxi::cache_layout::mfma16,
                                    mxi::cache_layout::aiter32, mxi::cache_layout::aiter16})
    if (name == mxi::layout::name(k)) return k;
  fail("layout must be linear, mfma16, aiter32 or aiter16, got '" + name + "'");
}

mxi::format::scale_rule rule_of(const std::string& name) {
  if (name == "ceil") return mxi::format::scale_rule::ceil;
  if (name == "floor") return mxi::format::scale_rule::floor;
  fail("rule must be ceil or floor, got '" + name + "'");
}

// The paged cache: [pages, page_size, 1, D/2 + D/32], [pages, page_size, D/2 + D/32] or [pages,
// page bytes] uint8, each page's bytes contiguous; page_stride from the page dimension's stride.
template <class Byte>
mxi::basic_cache_view<Byte> cache_of(const at::Tensor& kv, int head_dim, c10::optional<int64_t> block_size,
                                     const std::string& layout, pointers p) {
  expect_dtype(kv, "kv_cache", {"uint8"});
  expect_dim(kv, "kv_cache", {2, 3, 4},
             "[pages, page_size, 1, head_dim/2 + head_dim/32], [pages, page_size, head_dim/2 + "
             "head_dim/32] or [pages, page bytes]");
  const int64_t token_bytes = head_dim / 2 + head_dim / 32;
  int64_t bs = 0;
  if (kv.dim() >= 3) {
    bs = size_of(kv, 1);
    if (block_size && *block_size != bs)
      fail("block_size must equal kv_cache.shape[1] = " + std::to_string(bs) + ", got " +
           std::to_string(*block_size));
    if (kv.dim() == 4 && size_of(kv, 2) != 1)
      fail("kv_cache.shape[2] must be 1 (one key head), got " + std::to_string(size_of(kv, 2)));
    if (size_of(kv, kv.dim() - 1) != token_bytes)
      fail("kv_cache.shape[-1] must be head_dim/2 + head_dim/32 = " + std::to_string(token_bytes) +
           " bytes a token (head_dim " + std::to_string(head_dim) + "), got " +
           std::to_string(size_of(kv, kv.dim() - 1)));
  } else {
    if (!block_size) fail("block_size is required with a 2-D kv_cache [pages, page bytes]");
    bs = *block_size;
    if (size_of(kv, 1) < bs * token_bytes)
      fail("kv_cache.shape[1] must be >= block_size * (head_dim/2 + head_dim/32) = " +
           std::to_string(bs * token_bytes) + " bytes, got " + std::to_string(size_of(kv, 1)));
  }
  if (!packed_from(kv, 1)) fail("kv_cache must hold each page's bytes contiguously");
  int64_t page_bytes = 1;
  for (int64_t d = 1; d < kv.dim(); ++d) page_bytes *= size_of(kv, d);
  mxi::basic_cache_view<Byte> c;
  c.num_pages = size_of(kv, 0);
  c.page_stride = c.num_pages > 1 ? stride_of(kv, 0) : page_bytes;
  c.block_size = narrow(bs, "block_size");
  c.head_dim = head_dim;
  c.layout = layout_of(layout);
  c.data = c.num_pages > 0 ? data_of<Byte>(kv, p) : nullptr;
  return c;
}

// The leading dims of a query tensor ([T] or [B, next_n]) flattened: T.
int64_t tokens_of(const std::vector<int64_t>& shape, size_t trailing) {
  int64_t t = 1;
  for (size_t i = 0; i + trailing < shape.size(); ++i) t *= shape[i];
  return t;
}

std::vector<int64_t> with_last(std::vector<int64_t> shape, std::initializer_list<int64_t> last) {
  shape.insert(shape.end(), last.begin(), last.end());
  return shape;
}

// The query scales beside values of shape `lead + [D/2]`: uint8 `lead + [D/32]`, or int32 `lead`
// holding the four E8M0 bytes of a D = 128 head (DeepGEMM's form; byte c of the little-endian word
// is block c's scale, as mxi's [D/32] bytes lie in memory).
void check_q_scales(const at::Tensor& scales, const char* name, const std::vector<int64_t>& lead,
                    int head_dim) {
  expect_dtype(scales, name, {"uint8", "float8_e8m0fnu", "int32"});
  if (dtype_name(scales.scalar_type()) == "int32") {
    if (head_dim != 128)
      fail(std::string(name) + " as int32 packs four E8M0 bytes a head, so head_dim must be 128, got " +
           std::to_string(head_dim));
    expect_shape(scales, name, lead, "one int32 of four E8M0 scales a head");
  } else {
    expect_shape(scales, name, with_last(lead, {head_dim / 32}), "an E8M0 byte a 32-element block");
  }
  expect_contiguous(scales, name);
}

mxi::query_view queries_of(const at::Tensor& values, const at::Tensor& scales, const at::Tensor& weights,
                           pointers p) {
  expect_dtype(values, "q_values", {"uint8", "int8", "float4_e2m1fn_x2"});
  expect_dim(values, "q_values", {3, 4}, "[T, H, head_dim/2] or [B, next_n, H, head_dim/2]");
  expect_contiguous(values, "q_values");
  const std::vector<int64_t> shape = shape_of(values);
  const std::vector<int64_t> lead(shape.begin(), shape.end() - 1);  // [.., H]
  const int head_dim = narrow(2 * shape.back(), "head_dim");
  check_q_scales(scales, "q_scales", lead, head_dim);
  expect_dtype(weights, "weights", {"float32"});
  const int64_t t = tokens_of(shape, 2), h = shape[shape.size() - 2];
  if (shape_of(weights) != lead && shape_of(weights) != std::vector<int64_t>{t, h})
    fail("weights must have shape " + text({t, h}) + " or " + text(lead) + ", got " +
         text(shape_of(weights)));
  expect_contiguous(weights, "weights");
  expect_device(scales, "q_scales", values, "q_values");
  expect_device(weights, "weights", values, "q_values");
  mxi::query_view q;
  q.num_tokens = t;
  q.num_heads = narrow(h, "num_heads");
  q.head_dim = head_dim;
  if (t > 0) {
    q.values = data_of<const uint8_t>(values, p);
    q.scales = data_of<const uint8_t>(scales, p);
    q.weights = data_of<const float>(weights, p);
  }
  return q;
}

void check_vector(const at::Tensor& v, const char* name, const char* dtype, const at::Tensor& like) {
  expect_dtype(v, name, {dtype});
  expect_dim(v, name, {1}, "1-D");
  expect_contiguous(v, name);
  expect_device(v, name, like, "kv_cache");
}

mxi::request_view requests_of(const at::Tensor& qsl, const at::Tensor& seq_lens,
                              const at::Tensor& block_table, const at::Tensor& kv, pointers p) {
  check_vector(seq_lens, "seq_lens", "int32", kv);
  check_vector(qsl, "query_start_loc", "int32", kv);
  const int64_t r = size_of(seq_lens, 0);
  if (size_of(qsl, 0) != r + 1)
    fail("query_start_loc must have R + 1 = " + std::to_string(r + 1) +
         " entries (R = seq_lens.shape[0]), got " + std::to_string(size_of(qsl, 0)));
  expect_dtype(block_table, "block_table", {"int32"});
  expect_dim(block_table, "block_table", {2}, "[R, max pages a request]");
  expect_device(block_table, "block_table", kv, "kv_cache");
  if (size_of(block_table, 0) < r)
    fail("block_table must have at least R = " + std::to_string(r) + " rows, got " +
         std::to_string(size_of(block_table, 0)));
  const int64_t cols = size_of(block_table, 1);
  if (!packed_from(block_table, 1)) fail("block_table must have contiguous rows (stride(1) == 1)");
  if (size_of(block_table, 0) > 1 && stride_of(block_table, 0) != cols)
    fail("block_table's rows must follow one another (stride(0) == shape[1] = " +
         std::to_string(cols) + "), got stride(0) " + std::to_string(stride_of(block_table, 0)) +
         ": slice whole rows of a table, not columns");
  mxi::request_view req;
  req.num_requests = narrow(r, "R (seq_lens.shape[0])");
  req.block_table_stride = cols;
  req.query_start_loc = data_of<const int32_t>(qsl, p);
  if (r > 0) req.seq_lens = data_of<const int32_t>(seq_lens, p);
  if (r > 0 && cols > 0) req.block_table = data_of<const int32_t>(block_table, p);
  return req;
}

// An int32 output of rows [>= T, >= width] written in place.
template <class T>
T* rows_of(const at::Tensor& out, const char* name, const char* dtype, int64_t tokens, int64_t width,
           const char* width_name, const at::Tensor& like, int64_t& stride, pointers p) {
  expect_dtype(out, name, {dtype});
  expect_dim(out, name, {2}, "2-D [rows >= T, columns]");
  expect_device(out, name, like, "kv_cache");
  if (size_of(out, 0) < tokens)
    fail(std::string(name) + " must have at least T = " + std::to_string(tokens) + " rows, got " +
         std::to_string(size_of(out, 0)));
  if (size_of(out, 1) < width)
    fail(std::string(name) + ".shape[1] must be >= " + width_name + " = " + std::to_string(width) +
         ", got " + std::to_string(size_of(out, 1)));
  stride = row_stride(out, name);
  return tokens > 0 ? data_of<T>(out, p) : nullptr;
}

template <class Args>
void common_args(Args& a, const indexer_tensors& t, pointers p) {
  a.queries = queries_of(t.q_values, t.q_scales, t.weights, p);
  expect_device(t.q_values, "q_values", t.kv_cache, "kv_cache");
  a.cache = cache_of<const uint8_t>(t.kv_cache, a.queries.head_dim, t.block_size, t.layout, p);
  a.requests = requests_of(t.query_start_loc, t.seq_lens, t.block_table, t.kv_cache, p);
  a.compress_ratio = narrow(t.compress_ratio, "compress_ratio");
  a.max_model_len = t.max_model_len;
  a.topk.k = narrow(t.topk, "topk");
  if (t.topk < 1) fail("topk must be >= 1, got " + std::to_string(t.topk));
  a.topk.indices = rows_of<int32_t>(t.topk_indices, "topk_indices", "int32", a.queries.num_tokens,
                                    t.topk, "topk", t.kv_cache, a.topk.stride, p);
  a.topk.space = t.cache_slots ? mxi::index_space::cache_slot : mxi::index_space::position;
  a.topk.order = t.score_order ? mxi::output_order::score : mxi::output_order::position;
  error_word_of(t.error_word, t.kv_cache, p);
}

}  // namespace

uint32_t* error_word_of(const at::Tensor& error_word, const at::Tensor& like, pointers p) {
  expect_dtype(error_word, "error_word", {"int32"});
  int64_t n = 1;
  for (int64_t d = 0; d < error_word.dim(); ++d) n *= size_of(error_word, d);
  if (n != 1) fail("error_word must hold one int32, got shape " + text(shape_of(error_word)));
  expect_device(error_word, "error_word", like, "kv_cache");
  return data_of<uint32_t>(error_word, p);
}

mxi::indexer_args indexer_args_of(const indexer_tensors& t, const c10::optional<at::Tensor>& logits,
                                  bool clean_logits, const c10::optional<at::Tensor>& candidates,
                                  int64_t candidate_block_size, pointers p) {
  mxi::indexer_args a;
  common_args(a, t, p);
  const int64_t tokens = a.queries.num_tokens;
  if (logits) {
    a.logits.data = rows_of<float>(*logits, "logits", "float32", tokens, t.max_model_len,
                                   "max_model_len", t.kv_cache, a.logits.stride, p);
    a.logits.clean = clean_logits;
  }
  if (candidates) {
    a.candidates.blocks = rows_of<int32_t>(*candidates, "candidate_blocks", "int32", tokens, 1,
                                           "1", t.kv_cache, a.candidates.stride, p);
    a.candidates.num_blocks = narrow(size_of(*candidates, 1), "candidate_blocks.shape[1]");
    a.candidates.block_size = narrow(candidate_block_size, "candidate_block_size");
  }
  return a;
}

mxi::candidate_indexer_args candidate_indexer_args_of(const indexer_tensors& t,
                                                      const at::Tensor& candidates,
                                                      int64_t candidate_block_size, pointers p) {
  mxi::candidate_indexer_args a;
  common_args(a, t, p);
  a.candidates.blocks = rows_of<const int32_t>(candidates, "candidate_blocks", "int32",
                                               a.queries.num_tokens, 1, "1", t.kv_cache,
                                               a.candidates.stride, p);
  a.candidates.num_blocks = narrow(size_of(candidates, 1), "candidate_blocks.shape[1]");
  a.candidates.block_size = narrow(candidate_block_size, "candidate_block_size");
  return a;
}

mxi::k_cache_write_args k_cache_write_args_of(const at::Tensor& k, const at::Tensor& slot_mapping,
                                              const at::Tensor& kv_cache, const at::Tensor& error_word,
                                              c10::optional<int64_t> block_size,
                                              const std::string& layout, const std::string& rule,
                                              pointers p) {
  expect_dtype(k, "k", {"float32", "bfloat16"});
  expect_dim(k, "k", {2, 3}, "[N, head_dim] or [N, 1, head_dim]");
  if (k.dim() == 3 && size_of(k, 1) != 1)
    fail("k.shape[1] must be 1 (one key head), got " + std::to_string(size_of(k, 1)));
  expect_contiguous(k, "k");
  expect_device(k, "k", kv_cache, "kv_cache");
  const int64_t n = size_of(k, 0);
  expect_dtype(slot_mapping, "slot_mapping", {"int64"});
  expect_dim(slot_mapping, "slot_mapping", {1}, "1-D [N]");
  if (size_of(slot_mapping, 0) != n)
    fail("slot_mapping must have N = k.shape[0] = " + std::to_string(n) + " entries, got " +
         std::to_string(size_of(slot_mapping, 0)));
  expect_contiguous(slot_mapping, "slot_mapping");
  expect_device(slot_mapping, "slot_mapping", kv_cache, "kv_cache");
  error_word_of(error_word, kv_cache, p);
  mxi::k_cache_write_args a;
  const int head_dim = narrow(size_of(k, k.dim() - 1), "head_dim");
  a.cache = cache_of<uint8_t>(kv_cache, head_dim, block_size, layout, p);
  a.k_type = dtype_name(k.scalar_type()) == "bfloat16" ? mxi::float_type::bf16 : mxi::float_type::f32;
  a.num_tokens = n;
  a.rule = rule_of(rule);
  if (n > 0) {
    a.k = data_of<const void>(k, p);
    a.slot_mapping = data_of<const int64_t>(slot_mapping, p);
  }
  return a;
}

mxi::q_quantize_args q_quantize_args_of(const at::Tensor& q, const at::Tensor& q_values,
                                        const at::Tensor& q_scales, const std::string& rule,
                                        pointers p) {
  expect_dtype(q, "q", {"float32", "bfloat16"});
  expect_dim(q, "q", {3, 4}, "[T, H, head_dim] or [B, next_n, H, head_dim]");
  expect_contiguous(q, "q");
  const std::vector<int64_t> shape = shape_of(q);
  const std::vector<int64_t> lead(shape.begin(), shape.end() - 1);
  const int head_dim = narrow(shape.back(), "head_dim");
  expect_dtype(q_values, "q_values", {"uint8", "int8", "float4_e2m1fn_x2"});
  expect_shape(q_values, "q_values", with_last(lead, {head_dim / 2}), "two E2M1 codes a byte");
  expect_contiguous(q_values, "q_values");
  check_q_scales(q_scales, "q_scales", lead, head_dim);
  expect_device(q_values, "q_values", q, "q");
  expect_device(q_scales, "q_scales", q, "q");
  mxi::q_quantize_args a;
  a.q_type = dtype_name(q.scalar_type()) == "bfloat16" ? mxi::float_type::bf16 : mxi::float_type::f32;
  a.num_tokens = tokens_of(shape, 2);
  a.num_heads = narrow(shape[shape.size() - 2], "num_heads");
  a.head_dim = head_dim;
  a.rule = rule_of(rule);
  if (a.num_tokens > 0) {
    a.q = data_of<const void>(q, p);
    a.values = data_of<uint8_t>(q_values, p);
    a.scales = data_of<uint8_t>(q_scales, p);
  }
  return a;
}

void throw_if_failed(const mxi::status& s) {
  if (s.ok()) return;
  const std::string message = "mxi: " + s.message();
  switch (s.code()) {
    case mxi::status_code::invalid_argument: TORCH_CHECK_VALUE(false, message);
    case mxi::status_code::unsupported: TORCH_CHECK_NOT_IMPLEMENTED(false, message);
    default: TORCH_CHECK(false, message);
  }
}

}  // namespace mxi_torch
