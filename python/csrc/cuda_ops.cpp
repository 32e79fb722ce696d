// The CUDA kernels: mxi's GPU backend on the tensors' device and torch's current stream, its
// workspace from the caller or torch's caching allocator. Nothing here waits for the GPU, so the
// ops can be captured in a CUDA graph; the error word stays on the device for the caller to read.
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include "op_bodies.hpp"

namespace mxi_torch {
namespace {

class cuda_device {
 public:
  explicit cuda_device(const at::Tensor& like)
      : guard_(like.device()), stream_(c10::cuda::getCurrentCUDAStream(like.device().index())) {}
  mxi::execution execution() const {
    mxi::execution e;
    e.where = mxi::backend::gpu;
    e.stream = stream_.stream();
    return e;
  }

 private:
  c10::cuda::CUDAGuard guard_;
  c10::cuda::CUDAStream stream_;
};

}  // namespace
}  // namespace mxi_torch

TORCH_LIBRARY_IMPL(mxi, CUDA, m) {
  using mxi_torch::cuda_device;
  m.impl("indexer", &mxi_torch::indexer_op<cuda_device>);
  m.impl("candidate_indexer", &mxi_torch::candidate_indexer_op<cuda_device>);
  m.impl("write_k_cache", &mxi_torch::write_k_cache_op<cuda_device>);
  m.impl("quantize_q", &mxi_torch::quantize_q_op<cuda_device>);
}
