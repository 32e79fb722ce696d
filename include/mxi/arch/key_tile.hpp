// The shared-memory key tile every scorer reads: `keys` cached tokens staged by the kernel. The
// row scorers read one 64-byte row a token (D = 128) whose four 16-byte blocks are XOR-swizzled
// so that per-word reads (lane = key g, quarter t of a block) and the staging writes are free of
// bank conflicts, the block scales already as fp32; the sm90 tile reads a page of the cache's
// own layout (page_tile), whose 16-byte block loads are conflict-free as they are.
#pragma once

#include <cstdint>

#include "mxi/config.hpp"
#include "mxi/layout/cache_layout.hpp"

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

/// Where a staged tile keeps each key's blocks and scale word, in 32-bit words of its stage.
/// swizzled_tile: the layout above, values then raw scale words ([keys]), for the row scorers.
struct swizzled_tile {
  static constexpr bool bulk_copies = false;
  MXI_HOST_DEVICE static constexpr int word(int key, int b, int q) { return key_tile_shape::word(key, b, q); }
  MXI_HOST_DEVICE static constexpr int scale_word(int key) { return key_tile_shape::value_bytes / 4 + key; }
};
/// page_tile: the tile is one 64-token page of the cache's own layout, so that a dense tile
/// arrives in a few bulk copies (Layout::copy_tokens); the sm90 tile reads it.
template <class Layout>
struct page_tile {
  static constexpr bool bulk_copies = true;
  static constexpr layout::page_shape shape{key_tile_shape::keys, key_tile_shape::head_dim};
  MXI_HOST_DEVICE static int word(int key, int b, int q) {
    return static_cast<int>(Layout::value_offset(shape, key, b)) / 4 + q;
  }
  MXI_HOST_DEVICE static int scale_word(int key) { return static_cast<int>(Layout::scale_offset(shape, key, 0)) / 4; }
};

/// A staged tile in shared memory: its stage's words (values and raw E8M0 scale words, where
/// the tile addressing puts them), per-block fp32 scales ([keys][blocks]; filled only for
/// scorers that read them), what the scorer's prepare_key wrote for the tile's keys, and whether
/// prepare_key flagged some staged key (both only for scorers that prepare keys).
struct key_tile {
  const uint32_t* values;
  const float* scales;
  const void* prepared = nullptr;
  bool flagged = false;
};

}  // namespace mxi::arch
