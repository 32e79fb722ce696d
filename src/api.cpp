// The public entry points: check the arguments (docs/semantics.md, "Bad input"), then hand
// over to the backend named by execution::where.
#include <string>

#include "backend.hpp"
#include "cpu/float_queries.hpp"

namespace mxi {
namespace {

status check_execution(const execution& exec) {
  if (exec.where != backend::reference && exec.where != backend::cpu && exec.where != backend::gpu)
    return status(status_code::invalid_argument,
                  "exec.where must be reference, cpu or gpu, got " +
                      std::to_string(static_cast<int>(exec.where)));
  if (exec.num_threads < 0)
    return status(status_code::invalid_argument,
                  "exec.num_threads must be >= 0, got " + std::to_string(exec.num_threads));
  return status();
}

/// Runs the checks, then the chosen backend's implementation of the entry point.
template <class Args, class Reference, class Cpu, class Gpu>
status dispatch(const Args& args, const execution& exec, Reference&& reference, Cpu&& cpu,
                Gpu&& gpu) {
  status s = check_execution(exec);
  if (s.ok()) s = detail::check_arguments(args);
  if (!s.ok()) return s;
  switch (exec.where) {
    case backend::reference: return reference(args, exec);
    case backend::cpu: return cpu(args, exec);
    default: {
      const status present = detail::gpu::availability();
      return present.ok() ? gpu(args, exec) : present;
    }
  }
}

}  // namespace

bool backend_available(backend b) {
  switch (b) {
    case backend::reference:
    case backend::cpu: return true;
    case backend::gpu: return detail::gpu::available();
  }
  return false;
}

backend best_backend() { return backend_available(backend::gpu) ? backend::gpu : backend::cpu; }

std::string describe_device_errors(uint32_t word) {
  static const std::pair<uint32_t, const char*> names[] = {
      {device_error_query_start_loc, "query_start_loc is not non-decreasing from 0 to T"},
      {device_error_seq_len, "a seq_lens entry is below its request's query tokens"},
      {device_error_max_model_len, "a row's visible length exceeds max_model_len"},
      {device_error_block_table, "a block-table page id is outside [0, NB) or a column is missing"},
      {device_error_slot_mapping, "a slot_mapping entry is outside [0, NB * BS)"},
  };
  std::string out;
  uint32_t known = 0;
  for (const auto& [bit, text] : names) {
    known |= bit;
    if (word & bit) out += (out.empty() ? "" : "; ") + std::string(text);
  }
  if (word & ~known) out += (out.empty() ? "" : "; ") + std::string("unknown bits set");
  return out;
}

// Float queries: the CPU backends quantize them on the host first, the GPU backend inside its
// first kernel.
status run_indexer(const indexer_args& args, const execution& exec) {
  using detail::with_host_quantized_queries;
  return dispatch(
      args, exec,
      with_host_quantized_queries(detail::reference::run_indexer, detail::reference::quantize_q),
      with_host_quantized_queries(detail::cpu::run_indexer, detail::cpu::quantize_q),
      detail::gpu::run_indexer);
}

status run_candidate_indexer(const candidate_indexer_args& args, const execution& exec) {
  using detail::with_host_quantized_queries;
  return dispatch(args, exec,
                  with_host_quantized_queries(detail::reference::run_candidate_indexer,
                                              detail::reference::quantize_q),
                  with_host_quantized_queries(detail::cpu::run_candidate_indexer,
                                              detail::cpu::quantize_q),
                  detail::gpu::run_candidate_indexer);
}

status write_k_cache(const k_cache_write_args& args, const execution& exec) {
  return dispatch(args, exec, detail::reference::write_k_cache, detail::cpu::write_k_cache,
                  detail::gpu::write_k_cache);
}

status quantize_q(const q_quantize_args& args, const execution& exec) {
  return dispatch(args, exec, detail::reference::quantize_q, detail::cpu::quantize_q,
                  detail::gpu::quantize_q);
}

namespace {

template <class Args>
status workspace_for(const Args& args, backend b, size_t& bytes) {
  bytes = 0;
  status s = detail::check_arguments(args);
  if (!s.ok()) return s;
  if (b == backend::gpu) return detail::gpu::workspace_bytes(args, bytes);
  return status();
}

}  // namespace

status workspace_bytes(const indexer_args& args, backend b, size_t& bytes) {
  return workspace_for(args, b, bytes);
}

status workspace_bytes(const candidate_indexer_args& args, backend b, size_t& bytes) {
  return workspace_for(args, b, bytes);
}

}  // namespace mxi
