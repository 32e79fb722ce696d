// A request's row of the block table as the logits kernels and candidate prep read it: a key
// position's page id and token in the page (a key's slot), the page id kept inside the cache (and
// candidate prep's reads inside the table row). Rows row_info rejects still stage keys (their
// items are planned before the checks end) and read whatever their table holds; the clamps keep
// those reads, and the copies they address, in bounds. Ids row_info checked pass unchanged.
#pragma once

#include <cstdint>

#include "mxi/config.hpp"
#include "mxi/platform/divide.hpp"
#include "mxi/platform/runtime.hpp"

namespace mxi::device {

#if MXI_GPU_COMPILER

struct page_table {
  const int32_t* row;   ///< the request's block-table row
  int64_t last_column;  ///< its last column
  int32_t last_page;    ///< NB - 1; INT32_MAX where NB is not given (only negative ids clamped)

  /// Request `request`'s row (row 0 for a negative request: a broken batch's) of a block table
  /// `stride` columns wide, over a cache of `num_pages` pages (0: not given, only negative ids
  /// clamped; an empty cache has no page to clamp to, so the backend passes a stand-in page).
  MXI_DEVICE static page_table of(const int32_t* block_table, int64_t stride, int32_t request,
                                  int64_t num_pages) {
    return {block_table + static_cast<int64_t>(max(request, 0)) * stride, stride - 1,
            num_pages > 0 ? static_cast<int32_t>(num_pages - 1) : INT32_MAX};
  }

  /// The page id of column `column` (one of the row's), in [0, last_page].
  MXI_DEVICE int32_t page(int64_t column) const { return min(max(row[column], 0), last_page); }

  /// Position `pos`'s slot, within the row: its page id and its token in the page (x, y), pages
  /// of `block_size` tokens (positions are below 2^31: 32-bit divisions).
  MXI_DEVICE int2 slot(int32_t pos, int block_size) const {
    return make_int2(page(pos / block_size), pos % block_size);
  }
  /// The same for a position below 2^32 that may lie past the row (candidate prep's, which bounds
  /// a row by max_model_len only: such a position reads the row's last column), with a divider by
  /// the block size the host made.
  MXI_DEVICE int2 slot(uint32_t pos, const platform::divider& block_size) const {
    const uint32_t column = block_size.quotient(pos);
    return make_int2(page(min(static_cast<int64_t>(column), last_column)),
                     static_cast<int32_t>(block_size.remainder(pos, column)));
  }
};

#endif  // MXI_GPU_COMPILER

}  // namespace mxi::device
