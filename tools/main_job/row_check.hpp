// Checks rows of a tested top-k output against the reference backend, one row at a time: row t
// of request r is replayed as a one-token request with seq_len = p + 1 (p the row's absolute
// position), which sees exactly the positions row t sees, so a sample of a big batch costs only
// the sampled rows.
#pragma once

#include <cstdint>
#include <string>

#include "workload.hpp"

namespace mxi::tools {

/// Checks row t of `tested` (the workload's top-k output: [T][K], ascending positions). Equal to
/// the reference's row: accepted. Different: judged by tests/common/check (docs/semantics.md,
/// numerics: only choices between positions whose exact scores are within tolerance may differ).
/// Returns "" when accepted, else what is wrong.
std::string check_row(const testing::host_workload& w, int64_t t, const int32_t* tested_row);

}  // namespace mxi::tools
