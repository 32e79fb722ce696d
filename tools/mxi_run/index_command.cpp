#include <stdexcept>
#include <type_traits>
#include <vector>

#include "commands.hpp"
#include "gpu_run.hpp"
#include "index_case.hpp"
#include "staged_output.hpp"

namespace mxi::tools {
namespace {

// Turns a failed status into the exception that gives the right exit status.
void throw_if_failed(const status& s, const std::string& where) {
  if (s.ok()) return;
  if (s.code() == status_code::invalid_argument) throw input_error(where + ": " + s.message());
  throw std::runtime_error(s.message());
}

// Runs the call on a host backend, or through the tools' GPU door; returns the device error word.
template <class Args>
uint32_t run_call(const Args& args, backend where) {
  constexpr bool single = std::is_same_v<Args, indexer_args>;
  uint32_t word = 0;
  if (where == backend::gpu) {
    std::vector<double> seconds;
    if constexpr (single)
      throw_if_failed(run_indexer_on_gpu(args, 1, seconds, word), "gpu");
    else
      throw_if_failed(run_candidate_indexer_on_gpu(args, 1, seconds, word), "gpu");
    return word;
  }
  size_t bytes = 0;
  throw_if_failed(workspace_bytes(args, where, bytes), "workspace");
  std::vector<unsigned char> workspace(bytes);
  execution exec;
  exec.where = where;
  exec.workspace = workspace.data();
  exec.workspace_bytes = bytes;
  exec.error_word = &word;
  if constexpr (single)
    throw_if_failed(run_indexer(args, exec), "run");
  else
    throw_if_failed(run_candidate_indexer(args, exec), "run");
  return word;
}

// The host buffers the outputs land in.
struct outputs {
  std::vector<int32_t> topk, published;
  std::vector<float> logits;
};

// Describes the call; output pointers are placeholders until validate() has vouched for the
// sizes they are allocated from (T * topk and T * max_model_len come from the input files).
template <class Args>
Args describe_call(const index_case& c) {
  static int32_t placeholder_index;
  static float placeholder_logit;
  const problem& p = c.prob;
  Args args;
  args.queries = c.queries();
  args.cache = c.cache();
  args.requests = c.requests();
  args.compress_ratio = p.compress_ratio;
  args.max_model_len = p.max_model_len;
  args.topk.indices = &placeholder_index;
  args.topk.stride = p.topk;
  args.topk.k = p.topk;
  args.topk.space = p.space;
  args.topk.order = p.order;
  const int ncb = c.num_candidate_blocks();
  if constexpr (std::is_same_v<Args, candidate_indexer_args>) {
    args.candidates.blocks = c.candidate_blocks.data<int32_t>();
  } else {
    args.candidates.blocks = ncb > 0 ? &placeholder_index : nullptr;
    args.logits.data = &placeholder_logit;
    args.logits.stride = p.max_model_len;
    args.logits.clean = true;
  }
  args.candidates.stride = ncb;
  args.candidates.num_blocks = ncb;
  args.candidates.block_size = p.candidate_block_size;
  return args;
}

// Validates, allocates the outputs, runs; returns the device error word.
template <class Args>
uint32_t validate_and_run(Args args, const std::filesystem::path& case_dir, backend where,
                          bool write_logits, outputs& out) {
  // The synchronous full check, so bad values in the tensors exit 2 before anything runs.
  throw_if_failed(validate(args), case_dir.string());
  const auto t = static_cast<size_t>(args.queries.num_tokens);
  out.topk.resize(t * static_cast<size_t>(args.topk.k));
  args.topk.indices = out.topk.data();
  if constexpr (std::is_same_v<Args, indexer_args>) {
    if (args.candidates.blocks) {
      out.published.resize(t * static_cast<size_t>(args.candidates.num_blocks));
      args.candidates.blocks = out.published.data();
    }
    if (write_logits) out.logits.resize(t * static_cast<size_t>(args.logits.stride));
    args.logits.data = write_logits ? out.logits.data() : nullptr;
  }
  return run_call(args, where);
}

}  // namespace

void run_index(const std::filesystem::path& case_dir, const std::filesystem::path& out_dir,
               backend where, bool write_logits) {
  if (!backend_available(where)) {
    throw std::runtime_error(where == backend::gpu
                                 ? "--backend gpu: no GPU backend was built, or no GPU is present"
                                 : "the requested backend is not available");
  }
  const index_case c = load_index_case(case_dir);
  const problem& p = c.prob;
  if (write_logits && p.mode == index_mode::consume)
    throw input_error("--logits: mode \"consume\" has no logits output");
  staged_output staged(out_dir);

  outputs out;
  const uint32_t word =
      p.mode == index_mode::consume
          ? validate_and_run(describe_call<candidate_indexer_args>(c), case_dir, where, false, out)
          : validate_and_run(describe_call<indexer_args>(c), case_dir, where, write_logits, out);
  if (word != device_error_none)
    throw input_error(case_dir.string() +
                      ": the kernels rejected the inputs: " + describe_device_errors(word));

  const int64_t t = c.num_tokens();
  write_npy(staged.dir() / "topk_indices.npy", {t, p.topk}, out.topk.data());
  if (p.mode == index_mode::single && p.num_candidate_blocks > 0)
    write_npy(staged.dir() / "candidate_blocks.npy", {t, int64_t{p.num_candidate_blocks}},
              out.published.data());
  if (write_logits) write_npy(staged.dir() / "logits.npy", {t, p.max_model_len}, out.logits.data());
  staged.commit();
}

}  // namespace mxi::tools
