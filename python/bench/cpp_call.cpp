// The C++ side of bench/op_overhead.py: mxi::run_indexer called straight from C++, `iterations`
// times, on the very tensors the op gets (their mxi arguments built once, outside the loop), on
// the current stream, and the op called from C++ through the dispatcher; each returns host
// microseconds a call. Built only with -DMXI_TORCH_BENCH=ON.
#include <ATen/Parallel.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <chrono>

#include "tensor_args.hpp"
#if MXI_TORCH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace {

double cpp_indexer_loop(const at::Tensor& q_values, const at::Tensor& q_scales,
                        const at::Tensor& weights, const at::Tensor& kv_cache,
                        const at::Tensor& query_start_loc, const at::Tensor& seq_lens,
                        const at::Tensor& block_table, const at::Tensor& topk_indices,
                        const at::Tensor& error_word,
                        [[maybe_unused]] const at::Tensor& workspace,  // CUDA only
                        int64_t topk, int64_t max_model_len, c10::optional<int64_t> block_size,
                        const std::string& layout, int64_t iterations) {
  using namespace mxi_torch;
  const indexer_tensors t{q_values,    q_scales,    weights,       kv_cache,   query_start_loc,
                          seq_lens,    block_table, topk_indices,  error_word, block_size,
                          layout,      1,           max_model_len, topk,       false,
                          false};
  const mxi::indexer_args a = indexer_args_of(t, c10::nullopt, false, c10::nullopt, 8, pointers::real);
  mxi::execution exec;
  exec.num_threads = at::get_num_threads();  // as the op's CPU kernel
  exec.error_word = error_word_of(error_word, kv_cache, pointers::real);
  if (kv_cache.is_cuda()) {
#if MXI_TORCH_CUDA
    exec.where = mxi::backend::gpu;
    exec.stream = c10::cuda::getCurrentCUDAStream(kv_cache.device().index()).stream();
    exec.workspace = workspace.data_ptr();
    exec.workspace_bytes = static_cast<size_t>(workspace.numel());
#else
    TORCH_CHECK(false, "this bench library was built without CUDA");
#endif
  }
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < iterations; ++i) throw_if_failed(mxi::run_indexer(a, exec));
  const std::chrono::duration<double, std::micro> spent = std::chrono::steady_clock::now() - start;
  return spent.count() / static_cast<double>(iterations);
}

// The op's own host work before the call, without the call: reading the tensors as mxi's
// arguments (every rule checked) and sizing the workspace, then, on CUDA, the device guard and the
// current stream. With the two loops around it, this splits the op's cost over the C++ call into
// its own work and the dispatcher's.
double cpp_op_parts_loop(const at::Tensor& q_values, const at::Tensor& q_scales,
                         const at::Tensor& weights, const at::Tensor& kv_cache,
                         const at::Tensor& query_start_loc, const at::Tensor& seq_lens,
                         const at::Tensor& block_table, const at::Tensor& topk_indices,
                         const at::Tensor& error_word, int64_t topk, int64_t max_model_len,
                         c10::optional<int64_t> block_size, const std::string& layout,
                         bool device_part, int64_t iterations) {
  using namespace mxi_torch;
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < iterations; ++i) {
    if (device_part) {
#if MXI_TORCH_CUDA
      const c10::cuda::CUDAGuard guard(kv_cache.device());
      (void)c10::cuda::getCurrentCUDAStream(kv_cache.device().index()).stream();
#endif
      continue;
    }
    const indexer_tensors t{q_values,    q_scales,    weights,       kv_cache,   query_start_loc,
                            seq_lens,    block_table, topk_indices,  error_word, block_size,
                            layout,      1,           max_model_len, topk,       false,
                            false};
    const mxi::indexer_args a =
        indexer_args_of(t, c10::nullopt, false, c10::nullopt, 8, pointers::real);
    error_word_of(error_word, kv_cache, pointers::real);
    size_t bytes = 0;
    throw_if_failed(mxi::workspace_bytes(
        a, kv_cache.is_cuda() ? mxi::backend::gpu : mxi::backend::cpu, bytes));
  }
  const std::chrono::duration<double, std::micro> spent = std::chrono::steady_clock::now() - start;
  return spent.count() / static_cast<double>(iterations);
}

// The op itself through torch's dispatcher, from C++ (no Python): what a call costs an engine's
// C++ code, and the op's own part of its cost from Python.
double cpp_op_loop(const at::Tensor& q_values, const at::Tensor& q_scales, const at::Tensor& weights,
                   const at::Tensor& kv_cache, const at::Tensor& query_start_loc,
                   const at::Tensor& seq_lens, const at::Tensor& block_table,
                   const at::Tensor& topk_indices, const at::Tensor& error_word,
                   const at::Tensor& workspace, int64_t topk, int64_t max_model_len,
                   c10::optional<int64_t> block_size, const std::string& layout, int64_t iterations) {
  using optional_tensor = const c10::optional<at::Tensor>&;
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("mxi::indexer", "")
          .typed<void(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                      const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                      const at::Tensor&, int64_t, int64_t, int64_t, c10::optional<int64_t>,
                      const std::string&, bool, bool, optional_tensor, bool, optional_tensor, int64_t,
                      optional_tensor)>();
  const c10::optional<at::Tensor> none, given = workspace;
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < iterations; ++i)
    op.call(q_values, q_scales, weights, kv_cache, query_start_loc, seq_lens, block_table,
            topk_indices, error_word, topk, max_model_len, 1, block_size, layout, false, false, none,
            false, none, 8, given);
  const std::chrono::duration<double, std::micro> spent = std::chrono::steady_clock::now() - start;
  return spent.count() / static_cast<double>(iterations);
}

}  // namespace

TORCH_LIBRARY(mxi_bench, m) {
  m.def(
      "cpp_indexer_loop(Tensor q_values, Tensor q_scales, Tensor weights, Tensor kv_cache, "
      "Tensor query_start_loc, Tensor seq_lens, Tensor block_table, Tensor(a!) topk_indices, "
      "Tensor(b!) error_word, Tensor(c!) workspace, int topk, int max_model_len, int? block_size, "
      "str layout, int iterations) -> float",
      &cpp_indexer_loop);
  m.def(
      "cpp_op_parts_loop(Tensor q_values, Tensor q_scales, Tensor weights, Tensor kv_cache, "
      "Tensor query_start_loc, Tensor seq_lens, Tensor block_table, Tensor topk_indices, "
      "Tensor error_word, int topk, int max_model_len, int? block_size, str layout, "
      "bool device_part, int iterations) -> float",
      &cpp_op_parts_loop);
  m.def(
      "cpp_op_loop(Tensor q_values, Tensor q_scales, Tensor weights, Tensor kv_cache, "
      "Tensor query_start_loc, Tensor seq_lens, Tensor block_table, Tensor(a!) topk_indices, "
      "Tensor(b!) error_word, Tensor(c!) workspace, int topk, int max_model_len, int? block_size, "
      "str layout, int iterations) -> float",
      &cpp_op_loop);
}
