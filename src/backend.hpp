// The internal seam between the host API (api.cpp: checks, then dispatch) and the backends. Each
// backend implements the same four calls on arguments that already passed check_arguments(). Float
// queries (query_view::q) reach the CPU backends' entry points already quantized into MXFP4
// (api.cpp, cpu/float_queries.hpp); the GPU backend quantizes them in its own first kernel.
#pragma once

#include "mxi/mxi.hpp"

namespace mxi::detail {

/// The cheap host-side checks every entry point runs before touching memory (docs/semantics.md,
/// "Bad input"): shapes, strides, alignment, ranges, null pointers, sizes that overflow. No
/// pointer is read.
status check_arguments(const indexer_args& args);
status check_arguments(const candidate_indexer_args& args);
status check_arguments(const k_cache_write_args& args);
status check_arguments(const q_quantize_args& args);

#define MXI_DETAIL_DECLARE_BACKEND(ns)                                             \
  namespace ns {                                                                   \
  status run_indexer(const indexer_args& args, const execution& exec);             \
  status run_candidate_indexer(const candidate_indexer_args& args, const execution& exec); \
  status write_k_cache(const k_cache_write_args& args, const execution& exec);     \
  status quantize_q(const q_quantize_args& args, const execution& exec);           \
  }

MXI_DETAIL_DECLARE_BACKEND(reference)  // src/cpu/reference.cpp: float64, obviously correct
MXI_DETAIL_DECLARE_BACKEND(cpu)        // src/cpu/threaded.cpp: fp32, OpenMP
MXI_DETAIL_DECLARE_BACKEND(gpu)        // src/gpu/ (CUDA/HIP) or src/gpu_absent.cpp

#undef MXI_DETAIL_DECLARE_BACKEND

namespace gpu {
/// ok when the GPU backend was built and a device is present; else why not.
status availability();
bool available();
status workspace_bytes(const indexer_args& args, size_t& bytes);
status workspace_bytes(const candidate_indexer_args& args, size_t& bytes);
}  // namespace gpu

}  // namespace mxi::detail
