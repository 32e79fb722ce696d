// Runs a soak case on two backends and compares them by what docs/semantics.md guarantees:
// the same status and error word (also equal to the rows' expected bits), broken rows all -1,
// every other row accepted by the exact checker (tests/common/check) on both backends, and the
// two rows identical where the contract fixes the answer (every candidate listed, -1 after; a
// published pool holding every live block). Entries the call must not write keep their sentinel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "soak_case.hpp"

namespace mxi::tools::soak {

struct verdict {
  std::vector<std::string> mismatches;  ///< the first differences found; empty: the case passed
  bool skipped = false;                 ///< not run: it does not fit the device's memory
  std::string skip_reason;
  int64_t rows = 0;            ///< rows compared
  int64_t broken_rows = 0;     ///< rows the corrupt batch data breaks
  int64_t differing_rows = 0;  ///< top-k rows that differ between the backends, both accepted
};

/// The backend under test and the one it is compared with.
backend tested_backend(pairing p);
backend baseline_backend(pairing p);

/// Runs `c` on both backends of `p` and compares them, checking rows on `threads` host threads
/// (0: every core); keeps at most `max_messages` differences.
verdict run_case(const soak_case& c, pairing p, int threads, size_t max_messages);

}  // namespace mxi::tools::soak
