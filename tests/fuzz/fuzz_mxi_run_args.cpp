// mxi-run's command line: the input is its arguments, separated by NUL bytes. Parsing must end in
// exit status 0 (--help) or 2, or in an invocation; an invocation whose paths are plain names runs
// in a sandbox directory holding two small cases ("case": mode single, "pool": mode consume) and
// an input for quantize ("k.npy"), and must exit 0, 1 or 2, leave no staging directory behind,
// and on success leave OUT_DIR a directory. Paths with a '/' or "." / ".." are parsed, not run,
// so the fuzzer never writes outside the sandbox.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <streambuf>
#include <string>
#include <vector>

#include "cli.hpp"
#include "fuzz_support.hpp"
#include "npy.hpp"
#include "workload.hpp"

namespace fs = std::filesystem;
using mxi::tools::write_npy;

namespace {

void write_case(const fs::path& dir, const std::string& extra_json, int num_candidates) {
  mxi::testing::workload_spec s;
  s.num_heads = 16;
  s.head_dim = 32;
  s.block_size = 16;
  s.topk = 8;
  s.query_lens = {2, 1};
  s.seq_lens = {40, 9};
  s.seed = 3;
  const auto w = mxi::testing::make_workload(s);
  const int64_t t = w.num_tokens, h = s.num_heads, d = s.head_dim, r = w.seq_lens.size();
  fs::create_directories(dir);
  std::ofstream(dir / "problem.json")
      << "{\"num_heads\": 16, \"head_dim\": 32, \"block_size\": 16, \"topk\": 8, "
      << "\"max_model_len\": " << w.max_model_len << extra_json << "}\n";
  write_npy(dir / "q_values.npy", {t, h, d / 2}, w.q_values.data());
  write_npy(dir / "q_scales.npy", {t, h, d / 32}, w.q_scales.data());
  write_npy(dir / "weights.npy", {t, h}, w.weights.data());
  write_npy(dir / "kv_cache.npy", {w.num_pages, w.page_stride}, w.kv_cache.data());
  write_npy(dir / "block_table.npy", {r, w.max_blocks}, w.block_table.data());
  write_npy(dir / "seq_lens.npy", {r}, w.seq_lens.data());
  write_npy(dir / "query_start_loc.npy", {r + 1}, w.query_start_loc.data());
  if (num_candidates > 0) {
    std::vector<int32_t> pool(static_cast<size_t>(t * num_candidates));
    for (size_t i = 0; i < pool.size(); ++i) pool[i] = static_cast<int32_t>(i % 5) - 1;
    write_npy(dir / "candidate_blocks.npy", {t, int64_t{num_candidates}}, pool.data());
  }
}

// The pristine inputs, made once, copied into the emptied sandbox before each run.
const fs::path& fixture() {
  static const fs::path dir = [] {
    const fs::path d = mxi::fuzz::scratch_dir() / "fixture";
    write_case(d / "case", ", \"num_candidate_blocks\": 2, \"candidate_block_size\": 4", 0);
    write_case(d / "pool", ", \"mode\": \"consume\", \"candidate_block_size\": 4", 3);
    const std::vector<float> k = {1.5f, -2.0f, 0.25f, 7.0f, -0.0f, 3.0f, 1e-30f, 6.0f};
    std::vector<float> rows;
    for (int i = 0; i < 8; ++i) rows.insert(rows.end(), k.begin(), k.end());
    write_npy(d / "k.npy", {2, 32}, rows.data());
    return d;
  }();
  return dir;
}

// The directory the commands run in (the process's working directory from the first run on).
const fs::path& sandbox() {
  static const fs::path dir = [] {
    const fs::path d = mxi::fuzz::scratch_dir() / "sandbox";
    fs::create_directories(d);
    FUZZ_REQUIRE(::chdir(d.c_str()) == 0);
    return d;
  }();
  return dir;
}

bool plain_name(const std::string& p) {
  return !p.empty() && p != "." && p != ".." && p.find('/') == std::string::npos;
}

// Discards what the program prints, so fuzzing output stays readable.
struct silence {
  struct null_buffer : std::streambuf {
    int overflow(int c) override { return c; }
  } sink;
  std::streambuf* out = std::cout.rdbuf(&sink);
  std::streambuf* err = std::cerr.rdbuf(&sink);
  ~silence() {
    std::cout.rdbuf(out);
    std::cerr.rdbuf(err);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args = {"mxi-run"};
  std::string current;
  for (size_t i = 0; i < size && args.size() < 16; ++i) {
    if (data[i] == 0) {
      args.push_back(current);
      current.clear();
    } else {
      current += static_cast<char>(data[i]);
    }
  }
  if (!current.empty() && args.size() < 16) args.push_back(current);
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());

  silence quiet;
  mxi::tools::invocation inv;
  if (const auto done = mxi::tools::parse_command_line(static_cast<int>(argv.size()), argv.data(),
                                                       inv)) {
    FUZZ_REQUIRE(*done == 0 || *done == 2);
    return 0;
  }
  const bool index_like = inv.command != mxi::tools::subcommand::quantize;
  const std::string& in = index_like ? inv.case_dir : inv.input;
  if (!plain_name(in) || !plain_name(inv.out_dir)) return 0;

  const fs::path& box = sandbox();
  for (const auto& entry : fs::directory_iterator(box)) fs::remove_all(entry.path());
  fs::copy(fixture(), box, fs::copy_options::recursive);

  const int status = mxi::tools::run_invocation(inv);
  FUZZ_REQUIRE(status == 0 || status == 1 || status == 2);
  for (const auto& entry : fs::directory_iterator(box)) {  // no staging directory left behind
    const std::string name = entry.path().filename().string();
    FUZZ_REQUIRE(name[0] != '.' || name == inv.out_dir);
  }
  if (status == 0) FUZZ_REQUIRE(fs::is_directory(box / inv.out_dir));
  return 0;
}
