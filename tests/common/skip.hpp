// A visible skip that works with Catch2 v2 (no SKIP macro) and v3. CTest reports it as "Skipped"
// through SKIP_RETURN_CODE 4, which mxi_add_test sets on every test; the reason goes to stdout.
// Under v2 the skip ends the process, so a binary run by hand stops at its first skipped case:
// run suites through ctest (one case a process), or filter the cases to run.
#pragma once

#include <cstdio>
#include <cstdlib>

#include "catch.hpp"

#if defined(CATCH_VERSION_MAJOR) && CATCH_VERSION_MAJOR >= 3
#define MXI_SKIP(reason) SKIP(reason)
#else
#define MXI_SKIP(reason)                                  \
  do {                                                    \
    std::printf("SKIPPED: %s\n", reason);                 \
    std::fflush(stdout);                                  \
    std::_Exit(4);                                        \
  } while (0)
#endif
