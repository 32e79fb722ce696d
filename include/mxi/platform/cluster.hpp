// Thread-block clusters (NVIDIA compute capability 9.0 and later): the blocks of a cluster run at
// once on one GPU processing cluster, can read each other's shared memory and share a barrier.
// Device side: the calling block's cluster size and rank, the cluster barrier (whole or split in
// arrive / wait), and a pointer into another block's shared memory. Host side: the largest cluster
// a kernel may launch with, and how many clusters of a size a device holds at once
// (platform/launch.hpp launches clusters).
//
// Where clusters do not exist (HIP, a CUDA pass below sm_90) the same names describe a cluster of
// one block: size 1, rank 0, the barrier is __syncthreads, the pointer is the block's own; the host
// says 1.
// An NVIDIA image without an sm_90 pass (an sm_80 build on a Hopper GPU) also says 1: its code
// holds the one-block stand-ins.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mxi/config.hpp"
#include "mxi/platform/runtime.hpp"

#if MXI_GPU_COMPILER && !MXI_PLATFORM_HIP
#include <cooperative_groups.h>
#endif

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && !MXI_PLATFORM_HIP
#define MXI_PLATFORM_CLUSTERS 1
#else
#define MXI_PLATFORM_CLUSTERS 0
#endif

namespace mxi::platform {

/// The largest cluster every sm_90 launch may use; larger ones (16 on Hopper) need a kernel
/// attribute and may not fit a device's processing clusters.
inline constexpr int portable_cluster_blocks = 8;
/// The largest cluster Hopper schedules at all (with the non-portable attribute).
inline constexpr int max_cluster_blocks_any = 16;

#if MXI_GPU_COMPILER

/// Blocks of the calling block's cluster.
MXI_DEVICE unsigned cluster_blocks() {
#if MXI_PLATFORM_CLUSTERS
  return cooperative_groups::this_cluster().num_blocks();
#else
  return 1;
#endif
}
/// The calling block's rank in its cluster, 0 .. cluster_blocks() - 1 (blockIdx.x % size for a
/// one-dimensional cluster).
MXI_DEVICE unsigned cluster_rank() {
#if MXI_PLATFORM_CLUSTERS
  return cooperative_groups::this_cluster().block_rank();
#else
  return 0;
#endif
}
/// Every thread of every block of the cluster arrives and waits; shared-memory writes before it
/// are visible to every block after it.
MXI_DEVICE void cluster_sync() {
#if MXI_PLATFORM_CLUSTERS
  cooperative_groups::this_cluster().sync();
#else
  __syncthreads();
#endif
}
/// The barrier in two halves, for one that only keeps shared memory alive (never one that
/// publishes writes): arrive after the last read of other blocks' shared memory, wait before
/// leaving, so a block's shared memory outlives every read of it. The arrive has no release
/// (barrier.cluster.arrive.relaxed): `read` is a value computed from every such load, so the arrive
/// issues only once they have landed. A release's fence (MEMBAR.ALL.GPU) makes a whole cluster
/// barrier cost about 760 cycles on an H200 (1170-1260 with a global store in flight); a relaxed
/// one about 130 (tools/cluster-barrier-probe.cu).
MXI_DEVICE void cluster_arrive_relaxed(uint32_t read) {
#if MXI_PLATFORM_CLUSTERS
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::"r"(read) : "memory");
#else
  (void)read;
  __syncthreads();
#endif
}
/// The barrier in two halves, for writes another block reads later (arrive with release, then
/// cluster_wait with acquire): shared-memory writes before the arrive are visible to every block
/// after its wait. Work between the two halves hides the barrier's latency.
MXI_DEVICE void cluster_arrive() {
#if MXI_PLATFORM_CLUSTERS
  cooperative_groups::this_cluster().barrier_arrive();
#else
  __syncthreads();
#endif
}
MXI_DEVICE void cluster_wait() {
#if MXI_PLATFORM_CLUSTERS
  cooperative_groups::this_cluster().barrier_wait();
#endif
}
/// `p` (shared memory of the calling block) at the same offset in block `rank`'s shared memory.
template <class T>
MXI_DEVICE T* cluster_shared(T* p, unsigned rank) {
#if MXI_PLATFORM_CLUSTERS
  return cooperative_groups::this_cluster().map_shared_rank(p, rank);
#else
  (void)rank;
  return p;
#endif
}

/// How many clusters of `blocks` blocks of `kernel` (at `threads` threads and `smem` bytes of
/// dynamic shared memory a block) the current device holds at once: a cluster sits in one GPU
/// processing cluster, so fewer fit than the multiprocessors alone allow (an H200 holds 15 of 8
/// blocks of 1024 threads, not 16). 0 where the device cannot say.
template <class... Params>
error_t max_active_clusters(void (*kernel)(Params...), int threads, size_t smem, int blocks,
                            int* out) {
  *out = 0;
#if MXI_PLATFORM_HIP
  (void)kernel, (void)threads, (void)smem, (void)blocks;
  return success;
#else
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(blocks));
  config.blockDim = dim3(static_cast<unsigned>(threads));
  config.dynamicSmemBytes = smem;
  cudaLaunchAttribute cluster{};
  cluster.id = cudaLaunchAttributeClusterDimension;
  cluster.val.clusterDim.x = static_cast<unsigned>(blocks);
  cluster.val.clusterDim.y = 1;
  cluster.val.clusterDim.z = 1;
  config.attrs = &cluster;
  config.numAttrs = 1;
  if (cudaOccupancyMaxActiveClusters(out, kernel, &config) != success) {
    (void)cudaGetLastError();
    *out = 0;
  }
  return success;
#endif
}

/// The largest cluster `kernel` may be launched with on `device` (the current device) at
/// `threads` threads and `smem` bytes of dynamic shared memory a block (its maximum attribute
/// already raised that far): 1 without clusters; 16 where the non-portable size is allowed and
/// the device places at least one such cluster (max_active_clusters); else 8. Sets the kernel's
/// non-portable attribute when it answers 16.
template <class... Params>
error_t max_cluster_blocks(void (*kernel)(Params...), int device, int threads, size_t smem,
                           int* out) {
  *out = 1;
#if MXI_PLATFORM_HIP
  (void)kernel, (void)device, (void)threads, (void)smem;
  return success;
#else
  int launch = 0;
  error_t e = cudaDeviceGetAttribute(&launch, cudaDevAttrClusterLaunch, device);
  if (e != success || launch == 0) return e;
  cudaFuncAttributes attr{};
  e = cudaFuncGetAttributes(&attr, reinterpret_cast<const void*>(kernel));
  if (e != success) return e;
  if (attr.ptxVersion < 90) return success;  // the image holds the one-block stand-ins
  *out = portable_cluster_blocks;
  if (cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel),
                           cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != success) {
    (void)cudaGetLastError();  // not allowed here: the portable size stands
    return success;
  }
  int clusters = 0;
  e = max_active_clusters(kernel, threads, smem, max_cluster_blocks_any, &clusters);
  if (e == success && clusters >= 1) *out = max_cluster_blocks_any;
  return e;
#endif
}

#endif  // MXI_GPU_COMPILER

}  // namespace mxi::platform
