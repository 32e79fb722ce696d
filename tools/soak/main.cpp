// mxi-soak: draws random indexer problems for a given time, each from its own seed, runs each on
// two backends and compares them by the contract (compare.hpp): the threaded CPU backend against
// the reference (--backend cpu, the CI form), or the GPU against the threaded CPU backend
// (--backend gpu). Prints every mismatch with its case seed and the command that replays it.
// Exit status 0 when every case agreed, 1 on a mismatch (or when the backend is missing), 2 on a
// bad option.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <exception>
#include <map>
#include <string>

#include "choice.hpp"
#include "compare.hpp"
#include "soak_case.hpp"

namespace {

using mxi::tools::soak::pairing;
using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

/// The seeds of a run's cases: splitmix64 over the run's seed.
uint64_t next_case_seed(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::string hex(uint64_t x) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%016" PRIx64, x);
  return text;
}

struct tally {
  int64_t cases = 0, mismatched = 0, skipped = 0;
  int64_t entry_b = 0, corrupt = 0, special = 0, rows = 0, broken_rows = 0, differing_rows = 0;
  std::map<std::string, int64_t> sizes;
  double slowest = 0;
  uint64_t slowest_seed = 0;
};

/// Runs one case; prints it when it mismatches (or always, when `verbose`). Returns whether it
/// agreed (skipped cases agree).
bool run_one(uint64_t seed, pairing p, int threads, const std::string& replay_prefix, bool verbose,
             size_t max_messages, tally& t) {
  const auto start = clock_type::now();
  std::string description;
  mxi::tools::soak::verdict v;
  try {
    const mxi::tools::soak::soak_case c = mxi::tools::soak::draw_case(seed, p);
    description = c.describe();
    t.entry_b += c.candidate_entry;
    t.corrupt += !c.corruptions.empty();
    t.special += !c.specials.empty();
    ++t.sizes[c.size_class];
    v = mxi::tools::soak::run_case(c, p, threads, max_messages);
  } catch (const std::exception& e) {
    v.mismatches.push_back(std::string("error: ") + e.what());
  }
  const double took = seconds_since(start);
  ++t.cases;
  t.skipped += v.skipped;
  t.rows += v.rows;
  t.broken_rows += v.broken_rows;
  t.differing_rows += v.differing_rows;
  if (took > t.slowest) t.slowest = took, t.slowest_seed = seed;
  const bool agreed = v.mismatches.empty();
  if (!agreed) {
    ++t.mismatched;
    std::printf("MISMATCH case %s: %s\n", hex(seed).c_str(), description.c_str());
    for (const std::string& m : v.mismatches) std::printf("  %s\n", m.c_str());
    std::printf("  replay: %s --case %s\n", replay_prefix.c_str(), hex(seed).c_str());
  } else if (verbose || v.skipped) {
    std::printf("case %s: %s (%.2f s): %s\n", hex(seed).c_str(),
                v.skipped ? ("skipped, " + v.skip_reason).c_str() : "agreed", took,
                description.c_str());
  }
  std::fflush(stdout);
  return agreed;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Runs random indexer problems on two backends and compares them by the contract.",
               "mxi-soak"};
  pairing p = pairing::cpu_vs_reference;
  double seconds = 60;
  uint64_t seed = 1;
  std::string replay;
  int64_t max_cases = 0;
  int threads = 0;
  bool verbose = false;
  mxi::tools::add_choice<pairing>(
      app, "--backend", p, {{"cpu", pairing::cpu_vs_reference}, {"gpu", pairing::gpu_vs_cpu}},
      "cpu: the threaded CPU backend against the reference (default); gpu: the GPU against the "
      "threaded CPU backend");
  app.add_option("--seconds", seconds, "draw new cases for this long (default 60)")
      ->check(CLI::PositiveNumber);
  app.add_option("--seed", seed,
                 "the run's seed, from which every case's seed follows (default 1)");
  app.add_option("--case", replay, "replay the one case of this seed (as a mismatch prints it)");
  app.add_option("--cases", max_cases, "stop after this many cases (default: the time alone)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--threads", threads, "host threads for the exact checks (default: every core)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--verbose", verbose, "print every case");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "mxi-soak: %s\n", e.what());
    return 2;
  }
  const bool gpu = p == pairing::gpu_vs_cpu;
  const std::string backend = gpu ? "gpu" : "cpu";
  const char* against = gpu ? "gpu against cpu" : "cpu against reference";
  if (gpu && !mxi::backend_available(mxi::backend::gpu)) {
    std::fprintf(stderr,
                 "mxi-soak: --backend gpu needs a GPU backend (MXI_BACKEND=cuda or hip) and a "
                 "device; this build or machine has none\n");
    return 1;
  }
  const std::string replay_prefix = std::string(argv[0]) + " --backend " + backend;
  tally t;

  if (!replay.empty()) {
    uint64_t case_seed = 0;
    try {
      size_t used = 0;
      case_seed = std::stoull(replay, &used, 0);
      if (used != replay.size()) throw std::invalid_argument("trailing characters");
    } catch (const std::exception&) {
      std::fprintf(stderr, "mxi-soak: --case: must be a case seed (decimal or 0x hex), got '%s'\n",
                   replay.c_str());
      return 2;
    }
    std::printf("mxi-soak: %s, case %s\n", against, hex(case_seed).c_str());
    const bool agreed = run_one(case_seed, p, threads, replay_prefix, true, 50, t);
    return agreed ? 0 : 1;
  }

  std::printf("mxi-soak: %s, seed %" PRIu64 ", %.0f s\n", against, seed, seconds);
  std::fflush(stdout);
  const auto start = clock_type::now();
  double next_progress = 60;
  uint64_t state = seed;
  while (seconds_since(start) < seconds && (max_cases == 0 || t.cases < max_cases)) {
    run_one(next_case_seed(state), p, threads, replay_prefix, verbose, 8, t);
    if (seconds_since(start) >= next_progress && seconds_since(start) < seconds) {
      std::printf("mxi-soak: %.0f s, %" PRId64 " cases, %" PRId64 " mismatches\n",
                  seconds_since(start), t.cases, t.mismatched);
      std::fflush(stdout);
      next_progress += 60;
    }
  }
  const double total = seconds_since(start);
  std::printf("mxi-soak: %" PRId64 " cases: %" PRId64 " entry A, %" PRId64 " entry B; %" PRId64
              " with corrupt batch data, %" PRId64 " with NaN or infinite data;",
              t.cases, t.cases - t.entry_b, t.entry_b, t.corrupt, t.special);
  for (const auto& [name, count] : t.sizes) std::printf(" %s %" PRId64, name.c_str(), count);
  std::printf("\nmxi-soak: %" PRId64 " rows (%" PRId64 " broken by the batch data, %" PRId64
              " chosen differently within tolerance); slowest case %s, %.1f s\n",
              t.rows, t.broken_rows, t.differing_rows, hex(t.slowest_seed).c_str(), t.slowest);
  if (t.skipped > 0)
    std::printf("mxi-soak: %" PRId64 " cases skipped (too large for the device)\n", t.skipped);
  std::printf("mxi-soak: %s: %" PRId64 " cases in %.1f s (%.0f a minute), %" PRId64
              " mismatches (%s, seed %" PRIu64 ")\n",
              t.mismatched == 0 ? "PASS" : "FAIL", t.cases, total, 60.0 * t.cases / total,
              t.mismatched, against, seed);
  return t.mismatched == 0 ? 0 : 1;
}
