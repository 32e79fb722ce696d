// The GPU backend (CUDA on NVIDIA, HIP on AMD): composes the device headers into the host API's
// entry points. Everything is stream-ordered on exec.stream over device pointers: no allocation
// (all scratch comes from exec.workspace), no host synchronisation, so a call can be captured in
// a CUDA/HIP graph.
//
// Entry A: row_info, then per chunk of rows: dense logits (into the caller's logits buffer when
// given, else a workspace buffer), top-k, and optionally candidate publish (block keys, then the
// same select over them). Entry B: row_info, then per chunk: candidate prep, candidate logits
// (compact rows), top-k. Chunks bound the per-row scratch to chunk_budget. Float queries
// (query_view::q) are quantized by row_info's kernel, in thread blocks of its own, into the
// workspace, where the logits kernels read them.
#include <algorithm>
#include <cstdint>
#include <string>

#include "backend.hpp"
#include "gpu/status.hpp"
#include "queries.hpp"
#include "mxi/device/args_from_views.hpp"
#include "mxi/device/candidates.hpp"
#include "mxi/device/column_maps.hpp"
#include "mxi/device/k_cache_writer.hpp"
#include "mxi/device/paged_logits.hpp"
#include "mxi/device/q_quantizer.hpp"
#include "mxi/device/row_info.hpp"
#include "mxi/device/row_lengths.hpp"
#include "mxi/device/topk.hpp"
#include "mxi/layout/cache_layout.hpp"
#include "mxi/platform/runtime.hpp"

namespace mxi::detail::gpu {
namespace {

using device::topk_shape;

/// Per-row scratch of one chunk (scores, select, publish) stays under this: a decode batch of up to
/// 256 rows at max_model_len 1M takes one chunk, publishing too (4 MiB of scores a row, as the
/// engines' own [rows][max_model_len] fp32 logits buffers are, 512 KiB of block keys at cbs 8 and
/// the select's 23 KB). With 1 GiB such a batch ran as two chunks of 128 rows: two plans, two
/// logits kernels and two selects of half the rows each.
constexpr size_t chunk_budget = size_t{5} << 28;

/// Score rows the workspace holds start on 16 bytes: the one-block top-k reads them 16 bytes at
/// a time.
constexpr int score_row_floats = 4;

/// The workspace of one call: sizes computed from the arguments alone, so workspace_bytes and
/// the entry points agree. Carved in this order.
struct plan {
  int64_t tokens = 0;
  int64_t chunk_rows = 0;
  int64_t width = 0;        ///< columns a score row may hold
  int64_t ld = 0;           ///< score row stride (the caller's logits stride when scoring there)
  bool own_scores = true;   ///< scores go to the workspace (else to args.logits)
  int64_t blocks = 0;       ///< publish: live-block columns of a row (0: no publish)
  int num_candidates = 0;   ///< NCB of the pool read or written
  int64_t slot_columns = 0;  ///< entry B: NCB x cbs, candidate columns resolved to slots
  size_t row_info_bytes = 0, checks_bytes = 0, q_values_bytes = 0, q_scales_bytes = 0;
  size_t prepared_bytes = 0, logits_plan_bytes = 0, scores_bytes = 0, block_keys_bytes = 0;
  size_t select_bytes = 0;
  size_t standin_page_bytes = 0;  ///< an empty cache's stand-in page (see readable_cache)

