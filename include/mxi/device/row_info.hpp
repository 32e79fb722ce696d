// Per query token: its request and visible length, after the checks the host cannot make cheaply
// (docs/semantics.md, "Bad input"). Two kernels, in stream order:
//   check_requests: a block per request (striding over requests), its threads over the
//     block-table columns the request needs: query_start_loc monotone from 0 to T (a failure
//     poisons the whole batch), 0 <= n_r <= seq_lens[r], and every page id the request's rows
//     within max_model_len need in [0, NB) (the first bad column of each request is kept, so only
//     the rows that need it are dropped). Once per request, never per token; the work follows the
//     requests' lengths, not the block table's width (max_model_len / BS columns).
//   compute_rows: one thread per token: request by binary search of query_start_loc, position
//     p = seq_lens[r] - n_r + i, visible = floor((p + 1) / c), then visible <= max_model_len and
//     enough block-table columns. A row that fails gets visible = -1.
// Failures OR mxi::device_error bits into the optional error word.
//
// Interface (gpu-topk builds against it): row_info, row_info_workspace, launch_row_info.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mxi/config.hpp"
#include "mxi/platform/runtime.hpp"
#include "mxi/types.hpp"

namespace mxi::device {

/// What the kernels downstream know of a token. visible = -1 marks a row whose inputs are broken:
/// it must come out as all -1 (top-k) and is never scored.
struct row_info {
  int32_t request;
  int32_t visible;
};

/// The batch as row_info needs it (device pointers).
struct row_info_problem {
  const int32_t* query_start_loc = nullptr;  ///< [R + 1]
  const int32_t* seq_lens = nullptr;         ///< [R]
  const int32_t* block_table = nullptr;      ///< [R][block_table_stride]
  int num_requests = 0;
  int64_t block_table_stride = 0;
  int64_t num_tokens = 0;  ///< T
  int64_t num_pages = 0;   ///< NB
  int block_size = 64;     ///< BS
  int compress_ratio = 1;
  int64_t max_model_len = 0;
};

/// Workspace of launch_row_info besides the row_info array: per request the first bad column,
/// and one batch flag.
inline size_t row_info_workspace(int num_requests) {
  return (static_cast<size_t>(num_requests) + 1) * sizeof(int32_t);
}

namespace detail {

inline constexpr int32_t batch_broken = 1;

MXI_DEVICE void raise(uint32_t* error_word, uint32_t bits) {
  if (error_word) atomicOr(error_word, bits);
}

MXI_DEVICE int64_t pages_for(int64_t visible, int block_size) {
  return (visible + block_size - 1) / block_size;
}

/// first_bad[r]: smallest block-table column of request r holding a bad id among the columns it
/// needs (INT32_MAX when none), -1 when the request itself is broken; first_bad[R]: batch flag.
__global__ void check_requests(row_info_problem p, int32_t* first_bad, uint32_t* error_word) {
  const bool lead = threadIdx.x == 0;
  for (int r = blockIdx.x; r < p.num_requests; r += gridDim.x) {  // uniform over the block
    const int32_t lo = p.query_start_loc[r], hi = p.query_start_loc[r + 1];
    const bool starts_ok = r > 0 || lo == 0;
    const bool ends_ok = r < p.num_requests - 1 || hi == p.num_tokens;
    if (lo > hi || !starts_ok || !ends_ok || hi > p.num_tokens || lo < 0) {
      if (lead) {
        first_bad[p.num_requests] = batch_broken;
        raise(error_word, device_error_query_start_loc);
      }
      continue;
    }
    const int32_t len = p.seq_lens[r];
    if (len < hi - lo) {  // also catches negative lengths
      if (lead) {
        first_bad[r] = -1;
        raise(error_word, device_error_seq_len);
      }
      continue;
    }
    // Only the columns the request's rows within max_model_len need: a row past it fails on that
    // check alone, one bit a row as on the host. The rows see every length from the first row's
    // to the last's, so the longest such row sees min(last, max_model_len) positions.
    const int64_t first = (static_cast<int64_t>(len) - (hi - lo) + 1) / p.compress_ratio;
    const int64_t last = len / p.compress_ratio;
    int64_t needed = hi == lo || first > p.max_model_len
                         ? 0
                         : pages_for(last < p.max_model_len ? last : p.max_model_len, p.block_size);
    if (needed > p.block_table_stride) needed = p.block_table_stride;
    const int32_t* table = p.block_table + static_cast<int64_t>(r) * p.block_table_stride;
    for (int64_t col = threadIdx.x; col < needed; col += blockDim.x) {
      const int32_t page = table[col];
      if (page < 0 || page >= p.num_pages) {
        atomicMin(&first_bad[r], static_cast<int32_t>(col));
        raise(error_word, device_error_block_table);
      }
    }
  }
}

__global__ void compute_rows(row_info_problem p, const int32_t* first_bad, row_info* rows,
                             uint32_t* error_word) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= p.num_tokens) return;
  row_info out{-1, -1};
  // Tokens with no request: query_start_loc cannot run from 0 to T > 0.
  if (p.num_requests == 0 && t == 0) raise(error_word, device_error_query_start_loc);
  if (p.num_requests > 0 && first_bad[p.num_requests] == 0) {
    // Last request whose start is <= t (query_start_loc is known monotone here).
    int lo = 0, hi = p.num_requests - 1;
    while (lo < hi) {
      const int mid = (lo + hi + 1) / 2;
      if (p.query_start_loc[mid] <= t) lo = mid;
      else hi = mid - 1;
    }
    const int r = lo;
    out.request = r;
    const int32_t bad_column = first_bad[r];
    if (bad_column >= 0) {
      const int64_t n = p.query_start_loc[r + 1] - p.query_start_loc[r];
      const int64_t position = p.seq_lens[r] - n + (t - p.query_start_loc[r]);
      const int64_t visible = (position + 1) / p.compress_ratio;
      const int64_t pages = pages_for(visible, p.block_size);
      if (visible > p.max_model_len) {
        raise(error_word, device_error_max_model_len);
      } else if (pages > p.block_table_stride) {
        raise(error_word, device_error_block_table);
      } else if (pages <= bad_column) {
        out.visible = static_cast<int32_t>(visible);
      }
    }
  }
  rows[t] = out;
}

}  // namespace detail

/// Fills rows[0, T). `workspace` holds row_info_workspace(R) bytes; `error_word` may be null.
inline platform::error_t launch_row_info(const row_info_problem& p, row_info* rows,
                                         void* workspace, uint32_t* error_word,
                                         platform::stream_t stream) {
  auto* first_bad = static_cast<int32_t*>(workspace);
  // 0x7F bytes: INT32 0x7F7F7F7F, "no bad column"; then the batch flag is cleared.
  platform::error_t e = platform::memset_async(first_bad, 0x7F, sizeof(int32_t) * p.num_requests,
                                               stream);
  if (e == platform::success)
    e = platform::memset_async(first_bad + p.num_requests, 0, sizeof(int32_t), stream);
  if (e != platform::success) return e;
  constexpr int threads = 256, max_request_blocks = 4096;
  if (p.num_requests > 0) {
    const int blocks = p.num_requests < max_request_blocks ? p.num_requests : max_request_blocks;
    detail::check_requests<<<blocks, threads, 0, stream>>>(p, first_bad, error_word);
  }
  if (p.num_tokens > 0) {
    detail::compute_rows<<<static_cast<unsigned>((p.num_tokens + threads - 1) / threads), threads,
                           0, stream>>>(p, first_bad, rows, error_word);
  }
  return platform::last_error();
}

}  // namespace mxi::device
