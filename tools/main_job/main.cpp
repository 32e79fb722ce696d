// mxi-main-job: runs a DeepSeek-shaped workload (H=64, D=128, K=2048, pages of 64 tokens: a
// decode batch with draft tokens and a ragged prefill) on the best backend present, checks it
// against the float64 reference and reports what ran, the check and the speed. Exit status 0
// when every checked row matches, 1 when one does not or a run fails, 2 on a bad option.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "choice.hpp"
#include "job.hpp"

int main(int argc, char** argv) {
  using mxi::backend;
  CLI::App app{"Runs, times and checks a DeepSeek-shaped indexer workload.", "mxi-main-job"};
  std::string size = "default";
  backend where = mxi::best_backend();
  uint64_t seed = 1;
  mxi::cache_layout layout = mxi::cache_layout::linear;
  using mxi::tools::add_choice;
  add_choice<std::string>(app, "--size", size,
                          {{"small", "small"}, {"default", "default"}, {"large", "large"}},
                          "small | default | large (large is sized for a GPU)");
  add_choice<backend>(
      app, "--backend", where,
      {{"cpu", backend::cpu}, {"gpu", backend::gpu}, {"reference", backend::reference}},
      "cpu | gpu | reference (default: the best available)");
  app.add_option("--seed", seed, "workload seed");
  add_choice<mxi::cache_layout>(
      app, "--layout", layout,
      {{"linear", mxi::cache_layout::linear},
       {"mfma16", mxi::cache_layout::mfma16},
       {"aiter32", mxi::cache_layout::aiter32},
       {"aiter16", mxi::cache_layout::aiter16}},
      "linear | mfma16 | aiter32 | aiter16 (default linear)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "mxi-main-job: %s\n", e.what());
    return 2;
  }
  if (!mxi::backend_available(where)) {
    std::fprintf(stderr, "mxi-main-job: backend %s is not available here%s\n",
                 mxi::tools::backend_name(where),
                 where == backend::gpu ? " (no GPU backend was built, or no GPU is present)" : "");
    return 1;
  }

  std::printf("mxi-main-job: size %s, seed %llu, backend %s", size.c_str(),
              static_cast<unsigned long long>(seed), mxi::tools::backend_name(where));
  if (where == backend::cpu) std::printf(" (%u threads)", std::thread::hardware_concurrency());
  std::printf("\n");
  const auto start = std::chrono::steady_clock::now();
  bool ok = true;
  try {
    for (const auto& phase : mxi::tools::job_phases(size, seed, layout))
      ok = mxi::tools::run_phase(phase, where, seed) && ok;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mxi-main-job: %s\n", e.what());
    return 1;
  }
  const double total =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("mxi-main-job: %s in %.1f s\n",
              ok ? "PASS" : "FAIL: top-k rows differ from the reference", total);
  return ok ? 0 : 1;
}