  size_t total() const {
    return row_info_bytes + checks_bytes + q_values_bytes + q_scales_bytes + prepared_bytes +
           logits_plan_bytes + scores_bytes + block_keys_bytes + select_bytes + standin_page_bytes;
  }
};

size_t select_bytes(const plan& p, int k, output_order order) {
  size_t bytes = device::topk_workspace_bytes(topk_shape{p.chunk_rows, p.width, k, order});
  if (p.blocks > 0)
    bytes = std::max(bytes, device::topk_workspace_bytes(
                                topk_shape{p.chunk_rows, p.blocks, p.num_candidates, output_order::position}));
  return platform::aligned_size(bytes);
}

/// Fills the chunk-dependent sizes: the largest chunk whose per-row scratch fits chunk_budget.
void size_chunks(plan& p, int num_requests, int k, output_order order) {
  if (p.tokens == 0) return;
  p.chunk_rows = 1;
  const size_t per_row = static_cast<size_t>(p.own_scores ? p.ld : 0) * sizeof(float) +
                         static_cast<size_t>(p.blocks) * sizeof(uint32_t) +
                         select_bytes(p, k, order) +
                         static_cast<size_t>(p.slot_columns) * 2 * sizeof(int32_t);
  const int64_t most = std::max<int64_t>(1, std::min<int64_t>(p.tokens, static_cast<int64_t>(chunk_budget / per_row)));
  const int64_t chunks = (p.tokens + most - 1) / most;
  p.chunk_rows = (p.tokens + chunks - 1) / chunks;  // even chunks: no short last one
  p.logits_plan_bytes = platform::aligned_size(
      device::paged_logits_workspace(p.chunk_rows, num_requests, p.slot_columns));
  p.scores_bytes = p.own_scores ? platform::aligned_size(static_cast<size_t>(p.chunk_rows * p.ld) * sizeof(float)) : 0;
  p.block_keys_bytes = platform::aligned_size(static_cast<size_t>(p.chunk_rows * p.blocks) * sizeof(uint32_t));
  p.select_bytes = select_bytes(p, k, order);
}

status unsupported(const std::string& what) { return status(status_code::unsupported, what); }

/// The logits kernels are built for D = 128.
template <class Args>
status check_supported(const Args& a) {
  if (a.cache.head_dim != 128)
    return unsupported("cache.head_dim must be 128 on the GPU backend, got " + std::to_string(a.cache.head_dim));
  return {};
}

/// One page's bytes: BS tokens of D/2 values and D/32 scales.
int64_t page_bytes(const cache_view& c) {
  return layout::page_shape{c.block_size, c.head_dim}.data_bytes();
}

template <class Args>
void size_common(plan& p, const Args& a) {
  p.tokens = a.queries.num_tokens;
  if (p.tokens == 0) return;  // nothing runs, nothing is needed
  p.row_info_bytes = platform::aligned_size(static_cast<size_t>(p.tokens) * sizeof(device::row_info));
  p.checks_bytes = platform::aligned_size(device::row_info_workspace(a.requests.num_requests));
  if (a.queries.q != nullptr) {  // float queries: their quantized copy
    p.q_values_bytes = platform::aligned_size(query_value_bytes(a.queries));
    p.q_scales_bytes = platform::aligned_size(query_scale_bytes(a.queries));
  }
  if (a.cache.num_pages == 0)
    p.standin_page_bytes = platform::aligned_size(static_cast<size_t>(page_bytes(a.cache)));
}

status make_plan(const indexer_args& a, plan& p) {
  if (status s = check_supported(a); !s.ok()) return s;
  size_common(p, a);
  p.width = a.max_model_len;
  p.own_scores = a.logits.data == nullptr;
  p.ld = p.own_scores ? align_up(p.width, score_row_floats) : a.logits.stride;
  if (a.candidates.blocks != nullptr) {
    if (a.candidates.num_blocks > max_topk_k)
      return unsupported("candidates.num_blocks must be <= " + std::to_string(max_topk_k) + " on the GPU backend, got " +
                         std::to_string(a.candidates.num_blocks));
    p.num_candidates = a.candidates.num_blocks;
    p.blocks = device::candidate_live_blocks(p.width, a.candidates.block_size);
  }
  if (!device::topk_supports(topk_shape{1, p.width, a.topk.k, a.topk.order}))
    return unsupported("max_model_len must be < 2^28 on the GPU backend, got " + std::to_string(p.width));
  size_chunks(p, a.requests.num_requests, a.topk.k, a.topk.order);
  return {};
}

status make_plan(const candidate_indexer_args& a, plan& p) {
  if (status s = check_supported(a); !s.ok()) return s;
  size_common(p, a);
  if (a.candidates.num_blocks > device::candidate_max_blocks)
    return unsupported("candidates.num_blocks must be <= " + std::to_string(device::candidate_max_blocks) +
                       " on the GPU backend, got " +
                       std::to_string(a.candidates.num_blocks));
  p.num_candidates = a.candidates.num_blocks;
  p.slot_columns = int64_t{a.candidates.num_blocks} * a.candidates.block_size;
  p.width = std::min<int64_t>(p.slot_columns, a.max_model_len);
  p.ld = align_up(p.width, score_row_floats);
  p.prepared_bytes = platform::aligned_size(static_cast<size_t>(p.tokens) * (a.candidates.num_blocks + 1) * sizeof(int32_t));
  if (!device::topk_supports(topk_shape{1, p.width, a.topk.k, a.topk.order}))
    return unsupported("candidates.num_blocks * candidates.block_size must be < 2^28 on the GPU backend");
  size_chunks(p, a.requests.num_requests, a.topk.k, a.topk.order);
  return {};
}

/// The workspace carved by a plan.
struct carved {
  device::row_info* rows;
  void* checks;
  uint8_t* q_values;  ///< float queries quantized: [T][H][D/2]
  uint8_t* q_scales;  ///< and [T][H][D/32]
  int32_t* prepared;  ///< [T][NCB] then counts [T]
  void* logits_plan;
  float* scores;
  uint32_t* block_keys;
  void* select;
  void* standin_page;

