// The shared-memory key tile the staging scorers read: `keys` cached tokens staged by the kernel.
// The generic row scorer reads one 64-byte row a token (D = 128) whose four 16-byte blocks are
// XOR-swizzled so that per-word reads (lane = key g, quarter t of a block) and the staging writes
// are free of bank conflicts, then each token's raw E8M0 scale word (and the scales as fp32); the
// sm90 tile reads a page of the cache's own layout (page_tile), whose 16-byte block loads are
// conflict-free as they are. (gfx950 stages nothing: its scorer loads its keys from the pages.)
#pragma once

#include <cstdint>

#include "mxi/arch/async_copy.hpp"
#include "mxi/config.hpp"
#include "mxi/format/mxfp4.hpp"
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
/// swizzled_tile: the layout above, values then raw scale words ([keys]), for the generic scorer.
struct swizzled_tile {
  MXI_HOST_DEVICE static constexpr int word(int key, int b, int q) { return key_tile_shape::word(key, b, q); }
  MXI_HOST_DEVICE static constexpr int scale_word(int key) { return key_tile_shape::value_bytes / 4 + key; }
};
/// page_tile: the tile is one 64-token page of the cache's own layout, so that a dense tile
/// arrives in a few bulk copies (Layout::copy_tokens); the sm90 tile reads it. Its scorers read a
/// key's scales as one 32-bit word, so only layouts that keep them together have page tiles
/// (has_page_tile); the launchers send the others (the aiter orders) to the swizzled tiles.
template <class Layout>
inline constexpr bool has_page_tile = Layout::token_scale_word;

template <class Layout>
struct page_tile {
  static_assert(has_page_tile<Layout>, "a page tile reads each key's scales as one word");
  static constexpr layout::page_shape shape{key_tile_shape::keys, key_tile_shape::head_dim};
  MXI_HOST_DEVICE static int word(int key, int b, int q) {
    return static_cast<int>(Layout::value_offset(shape, key, b)) / 4 + q;
  }
  MXI_HOST_DEVICE static int scale_word(int key) { return static_cast<int>(Layout::scale_offset(shape, key, 0)) / 4; }
};

/// Where a dense tile starts in the request's pages: page `page` (its block-table column), token
/// `token` of it. Tiles follow one another, so next() steps without a division.
struct tile_start {
  int page, token;
  MXI_HOST_DEVICE static tile_start of(int k0, int block_size) { return {k0 / block_size, k0 % block_size}; }
  MXI_HOST_DEVICE void next(int block_size) {
    for (token += key_tile_shape::keys; token >= block_size; token -= block_size) ++page;
  }
};

/// One copy of a dense tile: `bytes` from byte `from` of the request's page `page` to byte `to`
/// of the page_tile (bytes 0: no such copy).
struct tile_copy {
  int page = 0;
  int64_t to = 0, from = 0, bytes = 0;
};

/// Copy `part` (0 or 1) of run `run` of the dense tile of n <= 64 tokens starting at `at`
/// (at.token a multiple of 16): run r is the tile's tokens in page at.page + r, moved in one or
/// two contiguous, 16-byte aligned copies (Layout::copy_tokens). A page holds a multiple of 16
/// tokens, so a tile spans at most 5 runs, and every run starts 16-token aligned in its page and
/// in the tile, as copy_tokens needs.
template <class Layout>
MXI_HOST_DEVICE tile_copy dense_tile_copy(int block_size, tile_start at, int n, int run, int part) {
  tile_copy c;
  const int begin = run == 0 ? 0 : run * block_size - at.token;
  const int page_end = (run + 1) * block_size - at.token;
  const int end = n < page_end ? n : page_end;
  if (begin >= end) return c;
  const layout::page_shape page{block_size, key_tile_shape::head_dim};
  int copy = 0;
  Layout::copy_tokens(page_tile<Layout>::shape, page, begin, at.token + begin - run * block_size, end - begin,
                      [&](int64_t to, int64_t from, int64_t bytes) {
                        if (copy++ == part) c = {at.page + run, to, from, bytes};
                      });
  return c;
}

/// The E8M0 scale byte of block b of staged key n, from the stage's words in the tile addressing
/// `Tile`.
template <class Tile>
MXI_HOST_DEVICE uint8_t tile_scale(const uint32_t* words, int n, int b) {
  return static_cast<uint8_t>(words[Tile::scale_word(n)] >> (8 * b));
}

/// Where one key lives in the cache: its page's first byte and its token in that page (token < 0:
/// a key not to load; a staged tile's slots keep what they held).
struct key_source {
  const uint8_t* page;
  int token;
};

#if MXI_GPU_COMPILER

