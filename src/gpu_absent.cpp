// The GPU backend's seam when the library is built without one (MXI_BACKEND=cpu): nothing is
// available, and every call says so.
#include "backend.hpp"

namespace mxi::detail::gpu {
namespace {

status absent() {
  return status(status_code::backend_unavailable,
                "mxi was built without a GPU backend (MXI_BACKEND=cpu)");
}

}  // namespace

status availability() { return absent(); }
bool available() { return false; }
status run_indexer(const indexer_args&, const execution&) { return absent(); }
status run_candidate_indexer(const candidate_indexer_args&, const execution&) { return absent(); }
status write_k_cache(const k_cache_write_args&, const execution&) { return absent(); }
status quantize_q(const q_quantize_args&, const execution&) { return absent(); }
status workspace_bytes(const indexer_args&, size_t&) { return absent(); }
status workspace_bytes(const candidate_indexer_args&, size_t&) { return absent(); }

}  // namespace mxi::detail::gpu
