// What one cluster barrier costs on an sm_90 GPU, in SM cycles (clusters of 8 blocks of 1024
// threads, 200 barriers in a row, block 0's thread 0 timing them). Compared: cooperative groups'
// cluster sync (barrier.cluster arrive.release + wait.acquire: ptxas puts MEMBAR.ALL.GPU before
// the arrive), the same after a global store, a relaxed arrive + wait, a cluster-scope fence before
// a relaxed arrive, __syncthreads, and an exchange that replaces the barrier by st.async messages
// (4 bytes to every block of the cluster, completed on each receiver's mbarrier).
//
//   nvcc -O3 -arch=sm_90a -o build/cluster-barrier-probe tools/cluster-barrier-probe.cu
//   build/cluster-barrier-probe        # on the GPU
#include <cooperative_groups.h>

#include <cstdio>

namespace cg = cooperative_groups;

__device__ long long cycles_taken;

__device__ unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ unsigned remote_address(const void* p, unsigned rank) {
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
               : "=r"(remote)
               : "r"(shared_address(p)), "r"(rank));
  return remote;
}

template <int Kind>
__global__ void __cluster_dims__(8, 1, 1) barriers(int iters, int* out) {
  __shared__ alignas(8) unsigned long long bar[2];
  __shared__ unsigned mail[2][8];
  if (threadIdx.x == 0) {
    for (int b = 0; b < 2; ++b)
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(shared_address(&bar[b])));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  cg::this_cluster().sync();
  const unsigned me = cg::this_cluster().block_rank();
  const long long t0 = clock64();
  for (int i = 0; i < iters; ++i) {
    if (Kind == 1) out[blockIdx.x * 1024 + threadIdx.x] = i;  // a store in flight at the barrier
    if (Kind == 0 || Kind == 1) {
      cg::this_cluster().sync();
    } else if (Kind == 2) {
      asm volatile("barrier.cluster.arrive.relaxed.aligned;\nbarrier.cluster.wait.aligned;" ::
                       : "memory");
    } else if (Kind == 3) {
      asm volatile(
          "fence.acq_rel.cluster;\nbarrier.cluster.arrive.relaxed.aligned;\nbarrier.cluster.wait."
          "aligned;" ::
              : "memory");
    } else if (Kind == 4) {
      __syncthreads();
    } else {  // two mbarriers in turn: a block can run one exchange ahead of another, not two
      const int p = i & 1;
      const unsigned mine = shared_address(&bar[p]);
      if (threadIdx.x == 0)
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 32;" ::"r"(mine)
                     : "memory");
      if (threadIdx.x < 8)
        asm volatile(
            "st.async.shared::cluster.mbarrier::complete_tx::bytes.u32 [%0], %1, [%2];" ::"r"(
                remote_address(&mail[p][me], threadIdx.x)),
            "r"(static_cast<unsigned>(i)), "r"(remote_address(&bar[p], threadIdx.x))
            : "memory");
      unsigned done = 0;
      while (!done)
        asm volatile(
            "{\n.reg .pred q;\nmbarrier.try_wait.parity.shared::cta.b64 q, [%1], %2;\nselp.u32 %0, "
            "1, 0, q;\n}"
            : "=r"(done)
            : "r"(mine), "r"(static_cast<unsigned>(i >> 1) & 1u)
            : "memory");
    }
  }
  const long long t1 = clock64();
  if (threadIdx.x == 0 && blockIdx.x == 0) cycles_taken = t1 - t0;
  cg::this_cluster().sync();  // no block leaves while a message may still be on its way to it
}

int main() {
  int* out = nullptr;
  cudaMalloc(&out, sizeof(int) * 8 * 1024);
  const char* names[] = {"cluster sync (arrive.release + wait.acquire)",
                         "the same after a global store",
                         "relaxed arrive + wait",
                         "fence.acq_rel.cluster + relaxed arrive + wait",
                         "__syncthreads",
                         "st.async to every block + mbarrier wait"};
  void (*kernels[])(int, int*) = {barriers<0>, barriers<1>, barriers<2>,
                                  barriers<3>, barriers<4>, barriers<5>};
  const int iters = 200;
  for (int kind = 0; kind < 6; ++kind) {
    for (int rep = 0; rep < 3; ++rep)
      kernels[kind]<<<8, 1024>>>(iters, out);  // the last one counts
    long long cycles = 0;
    cudaMemcpyFromSymbol(&cycles, cycles_taken, sizeof(cycles));
    std::printf("%-48s %7.1f cycles a barrier (%s)\n", names[kind], double(cycles) / iters,
                cudaGetErrorString(cudaGetLastError()));
  }
  return 0;
}
