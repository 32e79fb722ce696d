// mxi-run's command line: parsing it into an invocation, and running one. Split from main() so
// the argument fuzzer (tests/fuzz) drives exactly the code the program runs.
#pragma once

#include <optional>
#include <string>

#include "mxi/mxi.hpp"

namespace mxi::tools {

enum class subcommand : uint8_t { index, quantize, convert_cache };

/// One parsed command line.
struct invocation {
  subcommand command = subcommand::index;
  std::string case_dir, out_dir, input;
  backend where = backend::cpu;
  cache_layout to = cache_layout::linear;
  format::scale_rule rule = format::scale_rule::ceil;
  bool logits = false;
};

/// Parses argv into `out`. Returns the exit status when parsing alone ends the program (0 after
/// --help, 2 on a bad command line, with its message printed), nullopt when `out` is to be run.
std::optional<int> parse_command_line(int argc, const char* const* argv, invocation& out);

/// Runs a parsed command; returns the exit status (0, 1 failure, 2 bad input; one stderr line).
int run_invocation(const invocation& inv);

}  // namespace mxi::tools
