// The plain types the host API and device code share: the cache layout's name, the input views,
// the output's index space and order, the float type of raw rows and their scale rule, the device
// error bits. No functions and no std::string, so any header may include it (docs/design.md,
// "Layers").
#pragma once

#include <cstdint>

namespace mxi {

/// How a page of the cache orders its bytes (layout/cache_layout.hpp holds the addressing).
enum class cache_layout : uint8_t {
  linear,  ///< [BS tokens][D/2 values] then [BS tokens][D/32 scales] (vLLM, DeepGEMM)
  mfma16,  ///< per group of 16 tokens: [D/32 chunks][16 tokens][16 B] then [16 tokens][D/32]
  aiter32,  ///< runs of 32 tokens' values [D/32 chunks][32 tokens][16 B]; then every run's scales,
            ///< [2][32 tokens][D/64] (vLLM on ROCm, aiter's paged MXFP4 order)
  aiter16,  ///< the same with runs of 16 tokens and scales [4][16 tokens][D/128]
};

/// The element type of raw (unquantized) K or Q rows.
enum class float_type : uint8_t { f32, bf16 };

namespace format {
/// How a block's shared exponent is chosen when quantizing (the codec, format/mxfp4.hpp, applies
/// it; it is declared here so that query_view can carry it).
enum class scale_rule : uint8_t {
  ceil,   ///< smallest e with amax <= 6 * 2^e (DeepSeek V4, vLLM); never saturates
  floor,  ///< OCP: floor(log2 amax) - 2; elements above 6 after scaling saturate
};
}  // namespace format

/// What the kernels found in device-resident inputs they cannot check cheaply on the host. Rows
/// affected are written as all -1; the bits are OR-ed into `execution::error_word`.
enum device_error : uint32_t {
  device_error_none = 0,
  device_error_query_start_loc = 1u << 0,  ///< not non-decreasing from 0 to T
  device_error_seq_len = 1u << 1,          ///< seq_lens[r] < tokens of r (>= 1), or negative
  device_error_max_model_len = 1u << 2,    ///< a row's visible length exceeds max_model_len
  device_error_block_table = 1u << 3,      ///< a page id outside [0, NB), or too few columns
  device_error_slot_mapping = 1u << 4,     ///< a cache slot outside [0, NB * BS)
};

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

/// The queries and their per-head weights, dense: either MXFP4 values [T][H][D/2] and scales
/// [T][H][D/32] (E8M0), or floating-point queries q [T][H][D] (fp32 or bf16) that the call
/// quantizes itself, bit for bit as quantize_q does with the same rule; weights [T][H] fp32
/// (already holding the softmax and head scales) either way.
struct query_view {
  const uint8_t* values = nullptr;  ///< MXFP4 queries (with scales), or null when q is given
  const uint8_t* scales = nullptr;
  const float* weights = nullptr;
  int64_t num_tokens = 0;  ///< T
  int num_heads = 64;      ///< H: a multiple of 16 in [16, 128]
  int head_dim = 128;      ///< D: must equal the cache's
  const void* q = nullptr;  ///< floating-point queries, or null when values and scales are given
  float_type q_type = float_type::f32;
  format::scale_rule rule = format::scale_rule::ceil;  ///< q's quantization rule
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

/// The largest k: the GPU's score-order sort holds a row's k winners in one block (1024 threads,
/// 4 each).
inline constexpr int max_topk_k = 4096;

/// The top-k output: [T][stride] int32, K entries a row, -1 past the row's candidates.
struct topk_output {
  int32_t* indices = nullptr;
  int64_t stride = 0;  ///< >= k
  int k = 2048;        ///< 1 .. max_topk_k
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
  int num_blocks = 0;  ///< NCB
  int block_size = 8;  ///< cbs, compressed positions a block
};
using candidate_pool_output = basic_candidate_pool<int32_t>;
using candidate_pool_input = basic_candidate_pool<const int32_t>;

}  // namespace mxi
