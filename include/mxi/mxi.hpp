// The host API of mxi: the sparse-attention indexer of DeepSeek-style models on a paged MXFP4 K
// cache. Compiles with a plain host compiler. Every entry point takes pointers that live where the
// chosen backend runs (host memory for the CPU backends, device memory for the GPU backend) plus
// an `execution` (backend, stream, caller-owned workspace); none allocates device memory, none
// synchronises the stream. docs/semantics.md states what each computes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "mxi/format/mxfp4.hpp"
#include "mxi/layout/cache_layout.hpp"

namespace mxi {

// ----------------------------------------------------------------------------------------------
// Status

enum class status_code : int {
  ok = 0,
  invalid_argument,     ///< an argument breaks a rule; the message names both
  unsupported,          ///< valid, but this backend does not implement the case
  backend_unavailable,  ///< the backend was not built, or no device is present
  runtime_error,        ///< the runtime (driver, launch) failed
};

/// Result of a host call: a code and, when not ok, a message naming the argument and the rule.
class status {
 public:
  status() = default;
  status(status_code code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == status_code::ok; }
  explicit operator bool() const { return ok(); }
  status_code code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  status_code code_ = status_code::ok;
  std::string message_;
};

// ----------------------------------------------------------------------------------------------
// Where a call runs

enum class backend : uint8_t {
  reference,  ///< the float64, single-threaded ground truth (host memory)
  cpu,        ///< the threaded fp32 CPU path (host memory)
  gpu,        ///< the CUDA or HIP kernels (device memory, stream-ordered)
};

/// Whether `b` was built into this library and, for the GPU, a device is present.
bool backend_available(backend b);

/// The fastest backend available here: the GPU when present, else the threaded CPU path.
backend best_backend();

/// What the kernels found in device-resident inputs they cannot check cheaply on the host. Rows
/// affected are written as all -1; the bits are OR-ed into `execution::error_word`.
enum device_error : uint32_t {
  device_error_none = 0,
  device_error_query_start_loc = 1u << 0,  ///< not non-decreasing from 0 to T
  device_error_seq_len = 1u << 1,          ///< seq_lens[r] < tokens of r, or negative
  device_error_max_model_len = 1u << 2,    ///< a row's visible length exceeds max_model_len
  device_error_block_table = 1u << 3,      ///< a page id outside [0, NB), or too few columns
  device_error_slot_mapping = 1u << 4,     ///< a cache slot outside [0, NB * BS)
};

/// Human-readable list of the bits set in a device error word ("" for none).
std::string describe_device_errors(uint32_t word);

/// How and where a call runs. `stream` is a cudaStream_t / hipStream_t (null: the default stream).
struct execution {
  backend where = backend::cpu;
  void* stream = nullptr;
  void* workspace = nullptr;     ///< at least workspace_bytes(...) bytes, where `where` runs
  size_t workspace_bytes = 0;
  uint32_t* error_word = nullptr;  ///< optional; device_error bits are OR-ed in (same memory space)
  int num_threads = 0;             ///< CPU backend: 0 uses every core
};

// ----------------------------------------------------------------------------------------------
// Inputs

/// The paged MXFP4 K cache (one head, MQA). Page `p` starts at `data + p * page_stride`.
template <class Byte>
struct basic_cache_view {
  Byte* data = nullptr;
  int64_t num_pages = 0;    ///< NB
  int64_t page_stride = 0;  ///< bytes, >= block_size * (head_dim/2 + head_dim/32), multiple of 16
  int block_size = 64;      ///< tokens a page, BS: a multiple of 16 in [16, 1024]
  int head_dim = 128;       ///< D
  cache_layout layout = cache_layout::linear;
};
using cache_view = basic_cache_view<const uint8_t>;
using mutable_cache_view = basic_cache_view<uint8_t>;

/// MXFP4 queries and their per-head weights, dense: values [T][H][D/2], scales [T][H][D/32]
/// (E8M0), weights [T][H] fp32 (already holding the softmax and head scales).
struct query_view {
  const uint8_t* values = nullptr;
  const uint8_t* scales = nullptr;
  const float* weights = nullptr;
  int64_t num_tokens = 0;  ///< T
  int num_heads = 64;      ///< H: a multiple of 16 in [16, 128]
  int head_dim = 128;      ///< D: must equal the cache's
};

/// The batch: which query tokens and cached positions belong to which request.
struct request_view {
  const int32_t* query_start_loc = nullptr;  ///< [R + 1], 0 .. T, non-decreasing
  const int32_t* seq_lens = nullptr;         ///< [R], tokens incl. the query tokens, uncompressed
  const int32_t* block_table = nullptr;      ///< [R][block_table_stride] page ids
  int num_requests = 0;                      ///< R
  int64_t block_table_stride = 0;            ///< columns of block_table (max_blocks)
};

/// Which numbers a top-k row holds.
enum class index_space : uint8_t {
  position,    ///< request-relative compressed positions
  cache_slot,  ///< block_table[r][pos / BS] * BS + pos % BS (what FlashMLA-style kernels take)
};

/// How a top-k row is ordered.
enum class output_order : uint8_t {
  position,  ///< ascending position (bitwise reproducible whatever else is in the batch)
  score,     ///< descending score, ties by ascending position
};

/// The top-k output: [T][stride] int32, K entries a row, -1 past the row's candidates.
struct topk_output {
  int32_t* indices = nullptr;
  int64_t stride = 0;  ///< >= k
  int k = 2048;        ///< 1 .. 4096
  index_space space = index_space::position;
  output_order order = output_order::position;
};

/// Optional logits output: [T][stride] fp32. Entries [0, visible) of a row are the scores; the
/// rest are -inf when `clean`, untouched otherwise.
struct logits_output {
  float* data = nullptr;  ///< null: not written
  int64_t stride = 0;     ///< >= max_model_len
  bool clean = false;
};

/// A candidate pool: [T][stride] int32 block ids, `num_blocks` a row; block j covers compressed
/// positions [j * block_size, (j + 1) * block_size).
template <class Id>
struct basic_candidate_pool {
  Id* blocks = nullptr;
  int64_t stride = 0;
  int num_blocks = 0;   ///< NCB
  int block_size = 8;   ///< cbs, compressed positions a block
};
using candidate_pool_output = basic_candidate_pool<int32_t>;
using candidate_pool_input = basic_candidate_pool<const int32_t>;

// ----------------------------------------------------------------------------------------------
// Entry point A: score every visible position, select the top k, optionally publish candidates.

struct indexer_args {
  query_view queries;
  cache_view cache;
  request_view requests;
  int compress_ratio = 1;     ///< c >= 1: token at position p sees floor((p + 1) / c) positions
  int64_t max_model_len = 0;  ///< bound on a row's visible (compressed) length
  topk_output topk;
  logits_output logits;             ///< optional
  candidate_pool_output candidates;  ///< optional: publish when blocks != null
};

status run_indexer(const indexer_args& args, const execution& exec);

// ----------------------------------------------------------------------------------------------
// Entry point B: score only the visible positions of a candidate pool, select the top k.

struct candidate_indexer_args {
  query_view queries;
  cache_view cache;
  request_view requests;
  int compress_ratio = 1;
  int64_t max_model_len = 0;
  topk_output topk;
  candidate_pool_input candidates;  ///< ids may be unsorted, repeated, -1 or out of range
};

status run_candidate_indexer(const candidate_indexer_args& args, const execution& exec);

// ----------------------------------------------------------------------------------------------
// Writing the cache and quantizing queries

enum class float_type : uint8_t { f32, bf16 };

/// Quantizes rows of K ([N][D], fp32 or bf16) into the cache at `slot_mapping[i]` (int64,
/// page * BS + offset; -1 skips the row).
struct k_cache_write_args {
  const void* k = nullptr;
  float_type k_type = float_type::f32;
  int64_t num_tokens = 0;  ///< N
  const int64_t* slot_mapping = nullptr;
  mutable_cache_view cache;
  format::scale_rule rule = format::scale_rule::ceil;
};

status write_k_cache(const k_cache_write_args& args, const execution& exec);

/// Quantizes Q ([T][H][D], fp32 or bf16) into MXFP4 values [T][H][D/2] and scales [T][H][D/32].
struct q_quantize_args {
  const void* q = nullptr;
  float_type q_type = float_type::f32;
  int64_t num_tokens = 0;
  int num_heads = 64;
  int head_dim = 128;
  uint8_t* values = nullptr;
  uint8_t* scales = nullptr;
  format::scale_rule rule = format::scale_rule::ceil;
};

status quantize_q(const q_quantize_args& args, const execution& exec);

// ----------------------------------------------------------------------------------------------
// Workspace and validation

/// Bytes of workspace `run_indexer` needs on backend `b` (0 for the CPU backends).
status workspace_bytes(const indexer_args& args, backend b, size_t& bytes);
status workspace_bytes(const candidate_indexer_args& args, backend b, size_t& bytes);

/// Checks everything, including what the kernels check in device memory, synchronously on the
/// host: every pointer must be host memory. For debugging; the entry points run the cheap checks
/// themselves.
status validate(const indexer_args& args);
status validate(const candidate_indexer_args& args);

}  // namespace mxi
