// Workspace layouts written once: a layout is a sequence of take() calls, each piece starting as
// aligned as an allocation (aligned_size). Run over a null base it only sizes the workspace (every
// piece is null); run over the caller's workspace it carves it. So a launcher's size and its
// carving come from the same lines and cannot drift apart.
#pragma once

#include <cstddef>

#include "mxi/platform/runtime.hpp"

namespace mxi::platform {

class workspace_carver {
 public:
  /// Carves `base`; null: sizes only.
  explicit workspace_carver(void* base = nullptr) : base_(static_cast<char*>(base)) {}

  /// The next piece: `count` elements of T (null when sizing).
  template <class T>
  T* take(size_t count) {
    T* piece = base_ != nullptr ? reinterpret_cast<T*>(base_ + used_) : nullptr;
    used_ += aligned_size(count * sizeof(T));
    return piece;
  }

  /// The bytes the pieces so far take.
  size_t bytes() const { return used_; }

 private:
  char* base_;
  size_t used_ = 0;
};

}  // namespace mxi::platform
