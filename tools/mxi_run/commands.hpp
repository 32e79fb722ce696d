// The three subcommands of mxi-run. Each throws input_error on bad input (exit 2) and any other
// exception on other failures (exit 1); on either, OUT_DIR is left as it was.
#pragma once

#include <filesystem>

#include "mxi/mxi.hpp"

namespace mxi::tools {

void run_index(const std::filesystem::path& case_dir, const std::filesystem::path& out_dir,
               backend where, bool write_logits);

void run_quantize(const std::filesystem::path& input, const std::filesystem::path& out_dir,
                  format::scale_rule rule);

void run_convert_cache(const std::filesystem::path& case_dir, cache_layout to,
                       const std::filesystem::path& out_dir);

}  // namespace mxi::tools
