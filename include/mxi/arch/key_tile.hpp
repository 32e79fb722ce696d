// The shared-memory key tile every scorer reads: `keys` cached tokens staged by the kernel, one
// 64-byte row a token (D = 128) whose four 16-byte blocks are XOR-swizzled so that the sm90
// B-fragment reads (lane = key g, quarter t of a block) and the staging writes are free of bank
// conflicts; the block scales already as fp32.
#pragma once

#include <cstdint>

#include "mxi/config.hpp"

namespace mxi::arch {

struct key_tile_shape {
  static constexpr int keys = 64;                ///< tokens a tile
  static constexpr int head_dim = 128;           ///< D (the kernels are built for D = 128)
  static constexpr int blocks = head_dim / 32;   ///< MXFP4 blocks (16 bytes) a token
  static constexpr int row_bytes = head_dim / 2;
  static constexpr int value_bytes = keys * row_bytes;
  static constexpr int scale_float_bytes = keys * blocks * 4;

  /// Slot (16-byte unit) of block `b` of tile token `key` inside the token's row.
  MXI_HOST_DEVICE static constexpr int slot(int key, int b) { return b ^ ((key >> 1) & 3); }
  /// 32-bit word of quarter `q` (bytes 4q .. 4q+3) of block `b` of token `key`.
  MXI_HOST_DEVICE static constexpr int word(int key, int b, int q) {
    return key * (row_bytes / 4) + slot(key, b) * 4 + q;
  }
};

/// A staged tile in shared memory: packed values, per-block fp32 scales ([keys][blocks]; filled
/// only for scorers that read them), the raw E8M0 scale word of each key ([keys]), what the
/// scorer's prepare_key wrote for the tile's keys, and whether prepare_key flagged some staged
/// key (both only for scorers that prepare keys).
struct key_tile {
  const uint32_t* values;
  const float* scales;
  const uint32_t* raw_scales = nullptr;
  const void* prepared = nullptr;
  bool flagged = false;
};

}  // namespace mxi::arch
