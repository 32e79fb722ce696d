// mxi-main-job: runs a DeepSeek-shaped workload (H=64, D=128, K=2048, pages of 64 tokens: a
// decode batch with draft tokens and a ragged prefill) on the best backend present, checks it
// against the float64 reference and reports what ran, the check and the speed. Exit status 0
// when every checked row matches, 1 when one does not or a run fails, 2 on a bad option.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <thread>

#include "job.hpp"

int main(int argc, char** argv) {
  using mxi::backend;
  CLI::App app{"Runs, times and checks a DeepSeek-shaped indexer workload.", "mxi-main-job"};
  std::string size = "default";
  backend where = mxi::best_backend();
  uint64_t seed = 1;
  mxi::cache_layout layout = mxi::cache_layout::linear;
  app.add_option("--size", size, "small | default | large (large is sized for a GPU)")
      ->check(CLI::IsMember({"small", "default", "large"}));
  app.add_option("--backend", where, "cpu | gpu | reference (default: the best available)")
      ->transform(CLI::CheckedTransformer(std::map<std::string, backend>{
          {"cpu", backend::cpu}, {"gpu", backend::gpu}, {"reference", backend::reference}}));
  app.add_option("--seed", seed, "workload seed");
  app.add_option("--layout", layout, "linear | mfma16 (default linear)")
      ->transform(CLI::CheckedTransformer(std::map<std::string, mxi::cache_layout>{
          {"linear", mxi::cache_layout::linear}, {"mfma16", mxi::cache_layout::mfma16}}));
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
