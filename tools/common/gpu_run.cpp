#include "gpu_run.hpp"

#include <stdexcept>
#include <type_traits>

#include "device_buffer.hpp"
#include "device_inputs.hpp"
#include "gpu_timer.hpp"
#include "mxi/platform/runtime.hpp"

namespace mxi::tools {
namespace {

using testing::device_buffer;
using testing::upload;
using testing::gpu_check;

template <class T>
void download(T* host, const device_buffer<T>& d) {
  if (d.size() > 0)
    gpu_check(platform::memcpy(host, d.data(), d.bytes(), platform::copy_kind::device_to_host),
              "memcpy to host");
}

status run_entry(const indexer_args& a, const execution& e) { return run_indexer(a, e); }
status run_entry(const candidate_indexer_args& a, const execution& e) {
  return run_candidate_indexer(a, e);
}

template <class Args>
status run_on_gpu(const Args& host, int repetitions, std::vector<double>& seconds,
                  uint32_t& error_word) {
  constexpr bool single = std::is_same_v<Args, indexer_args>;
  const int64_t t = host.queries.num_tokens;
  try {
    const testing::device_inputs inputs(host);
    // Outputs go up too: entries a call leaves untouched (logits without `clean`) stay as they
    // were.
    auto topk = upload(host.topk.indices, t * host.topk.stride);
    auto candidates = upload(host.candidates.blocks, t * host.candidates.stride);
    const uint32_t no_errors = 0;
    auto word = upload(&no_errors, 1);

    Args dev = host;
    inputs.point(dev);
    dev.topk.indices = topk.data();
    dev.candidates.blocks = candidates.data();
    device_buffer<float> logits;
    if constexpr (single) {
      logits = upload(host.logits.data, t * host.logits.stride);
      dev.logits.data = logits.data();
    }
    size_t workspace_size = 0;
    if (status s = workspace_bytes(dev, backend::gpu, workspace_size); !s.ok()) return s;
    device_buffer<unsigned char> workspace(workspace_size);
    execution exec;
    exec.where = backend::gpu;
    exec.workspace = workspace.data();
    exec.workspace_bytes = workspace_size;
    exec.error_word = word.data();

    testing::gpu_timer timer;
    for (int i = 0; i < repetitions; ++i) {
      status s;
      seconds.push_back(timer.time([&] { s = run_entry(dev, exec); }));
      if (!s.ok()) return s;
    }
    download(host.topk.indices, topk);
    if constexpr (single) {
      download(host.candidates.blocks, candidates);
      download(host.logits.data, logits);
    }
    download(&error_word, word);
  } catch (const std::runtime_error& e) {
    return status(status_code::runtime_error, e.what());
  }
  return {};
}

}  // namespace

status run_indexer_on_gpu(const indexer_args& host_args, int repetitions,
                          std::vector<double>& seconds, uint32_t& error_word) {
  return run_on_gpu(host_args, repetitions, seconds, error_word);
}

status run_candidate_indexer_on_gpu(const candidate_indexer_args& host_args, int repetitions,
                                    std::vector<double>& seconds, uint32_t& error_word) {
  return run_on_gpu(host_args, repetitions, seconds, error_word);
}

size_t gpu_memory_bytes() {
  int device = 0;
  platform::device_prop_t prop{};
  if (platform::get_device(&device) != platform::success ||
      platform::get_device_properties(&prop, device) != platform::success)
    return 0;
  return prop.totalGlobalMem;
}

}  // namespace mxi::tools
