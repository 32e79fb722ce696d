// Per query token: its request and visible length, after the checks the host cannot make cheaply
// (docs/semantics.md, "Bad input"). Batches of up to fused_row_requests requests take one kernel:
//   check_and_compute_rows: a block per request (1024 threads up to 128 requests, else 256:
//     row_info_config in tuning.hpp).
//     Every block reads all of query_start_loc
//     (monotone from 0 to T, or the whole batch is broken and every row is -1); then block r
//     checks request r (0 <= n_r <= seq_lens[r], and every page id its rows within max_model_len
//     need in [0, NB), keeping the first bad column, so only the rows that need it are dropped)
//     and derives its rows: position p = seq_lens[r] - n_r + i, visible = floor((p + 1) / c), then
//     visible <= max_model_len and enough block-table columns. A row that fails gets visible = -1.
// Larger batches take two, in stream order, so that no block reads all of query_start_loc:
//   check_requests: a block per request (striding over requests), the same checks, each
//     request's first bad column into the workspace; block 0 reads all of query_start_loc.
//   compute_rows: one thread per token: request by binary search of query_start_loc, then as
//     above.
// The work follows the requests' lengths, never the block table's width (max_model_len / BS
// columns). Failures OR mxi::device_error bits into the optional error word. A caller's side job
// (no_side_job: none) runs in thread blocks of its own past the row blocks of the kernel that
// writes the rows: the GPU backend quantizes a call's float queries there.
//
// Interface (gpu-topk builds against it): row_info, row_info_workspace, launch_row_info.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mxi/config.hpp"
#include "mxi/device/tuning.hpp"
#include "mxi/platform/launch.hpp"
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

/// Work a caller gives launch_row_info's kernel so that it costs no launch of its own (the GPU
/// backend's: q_quantizer.hpp's q_quantize_job): blocks(threads) thread blocks of `threads` more
/// run it, run(i) for i in [0, blocks), every thread of block i calling it after the kernel waited
/// for the one before it.
struct no_side_job {
  int64_t blocks(int) const { return 0; }
  MXI_DEVICE void run(int64_t) const {}
};