/// The key-tile loader, per-key form (any GPU; the caller's `threads` threads, this one `tid`,
/// call it together): stages keys n < count of a tile, key n from `source(n)`, into the tile
/// addressing `Tile` (swizzled_tile or page_tile<Layout>) of the stage at `tile`. Keys may come
/// from any pages of any request, in any layout of page size `block_size`. A key's five
/// copies (four 16-byte blocks, its 4-byte scale word) go to two threads, so up to 128 threads
/// move a tile in one pass. Copies is sync_copies (the tile is in after the caller's block
/// barrier) or async_copies (after copy_commit, copy_wait and the barrier). Where the layout
/// scatters a key's scale bytes (token_scale_word false) the thread gathers them and stores the
/// word itself, which the same barrier publishes.
template <class Layout, class Tile, class Copies, class Source>
MXI_DEVICE void load_key_tile(unsigned char* tile, int block_size, int count, int tid, int threads,
                              Source&& source) {
  const layout::page_shape page{block_size, key_tile_shape::head_dim};
  for (int i = tid; i < 2 * key_tile_shape::keys; i += threads) {
    const int n = i % key_tile_shape::keys, half = i / key_tile_shape::keys;
    if (n >= count) continue;
    const key_source k = source(n);
    if (k.token < 0) continue;
#pragma unroll
    for (int b = 2 * half; b < 2 * half + 2; ++b)
      Copies::template copy<16>(tile + 4 * Tile::word(n, b, 0),
                                k.page + Layout::value_offset(page, k.token, b));
    if (half == 0) {
      if constexpr (Layout::token_scale_word) {
        Copies::template copy<4>(tile + 4 * Tile::scale_word(n),
                                 k.page + Layout::scale_offset(page, k.token, 0));
      } else {  // scattered scale bytes (the aiter orders): gathered into the word, stored now
        uint32_t word = 0;
#pragma unroll
        for (int b = 0; b < key_tile_shape::blocks; ++b)
          word |= uint32_t{k.page[Layout::scale_offset(page, k.token, b)]} << (8 * b);
        *reinterpret_cast<uint32_t*>(tile + 4 * Tile::scale_word(n)) = word;
      }
    }
  }
}

/// Element i (0..127) of staged key n, dequantized to fp32 (its E2M1 code times its block's
/// E8M0 scale, format/mxfp4.hpp). A block's four words lie together in either tile addressing.
template <class Tile>
MXI_DEVICE float tile_element(const uint32_t* words, int n, int i) {
  const int b = i / format::block_elems;
  const auto* block = reinterpret_cast<const uint8_t*>(words + Tile::word(n, b, 0));
  return format::decode_element(format::packed_code(block, i % format::block_elems),
                                tile_scale<Tile>(words, n, b));
}

#endif  // MXI_GPU_COMPILER

#if MXI_GPU_COMPILER && !defined(__HIP_PLATFORM_AMD__)

/// The key-tile loader, asynchronous form (sm90 bulk copies; every lane of one warp calls it):
/// stages n <= 64 consecutive tokens of a request from `at` into the page_tile at `tile`, counted
/// on `full`, and arrives on `full` once (lane 0). A whole page (block size 64) is one copy;
/// otherwise lane 2r + h issues copy h of run r
/// (dense_tile_copy); the lanes work out their copies at once: when one thread did it all, its
/// latency bounded the kernel. page_id(i) is the id of the request's page i (its block-table
/// column i). The caller first orders the tile's earlier readers before the copies (a barrier
/// wait, then fence_proxy_async). The copies' lines stay in L2 by `l2_policy` (arch::l2_policy).
template <class Layout, class PageId>
MXI_DEVICE void stage_dense_tile(unsigned char* tile, const uint8_t* cache, int64_t page_stride,
                                 int block_size, tile_start at, int n, PageId&& page_id,
                                 uint64_t* full, uint64_t l2_policy) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  constexpr int keys = key_tile_shape::keys;
  if (block_size == keys && at.token == 0 && n == keys) {
    // A whole 64-token page is laid out as the tile: one copy, by one lane (the staging warp's
    // time a tile bounded the pipelined kernel).
    if (lane == 0) {
      constexpr auto bytes = static_cast<uint32_t>(page_tile<Layout>::shape.data_bytes());
      barrier_arrive_expect(full, bytes);
      bulk_copy(tile, cache + layout::page_offset(page_id(at.page), page_stride), bytes, full,
                l2_policy);
    }
    return;
  }
  const tile_copy c = dense_tile_copy<Layout>(block_size, at, n, lane / 2, lane % 2);
  const uint32_t total = __reduce_add_sync(0xFFFFFFFFu, static_cast<uint32_t>(c.bytes));
  if (lane == 0) barrier_arrive_expect(full, total);
  __syncwarp();
  if (c.bytes != 0)
    bulk_copy(tile + c.to, cache + layout::page_offset(page_id(c.page), page_stride) + c.from,
              static_cast<uint32_t>(c.bytes), full, l2_policy);
}

#endif  // MXI_GPU_COMPILER

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