  carved(const plan& p, void* base) {
    char* c = static_cast<char*>(base);
    auto take = [&c](size_t bytes) {
      char* q = c;
      c += bytes;
      return q;
    };
    rows = reinterpret_cast<device::row_info*>(take(p.row_info_bytes));
    checks = take(p.checks_bytes);
    q_values = reinterpret_cast<uint8_t*>(take(p.q_values_bytes));
    q_scales = reinterpret_cast<uint8_t*>(take(p.q_scales_bytes));
    prepared = reinterpret_cast<int32_t*>(take(p.prepared_bytes));
    logits_plan = take(p.logits_plan_bytes);
    scores = reinterpret_cast<float*>(take(p.scores_bytes));
    block_keys = reinterpret_cast<uint32_t*>(take(p.block_keys_bytes));
    select = take(p.select_bytes);
    standin_page = take(p.standin_page_bytes);
  }
};

status check_workspace(const plan& p, const execution& exec) {
  const size_t need = p.total();
  if (exec.workspace_bytes < need)
    return status(status_code::invalid_argument,
                  "exec.workspace_bytes must be >= " + std::to_string(need) +
                      " (workspace_bytes(args, backend::gpu)) for this call, got " +
                      std::to_string(exec.workspace_bytes));
  if (need > 0 && exec.workspace == nullptr)
    return status(status_code::invalid_argument,
                  "exec.workspace must not be null: this call needs " + std::to_string(need) + " bytes");
  return {};
}

/// row_info's problem for either entry point.
template <class Args>
device::row_info_problem row_problem(const Args& a) {
  return device::row_info_problem_of(a.queries, a.cache, a.requests, a.compress_ratio, a.max_model_len);
}

device::q_quantize_problem quantize_problem(const q_quantize_args& a) {
  device::q_quantize_problem p;
  p.q = block::float_source{a.q, a.q_type == float_type::bf16};
  p.num_rows = a.num_tokens * a.num_heads;
  p.head_dim = a.head_dim;
  p.values = a.values;
  p.scales = a.scales;
  p.rule = a.rule;
  return p;
}

/// The row checks of either entry point. Float queries are quantized there too, by thread blocks
/// of the same kernel (q_quantize_job), into the workspace: no launch of their own.
template <class Args>
platform::error_t launch_rows(const Args& a, const carved& ws, uint32_t* error_word,
                              platform::stream_t stream) {
  const device::row_info_problem rows = row_problem(a);
  if (a.queries.q == nullptr)
    return device::launch_row_info(rows, ws.rows, ws.checks, error_word, stream);
  const device::q_quantize_job job{
      quantize_problem(quantize_args_of(a.queries, ws.q_values, ws.q_scales))};
  return device::launch_row_info(rows, ws.rows, ws.checks, error_word, stream,
                                 device::fused_row_requests, device::wide_row_requests, job);
}

/// The cache as the kernels that stage keys see it. Rows row_info rejects still stage keys, read
/// through page ids clamped into the cache; an empty cache (num_pages 0, data possibly null) has
/// no page to clamp to, so it is given one workspace page to read. Row checks keep the caller's
/// view: there every row that needs a page is rejected.
cache_view readable_cache(const cache_view& c, const carved& ws) {
  if (c.num_pages > 0) return c;
  cache_view r = c;
  r.data = static_cast<const uint8_t*>(ws.standin_page);
  r.num_pages = 1;
  r.page_stride = page_bytes(c);
  return r;
}

/// The logits kernels' inputs for either entry point: the caller's MXFP4 queries, or the copy of
/// its float queries that launch_rows quantizes into the workspace.
template <class Args>
device::paged_logits_args logits_args(const Args& a, const carved& ws) {
  device::paged_logits_args l = device::paged_logits_args_of(
      a.queries, readable_cache(a.cache, ws), a.requests, a.compress_ratio, ws.rows);
  if (a.queries.q != nullptr) {
    l.q_values = ws.q_values;
    l.q_scales = ws.q_scales;
  }
  return l;
}

/// Runs the select of one chunk with the index space the caller asked for.
template <class Keys, class Lengths, class Positions>
platform::error_t select_chunk(const topk_shape& shape, Keys keys, Lengths lengths, Positions positions,
                               const device::row_info* rows, const request_view& req, int block_size,
                               const topk_output& out, int64_t row_begin, void* workspace,
                               platform::stream_t stream) {
  int32_t* dst = out.indices + row_begin * out.stride;
  if (out.space == index_space::cache_slot)
    return device::launch_topk(shape, keys, lengths,
                               device::cache_slots<Positions>{positions, rows, req.block_table,
                                                              req.block_table_stride, block_size},
                               dst, out.stride, workspace, stream);
  return device::launch_topk(shape, keys, lengths, positions, dst, out.stride, workspace, stream);
}

}  // namespace

status availability() {
  int n = 0;
  const platform::error_t e = platform::get_device_count(&n);
  if (e == platform::success && n > 0) return status();
  return status(status_code::backend_unavailable,
                std::string("no GPU device is present (") +
                    (e == platform::success ? "none found" : platform::error_string(e)) + ")");
}

bool available() { return availability().ok(); }

status workspace_bytes(const indexer_args& args, size_t& bytes) {
  plan p;
  const status s = make_plan(args, p);
  bytes = s.ok() ? p.total() : 0;
  return s;
}

status workspace_bytes(const candidate_indexer_args& args, size_t& bytes) {
  plan p;
  const status s = make_plan(args, p);
  bytes = s.ok() ? p.total() : 0;
  return s;
}

status run_indexer(const indexer_args& a, const execution& exec) {
  plan p;
  if (status s = make_plan(a, p); !s.ok()) return s;
  if (status s = check_workspace(p, exec); !s.ok()) return s;
  if (p.tokens == 0) return {};
  const auto stream = static_cast<platform::stream_t>(exec.stream);
  const carved ws(p, exec.workspace);
  MXI_GPU_RETURN_IF_ERROR(launch_rows(a, ws, exec.error_word, stream));

  device::paged_logits_args logits = logits_args(a, ws);
  logits.width = p.width;
  logits.clean = !p.own_scores && a.logits.clean;
  // Before each chunk's plan: row_info, or the last chunk's selects, none of which touches the
  // logits plan or writes the batch.
  logits.plan_overlaps_prior = true;
  for (int64_t begin = 0; begin < p.tokens; begin += p.chunk_rows) {
    const int64_t rows = std::min(p.chunk_rows, p.tokens - begin);
    float* scores = p.own_scores ? ws.scores : a.logits.data + begin * a.logits.stride;
    logits.row_begin = begin;
    logits.row_end = begin + rows;
    logits.out = scores;
    logits.ld = p.ld;
    MXI_GPU_RETURN_IF_ERROR(device::launch_paged_logits(logits, ws.logits_plan, stream));

    const device::float_score_keys keys{scores, p.ld};
    const device::visible_lengths lengths{ws.rows + begin};
    MXI_GPU_RETURN_IF_ERROR(select_chunk(topk_shape{rows, p.width, a.topk.k, a.topk.order}, keys, lengths,
                              device::identity_map{}, ws.rows + begin, a.requests, a.cache.block_size,
                              a.topk, begin, ws.select, stream));
    if (p.blocks == 0) continue;
    const int cbs = a.candidates.block_size;
    MXI_GPU_RETURN_IF_ERROR(device::launch_candidate_block_keys(rows, p.blocks, keys, lengths, cbs, ws.block_keys,
                                                     p.blocks, stream));
    MXI_GPU_RETURN_IF_ERROR(device::launch_topk(
        topk_shape{rows, p.blocks, a.candidates.num_blocks, output_order::position},
        device::uint_keys{ws.block_keys, p.blocks},
        device::live_block_lengths<device::visible_lengths>{lengths, cbs}, device::identity_map{},
        a.candidates.blocks + begin * a.candidates.stride, a.candidates.stride, ws.select, stream));
  }
  return {};
}

status run_candidate_indexer(const candidate_indexer_args& a, const execution& exec) {
  plan p;
  if (status s = make_plan(a, p); !s.ok()) return s;
  if (status s = check_workspace(p, exec); !s.ok()) return s;
  if (p.tokens == 0) return {};
  const auto stream = static_cast<platform::stream_t>(exec.stream);
  const carved ws(p, exec.workspace);
  MXI_GPU_RETURN_IF_ERROR(launch_rows(a, ws, exec.error_word, stream));

  const int ncb = a.candidates.num_blocks, cbs = a.candidates.block_size;
  int32_t* ids = ws.prepared;
  int32_t* counts = ws.prepared + p.tokens * ncb;
  // Each chunk's prep overlaps the kernel before it (row_info, or the last chunk's select),
  // locating its rows in the batch itself, and writes the columns' slots where the logits kernel
  // stages from them; the plan overlaps the prep, so row_info, prep and plan overlap.
  bool slots_wanted = false;
  MXI_GPU_RETURN_IF_ERROR(device::candidate_slots_wanted(&slots_wanted));
  device::candidate_slot_sink sink;
  sink.pairs = slots_wanted ? device::candidate_slots_in(ws.logits_plan, p.chunk_rows,
                                                         a.requests.num_requests)
                            : nullptr;
  sink.block_table = a.requests.block_table;
  sink.block_table_stride = a.requests.block_table_stride;
  sink.block_size = a.cache.block_size;
  sink.num_pages = readable_cache(a.cache, ws).num_pages;

  device::paged_logits_args logits = logits_args(a, ws);
  logits.candidate_ids = ids;
  logits.candidate_stride = ncb;
  logits.candidate_counts = counts;
  logits.candidate_block_size = cbs;
  logits.candidate_slots = sink.pairs;
  logits.plan_overlaps_prior = true;  // prep writes nothing the plan reads, nor the plan's words
  logits.out = ws.scores;
  logits.ld = p.ld;
  logits.width = p.width;
  for (int64_t begin = 0; begin < p.tokens; begin += p.chunk_rows) {
    const int64_t rows = std::min(p.chunk_rows, p.tokens - begin);
    const device::batch_rows located{a.requests.query_start_loc, a.requests.seq_lens,
                                     a.requests.num_requests, a.compress_ratio, begin};
    MXI_GPU_RETURN_IF_ERROR(device::launch_candidate_prep(
        a.candidates.blocks + begin * a.candidates.stride, a.candidates.stride, rows, ncb, cbs,
        located, a.max_model_len, ids + begin * ncb, ncb, counts + begin, stream, sink,
        /*overlap_prior=*/true));
    logits.row_begin = begin;
    logits.row_end = begin + rows;
    MXI_GPU_RETURN_IF_ERROR(device::launch_paged_logits(logits, ws.logits_plan, stream));
    const int32_t* chunk_ids = ids + begin * ncb;
    MXI_GPU_RETURN_IF_ERROR(select_chunk(
        topk_shape{rows, p.width, a.topk.k, a.topk.order}, device::float_score_keys{ws.scores, p.ld},
        device::candidate_lengths{ws.rows + begin, chunk_ids, ncb, counts + begin, cbs},
        device::candidate_positions{chunk_ids, ncb, cbs}, ws.rows + begin, a.requests,
        a.cache.block_size, a.topk, begin, ws.select, stream));
  }
  return {};
}

status write_k_cache(const k_cache_write_args& a, const execution& exec) {
  device::k_cache_write_problem p;
  p.k = block::float_source{a.k, a.k_type == float_type::bf16};
  p.num_tokens = a.num_tokens;
  p.head_dim = a.cache.head_dim;
  p.slot_mapping = a.slot_mapping;
  p.cache = a.cache.data;
  p.num_pages = a.cache.num_pages;
  p.page_stride = a.cache.page_stride;
  p.block_size = a.cache.block_size;
  p.rule = a.rule;
  if (p.num_tokens == 0) return {};
  MXI_GPU_RETURN_IF_ERROR(device::launch_k_cache_write(p, a.cache.layout, exec.error_word,
                                                       static_cast<platform::stream_t>(exec.stream)));
  return {};
}

status quantize_q(const q_quantize_args& a, const execution& exec) {
  const device::q_quantize_problem p = quantize_problem(a);
  if (p.num_rows == 0) return {};
  MXI_GPU_RETURN_IF_ERROR(device::launch_quantize_q(p, static_cast<platform::stream_t>(exec.stream)));
  return {};
}

}  // namespace mxi::detail::gpu