namespace detail {

inline constexpr int32_t batch_broken = 1;
/// Batches of up to this many requests: compute_rows searches query_start_loc in shared memory.
inline constexpr int shared_request_starts = row_info_config{}.shared_starts;

MXI_DEVICE void raise(uint32_t* error_word, uint32_t bits) {
  if (error_word) atomicOr(error_word, bits);
}

MXI_DEVICE int64_t pages_for(int64_t visible, int block_size) {
  return (visible + block_size - 1) / block_size;
}

/// Whether query_start_loc runs monotone from 0 to T (every entry in [0, T]): one block reads it
/// all, so that no other block needs a flag cleared before the launch.
MXI_DEVICE bool query_starts_broken(const row_info_problem& p) {
  bool bad = false;
  for (int r = threadIdx.x; r <= p.num_requests; r += blockDim.x) {
    const int32_t at = p.query_start_loc[r];
    bad |= at < 0 || at > p.num_tokens || (r == 0 && at != 0) ||
           (r == p.num_requests && at != p.num_tokens) ||
           (r < p.num_requests && p.query_start_loc[r + 1] < at);
  }
  return __syncthreads_or(bad) != 0;
}

/// Request r's entries of the batch: its rows [lo, hi) and its length. Loaded before the checks
/// that read all of query_start_loc, so that both are one round of loads.
struct request_span {
  int32_t lo, hi, len;
  MXI_DEVICE request_span(const row_info_problem& p, int r)
      : lo(p.query_start_loc[r]), hi(p.query_start_loc[r + 1]), len(p.seq_lens[r]) {}
};

/// The first bad block-table column request r's rows need (INT32_MAX when none), -1 when the
/// request itself is broken (query_start_loc known monotone and in range here), returned and left
/// in `bad`, a cell (shared or global) the block's threads combine in. Every thread of the block
/// calls it.
MXI_DEVICE int32_t check_request(const row_info_problem& p, int r, const request_span& s,
                                 int32_t* bad, uint32_t* error_word) {
  const bool lead = threadIdx.x == 0;
  if (lead) *bad = INT32_MAX;
  __syncthreads();  // before any thread's atomicMin, after the last request's read
  const int32_t lo = s.lo, hi = s.hi, len = s.len;
  // Also catches negative lengths; a request without rows breaks none, so it raises nothing
  // (docs/semantics.md, decision 8).
  if (hi > lo && len < hi - lo) {
    if (lead) {
      *bad = -1;
      raise(error_word, device_error_seq_len);
    }
    return -1;
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
  // Loads in flight a thread rather than one at a time (row_info_config::table_loads).
  constexpr int batch = row_info_config{}.table_loads;
  for (int64_t base = threadIdx.x; base < needed; base += batch * blockDim.x) {
    int32_t page[batch];
#pragma unroll
    for (int i = 0; i < batch; ++i) {
      const int64_t col = base + static_cast<int64_t>(i) * blockDim.x;
      page[i] = col < needed ? table[col] : 0;
    }
#pragma unroll
    for (int i = 0; i < batch; ++i) {
      const int64_t col = base + static_cast<int64_t>(i) * blockDim.x;
      if (col < needed && (page[i] < 0 || page[i] >= p.num_pages)) {
        atomicMin(bad, static_cast<int32_t>(col));
        raise(error_word, device_error_block_table);
      }
    }
  }
  __syncthreads();  // every thread's atomicMin is in
  return *bad;
}

/// Row t's visible length before any check: token t of request r (starts: query_start_loc) sits
/// at position seq_lens[r] - (its rows) + (t - its first row) and sees the compressed keys up to
/// it. The logits plan sizes its items by it without waiting for row_info.
MXI_DEVICE int64_t unchecked_visible(const int32_t* starts, const int32_t* seq_lens, int r,
                                     int64_t t, int compress_ratio) {
  const int64_t n = starts[r + 1] - starts[r];
  return (seq_lens[r] - n + (t - starts[r]) + 1) / compress_ratio;
}

/// Row t of request r (starts: query_start_loc), whose first bad column is `bad_column`.
MXI_DEVICE row_info row_of(const row_info_problem& p, int r, int64_t t, const int32_t* starts,
                           int32_t bad_column, uint32_t* error_word) {
  row_info out{r, -1};
  if (bad_column < 0) return out;
  const int64_t visible = unchecked_visible(starts, p.seq_lens, r, t, p.compress_ratio);
  const int64_t pages = pages_for(visible, p.block_size);
  if (visible > p.max_model_len) {
    raise(error_word, device_error_max_model_len);
  } else if (pages > p.block_table_stride) {
    raise(error_word, device_error_block_table);
  } else if (pages <= bad_column) {
    out.visible = static_cast<int32_t>(visible);
  }
  return out;
}

/// check_and_compute_rows' block for batches of up to wide_row_requests requests
/// (row_info_config::wide_threads); larger batches take launch_row_info's row_info_config::threads.
inline constexpr int request_threads = row_info_config{}.wide_threads;

/// check_requests and compute_rows in one launch, a block per request (see the file comment),
/// then the side job's blocks.
template <class Job>
__global__ __launch_bounds__(request_threads) void check_and_compute_rows(row_info_problem p,
                                                                          row_info* rows,
                                                                          uint32_t* error_word,
                                                                          Job job) {
  __shared__ int32_t bad;
  platform::wait_for_prior_grid();  // launched chained
  platform::allow_next_grid();
  const int r = static_cast<int>(blockIdx.x);
  if (r >= p.num_requests) {
    job.run(r - p.num_requests);
    return;
  }
  const request_span span(p, r);
  if (query_starts_broken(p)) {
    if (r == 0 && threadIdx.x == 0) raise(error_word, device_error_query_start_loc);
    // Tokens belong to no request: block r clears its share of the rows.
    const int64_t begin = p.num_tokens * r / p.num_requests,
                  end = p.num_tokens * (r + 1) / p.num_requests;
    for (int64_t t = begin + threadIdx.x; t < end; t += blockDim.x) rows[t] = row_info{-1, -1};
    return;
  }
  const int32_t bad_column = check_request(p, r, span, &bad, error_word);
  for (int64_t t = span.lo + threadIdx.x; t < span.hi; t += blockDim.x)
    rows[t] = row_of(p, r, t, p.query_start_loc, bad_column, error_word);
}

/// first_bad[r]: check_request's answer for request r; first_bad[R]: the batch flag, written by
/// block 0. Every entry is written here, so the workspace needs no clearing.
__global__ void check_requests(row_info_problem p, int32_t* first_bad, uint32_t* error_word) {
  platform::wait_for_prior_grid();  // launched chained
  platform::allow_next_grid();
  const bool lead = threadIdx.x == 0;
  if (blockIdx.x == 0) {
    const bool broken = query_starts_broken(p);
    if (lead) {
      first_bad[p.num_requests] = broken ? batch_broken : 0;
      if (broken) raise(error_word, device_error_query_start_loc);
    }
  }
  for (int r = blockIdx.x; r < p.num_requests; r += gridDim.x) {  // uniform over the block
    const request_span span(p, r);
    if (span.lo > span.hi || span.lo < 0 || span.hi > p.num_tokens) {  // block 0 flags the batch
      if (lead) first_bad[r] = INT32_MAX;
      continue;
    }
    check_request(p, r, span, &first_bad[r], error_word);
  }
}

/// A thread a token, then the side job's blocks.
template <class Job>
__global__ void compute_rows(row_info_problem p, const int32_t* first_bad, row_info* rows,
                             uint32_t* error_word, Job job) {
  __shared__ int32_t shared_starts[shared_request_starts + 1];
  platform::wait_for_prior_grid();  // launched chained
  platform::allow_next_grid();
  const int64_t row_blocks = (p.num_tokens + blockDim.x - 1) / blockDim.x;
  if (blockIdx.x >= row_blocks) {
    job.run(blockIdx.x - row_blocks);
    return;
  }
  // query_start_loc, searched below: from shared memory where it fits (each step of the search
  // is a dependent load), else from global memory.
  const bool staged = p.num_requests > 0 && p.num_requests <= shared_request_starts;
  if (staged) {
    for (int r = threadIdx.x; r <= p.num_requests; r += blockDim.x)
      shared_starts[r] = p.query_start_loc[r];
  }
  __syncthreads();
  const int32_t* starts = staged ? shared_starts : p.query_start_loc;
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
      if (starts[mid] <= t) lo = mid;
      else hi = mid - 1;
    }
    out = row_of(p, lo, t, starts, first_bad[lo], error_word);
  }
  rows[t] = out;
}

}  // namespace detail

