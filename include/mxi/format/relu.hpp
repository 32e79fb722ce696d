// relu of a head's dot product, the one nonlinearity of the indexer's score
// (sum over heads of w * relu(q . k)), shared by the CPU backends and the GPU tiles.
#pragma once

#include "mxi/config.hpp"

namespace mxi::format {

/// max(x, 0) that keeps NaN (NaN < 0 is false), as the reference does. T: float, double, or a
/// GCC vector of them (the threaded CPU backend's lanes).
template <class T>
MXI_HOST_DEVICE T relu(T x) {
  return x < T{} ? T{} : x;
}

}  // namespace mxi::format
