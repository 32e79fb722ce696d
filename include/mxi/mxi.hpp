// The host API of mxi: the sparse-attention indexer of DeepSeek-style models on a paged MXFP4 K
// cache. Compiles with a plain host compiler. Every entry point takes pointers that live where the
// chosen backend runs (host memory for the CPU backends, device memory for the GPU backend) plus
// an `execution` (backend, stream, caller-owned workspace); none allocates device memory, none
// synchronises the stream. docs/semantics.md states what each computes. The views and enums the
// arguments are made of live in mxi/types.hpp, which device code shares.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "mxi/format/mxfp4.hpp"
#include "mxi/layout/cache_layout.hpp"
#include "mxi/types.hpp"

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

/// Human-readable list of the device_error bits (mxi/types.hpp) set in a device error word ("" for
/// none).
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

/// Quantizes Q ([T][H][D], fp32 or bf16) into MXFP4 values [T][H][D/2] and scales [T][H][D/32],
/// for engines that keep quantized queries; the entry points also take float queries
/// (query_view::q) and quantize them the same way themselves.
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

/// Bytes of workspace `run_indexer` / `run_candidate_indexer` need on backend `b`: 0 for the CPU
/// backends. On the GPU, from the arguments alone (no device data is read): 8 bytes a token and
/// 4 a request of row information, plus one chunk of C rows of score scratch, C x (4 W + S + P)
/// bytes, where W is max_model_len rounded up to 4 (entry B: NCB x cbs; 0 for entry A when the
/// caller passes a logits buffer), S the select's per-row scratch (20 KB, 8 bytes per 4096
/// columns of W, 4 k more in score order, 4 W / cbs more when publishing), P each candidate
/// column's page and token (entry B: 8 NCB x cbs; 0 for entry A), and C = T split evenly
/// into the fewest chunks of at most 1.25 GiB; plus the logits plan (16 bytes a row of a chunk, 20
/// a request), for entry B the prepared pool (4 (NCB + 1) bytes a token), and for float queries
/// (queries.q) their quantized copy (T x H x (D/2 + D/32) bytes); each part 256-byte aligned. It
/// does not depend on the rows' lengths, which live on the device.
status workspace_bytes(const indexer_args& args, backend b, size_t& bytes);
status workspace_bytes(const candidate_indexer_args& args, backend b, size_t& bytes);

/// Checks everything, including what the kernels check in device memory, synchronously on the
/// host: every pointer must be host memory. For debugging; the entry points run the cheap checks
/// themselves.
status validate(const indexer_args& args);
status validate(const candidate_indexer_args& args);

}  // namespace mxi