/// The rows as row_info wrote them, for kernels that come after it: locate(t) is rows[t].
struct checked_rows {
  const row_info* rows;
  MXI_DEVICE row_info locate(int64_t t, int*) const { return rows[t]; }
};

/// The rows read straight from the batch, for a kernel overlapped with row_info (one block a
/// row): locate(t) gives the request whose start is the last at or before t and the length
/// unchecked_visible gives it. That is what row_info gives every row it accepts; for any other
/// row, whatever the batch holds, the request lies in [0, R) and the length is not -1 but
/// anything. Rows are counted from `row_begin`.
struct batch_rows {
  const int32_t* query_start_loc;  ///< [R + 1]
  const int32_t* seq_lens;         ///< [R]
  int num_requests;
  int compress_ratio;
  int64_t row_begin = 0;

  /// Every thread of the block calls it with the same t; `cell` is a shared int the block may
  /// use. One round of loads (the requests after the first, counted where their start is <= t),
  /// not a binary search of dependent ones.
  MXI_DEVICE row_info locate(int64_t t, int* cell) const {
    t += row_begin;
    if (num_requests <= 0) return row_info{0, -1};  // no request to read (row_info: broken)
    if (threadIdx.x == 0) *cell = 0;
    __syncthreads();
    int mine = 0;
    for (int r = 1 + static_cast<int>(threadIdx.x); r < num_requests; r += blockDim.x)
      mine += query_start_loc[r] <= t ? 1 : 0;
    if (mine != 0) atomicAdd(cell, mine);
    __syncthreads();
    const int r = *cell;
    const int64_t v = detail::unchecked_visible(query_start_loc, seq_lens, r, t, compress_ratio);
    return row_info{r, static_cast<int32_t>(v < -1 ? -1 : (v > INT32_MAX ? INT32_MAX : v))};
  }
};

/// Batches of up to this many requests take one kernel, of up to wide_row_requests in blocks of
/// request_threads (row_info_config).
inline constexpr int fused_row_requests = row_info_config{}.fused_requests;
inline constexpr int wide_row_requests = row_info_config{}.wide_requests;

/// Fills rows[0, T). `workspace` holds row_info_workspace(R) bytes; `error_word` may be null.
/// The kernels are chained (platform/launch.hpp): the calls after them start sooner. Batches of
/// 1 .. `fuse_up_to` requests take the single kernel, of up to `wide_up_to` in its wide blocks
/// (tests lower both to reach every path). `job` runs in blocks of the kernel that writes the rows
/// (when T > 0).
template <class Job = no_side_job>
inline platform::error_t launch_row_info(const row_info_problem& p, row_info* rows, void* workspace,
                                         uint32_t* error_word, platform::stream_t stream,
                                         int fuse_up_to = fused_row_requests,
                                         int wide_up_to = wide_row_requests, const Job& job = {}) {
  constexpr int threads = row_info_config{}.threads;
  constexpr int max_request_blocks = row_info_config{}.max_request_blocks;
  if (p.num_requests > 0 && p.num_requests <= fuse_up_to) {
    const unsigned block = p.num_requests <= wide_up_to ? detail::request_threads : threads;
    const auto blocks = static_cast<unsigned>(p.num_requests + job.blocks(static_cast<int>(block)));
    return platform::launch(&detail::check_and_compute_rows<Job>,
                            {dim3(blocks), block, 0, 1, /*chained=*/true}, stream, p, rows,
                            error_word, job);
  }
  auto* first_bad = static_cast<int32_t*>(workspace);
  platform::error_t e = platform::success;
  if (p.num_requests > 0) {
    const int blocks = p.num_requests < max_request_blocks ? p.num_requests : max_request_blocks;
    e = platform::launch(&detail::check_requests, {dim3(blocks), threads, 0, 1, /*chained=*/true},
                         stream, p, first_bad, error_word);
  }
  if (e == platform::success && p.num_tokens > 0) {
    const auto blocks =
        static_cast<unsigned>((p.num_tokens + threads - 1) / threads + job.blocks(threads));
    e = platform::launch(&detail::compute_rows<Job>,
                         {dim3(blocks), threads, 0, 1, /*chained=*/true}, stream, p,
                         static_cast<const int32_t*>(first_bad), rows, error_word, job);
  }
  return e;
}

}  // namespace mxi::device
