// mxi-run: replays one indexer call from NPY files on any backend (docs/mxi-run.md). Exit
// status: 0 success, 2 bad input (one line on stderr), 1 anything else.
#include "cli.hpp"

int main(int argc, char** argv) {
  mxi::tools::invocation inv;
  if (const auto done = mxi::tools::parse_command_line(argc, argv, inv)) return *done;
  return mxi::tools::run_invocation(inv);
}
