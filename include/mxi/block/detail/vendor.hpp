// The one place block/ names a vendor library: rocPRIM on AMD, CUB on NVIDIA (the vendor comes
// from platform/). The neutral wrappers beside this file use only what it declares.
#pragma once

#include <cstring>  // rocPRIM 7.2 uses memcpy before including it

#include "mxi/config.hpp"
#include "mxi/platform/runtime.hpp"

#if MXI_PLATFORM_HIP
#include <rocprim/block/block_radix_sort.hpp>
#include <rocprim/block/block_scan.hpp>
#define MXI_BLOCK_ROCPRIM 1
#elif defined(__CUDACC__)
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_scan.cuh>
#define MXI_BLOCK_ROCPRIM 0
#else
#error "mxi/block needs a GPU compiler (HIP or CUDA)"
#endif
