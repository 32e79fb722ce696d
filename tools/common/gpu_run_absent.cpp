// CPU-only builds: the library has no GPU backend, so the tools' GPU door is closed.
#include "gpu_run.hpp"

namespace mxi::tools {
namespace {

status absent() {
  return status(status_code::backend_unavailable, "no GPU backend was built (MXI_BACKEND=cpu)");
}

}  // namespace

status run_indexer_on_gpu(const indexer_args&, int, std::vector<double>&, uint32_t&) {
  return absent();
}
status run_candidate_indexer_on_gpu(const candidate_indexer_args&, int, std::vector<double>&,
                                    uint32_t&) {
  return absent();
}

size_t gpu_memory_bytes() { return 0; }

}  // namespace mxi::tools
