// mxi-run end to end: cases written as NPY files from a generated workload, the built binary run
// on them (its path comes from MXI_RUN_PATH, or the environment variable of that name where a
// build was copied to another machine, as tools/device-check.sh does), its outputs compared with
// the library called directly; every kind of bad input exits 2 with one stderr line naming the
// culprit and leaves nothing behind.
#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "catch.hpp"
#include "check.hpp"
#include "npy.hpp"
#include "skip.hpp"
#include "workload.hpp"

namespace fs = std::filesystem;
using mxi::tools::read_npy;
using mxi::tools::write_npy;

namespace {

// A fresh directory per test case, removed at the end.
struct scratch {
  fs::path root;
  scratch() {
    std::string pattern = (fs::temp_directory_path() / "mxi-run-test-XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    root = pattern;
  }
  ~scratch() { fs::remove_all(root); }
};

struct outcome {
  int status = -1;
  std::string out, err;  ///< stdout, stderr
};

std::string take_file(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  fs::remove(file);
  return text.str();
}

/// Runs `program` with `args` through the shell (after `prefix`, e.g. a umask), capturing both
/// streams.
outcome run_program(const std::string& program, const std::string& args,
                    const fs::path& scratch_root, const std::string& prefix = "") {
  const fs::path out = scratch_root / "stdout.txt", err = scratch_root / "stderr.txt";
  const std::string cmd = prefix + "'" + program + "' " + args + " > '" + out.string() +
                          "' 2> '" + err.string() + "'";
  const int raw = std::system(cmd.c_str());
  outcome o;
  o.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  o.out = take_file(out);
  o.err = take_file(err);
  return o;
}

/// mxi-run: $MXI_RUN_PATH where set, else the binary this build made.
std::string mxi_run_path() {
  const char* set = std::getenv("MXI_RUN_PATH");
  return set != nullptr && *set != '\0' ? set : MXI_RUN_PATH;
}

outcome mxi_run(const std::string& args, const fs::path& scratch_root) {
  return run_program(mxi_run_path(), args, scratch_root);
}

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

// A small ragged batch: decode with drafts, a short and a long prefill; some rows see more than K.
mxi::testing::host_workload small_workload(mxi::cache_layout layout) {
  mxi::testing::workload_spec s;
  s.num_heads = 16;
  s.block_size = 32;
  s.topk = 40;
  s.query_lens = {2, 3, 1, 20};
  s.seq_lens = {100, 7, 61, 20};
  s.layout = layout;
  s.page_padding = 16;
  s.seed = 11;
  return mxi::testing::make_workload(s);
}

// problem.json keys beyond the workload's own.
using json_extra = std::map<std::string, std::string>;

void write_case(const fs::path& dir, const mxi::testing::host_workload& w, const json_extra& extra,
                const std::vector<int32_t>& candidates = {}, int num_candidates = 0) {
  fs::create_directories(dir);
  const auto& s = w.spec;
  const int64_t t = w.num_tokens, h = s.num_heads, d = s.head_dim, r = w.seq_lens.size();
  json_extra keys = {
      {"num_heads", std::to_string(h)},
      {"head_dim", std::to_string(d)},
      {"block_size", std::to_string(s.block_size)},
      {"topk", std::to_string(s.topk)},
      {"compress_ratio", std::to_string(s.compress_ratio)},
      {"max_model_len", std::to_string(w.max_model_len)},
      {"layout", "\"" + std::string(mxi::layout::name(s.layout)) + "\""}};
  for (const auto& [k, v] : extra) keys[k] = v;
  std::ofstream json(dir / "problem.json");
  json << "{\n";
  for (auto it = keys.begin(); it != keys.end(); ++it)
    json << "  \"" << it->first << "\": " << it->second
         << (std::next(it) == keys.end() ? "\n" : ",\n");
  json << "}\n";
  write_npy(dir / "q_values.npy", {t, h, d / 2}, w.q_values.data());
  write_npy(dir / "q_scales.npy", {t, h, d / 32}, w.q_scales.data());
  write_npy(dir / "weights.npy", {t, h}, w.weights.data());
  write_npy(dir / "kv_cache.npy", {w.num_pages, w.page_stride}, w.kv_cache.data());
  write_npy(dir / "block_table.npy", {r, w.max_blocks}, w.block_table.data());
  write_npy(dir / "seq_lens.npy", {r}, w.seq_lens.data());
  write_npy(dir / "query_start_loc.npy", {r + 1}, w.query_start_loc.data());
  if (!candidates.empty())
    write_npy(dir / "candidate_blocks.npy", {t, int64_t{num_candidates}}, candidates.data());
}

template <class T>
std::vector<T> read_values(const fs::path& file, const char* dtype) {
  const auto a = read_npy(file);
  REQUIRE(a.dtype == dtype);
  return std::vector<T>(a.data<T>(), a.data<T>() + a.elements());
}

// What the library writes for the workload, called directly.
struct direct_result {
  std::vector<int32_t> topk, candidates;
  std::vector<float> logits;
};

direct_result run_direct(const mxi::testing::host_workload& w, mxi::backend where,
                         mxi::index_space space = mxi::index_space::position,
                         mxi::output_order order = mxi::output_order::position,
                         int num_candidates = 0, bool logits = false) {
  direct_result out;
  mxi::indexer_args args = w.indexer();
  out.topk.resize(w.num_tokens * w.spec.topk);
  args.topk.indices = out.topk.data();
  args.topk.space = space;
  args.topk.order = order;
  if (num_candidates > 0) {
    out.candidates.resize(w.num_tokens * num_candidates);
    args.candidates.blocks = out.candidates.data();
    args.candidates.stride = args.candidates.num_blocks = num_candidates;
  }
  if (logits) {
    out.logits.resize(w.num_tokens * w.max_model_len);
    args.logits.data = out.logits.data();
    args.logits.stride = w.max_model_len;
    args.logits.clean = true;
  }
  mxi::execution exec;
  exec.where = where;
  const mxi::status s = mxi::run_indexer(args, exec);
  REQUIRE(s.ok());
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("mxi-run index matches the library called directly", "[mxi-run]") {
  scratch tmp;
  for (auto layout : {mxi::cache_layout::linear, mxi::cache_layout::mfma16, mxi::cache_layout::aiter32,
                      mxi::cache_layout::aiter16}) {
    const auto w = small_workload(layout);
    const fs::path c = tmp.root / "case", out = tmp.root / "out";
    fs::remove_all(c);
    write_case(c, w, {});
    for (const char* backend : {"reference", "cpu"}) {
      INFO("layout " << mxi::layout::name(layout) << ", backend " << backend);
      const outcome o = mxi_run(
          "index " + quoted(c) + " --out " + quoted(out) + " --backend " + backend, tmp.root);
      REQUIRE(o.status == 0);
      CHECK(o.err.empty());
      const auto where =
          std::string(backend) == "cpu" ? mxi::backend::cpu : mxi::backend::reference;
      CHECK(read_values<int32_t>(out / "topk_indices.npy", "int32") == run_direct(w, where).topk);
      CHECK(read_npy(out / "topk_indices.npy").shape == std::vector<int64_t>{w.num_tokens, 40});
      CHECK_FALSE(fs::exists(out / "logits.npy"));
    }
  }
}

TEST_CASE("mxi-run index writes cache slots in score order plus logits and published candidates",
          "[mxi-run]") {
  scratch tmp;
  const auto w = small_workload(mxi::cache_layout::linear);
  const fs::path c = tmp.root / "case", out = tmp.root / "out";
  write_case(c, w,
             {{"index_space", "\"cache_slot\""},
              {"order", "\"score\""},
              {"num_candidate_blocks", "3"},
              {"candidate_block_size", "8"}});
  const outcome o = mxi_run(
      "index " + quoted(c) + " --out " + quoted(out) + " --backend reference --logits", tmp.root);
  REQUIRE(o.status == 0);
  const direct_result want = run_direct(w, mxi::backend::reference, mxi::index_space::cache_slot,
                                        mxi::output_order::score, 3, true);
  CHECK(read_values<int32_t>(out / "topk_indices.npy", "int32") == want.topk);
  CHECK(read_values<int32_t>(out / "candidate_blocks.npy", "int32") == want.candidates);
  CHECK(read_npy(out / "candidate_blocks.npy").shape == std::vector<int64_t>{w.num_tokens, 3});
  CHECK(read_npy(out / "logits.npy").shape == std::vector<int64_t>{w.num_tokens, w.max_model_len});
  CHECK(same_bits(read_values<float>(out / "logits.npy", "float32"), want.logits));
}

TEST_CASE("mxi-run index: consume mode matches the candidate indexer", "[mxi-run]") {
  scratch tmp;
  const auto w = small_workload(mxi::cache_layout::mfma16);
  const int ncb = 3;
  // Caller-made pools: unsorted, repeated, -1 and out-of-range ids mixed in.
  std::vector<int32_t> pool;
  for (int64_t t = 0; t < w.num_tokens; ++t) {
    const int32_t row[ncb] = {static_cast<int32_t>(t % 5), -1, static_cast<int32_t>(t % 3)};
    pool.insert(pool.end(), row, row + ncb);
  }
  const fs::path c = tmp.root / "case", out = tmp.root / "out";
  write_case(c, w, {{"mode", "\"consume\""}, {"candidate_block_size", "4"}}, pool, ncb);
  const outcome o =
      mxi_run("index " + quoted(c) + " --out " + quoted(out) + " --backend reference", tmp.root);
  REQUIRE(o.status == 0);

  mxi::candidate_indexer_args args = w.candidate_indexer();
  std::vector<int32_t> want(w.num_tokens * w.spec.topk);
  args.topk.indices = want.data();
  args.candidates.blocks = pool.data();
  args.candidates.stride = args.candidates.num_blocks = ncb;
  args.candidates.block_size = 4;
  mxi::execution exec;
  exec.where = mxi::backend::reference;
  REQUIRE(mxi::run_candidate_indexer(args, exec).ok());
  CHECK(read_values<int32_t>(out / "topk_indices.npy", "int32") == want);
}

TEST_CASE("mxi-run quantize is bit-exact with the codec", "[mxi-run]") {
  scratch tmp;
  const int64_t n = 7, d = 96;
  std::vector<float> x(n * d);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = std::ldexp(std::sin(0.37f * i), static_cast<int>(i % 9) - 4);
  const fs::path in = tmp.root / "x.npy", out = tmp.root / "q";
  write_npy(in, {n, d}, x.data());
  for (auto [name, rule] : {std::pair{"ceil", mxi::format::scale_rule::ceil},
                            std::pair{"floor", mxi::format::scale_rule::floor}}) {
    INFO("rule " << name);
    REQUIRE(
        mxi_run("quantize " + quoted(in) + " --out " + quoted(out) + " --rule " + name, tmp.root)
            .status == 0);
    std::vector<uint8_t> values(n * d / 2), scales(n * d / 32);
    for (int64_t i = 0; i < n; ++i)
      mxi::format::quantize_row([&](int j) { return x[i * d + j]; }, d, &values[i * d / 2],
                                &scales[i * d / 32], rule);
    CHECK(read_values<uint8_t>(out / "values.npy", "uint8") == values);
    CHECK(read_values<uint8_t>(out / "scales.npy", "uint8") == scales);
    CHECK(read_npy(out / "scales.npy").shape == std::vector<int64_t>{n, d / 32});
  }
}

TEST_CASE("mxi-run convert-cache round trips exactly and both layouts index alike", "[mxi-run]") {
  scratch tmp;
  const auto w = small_workload(mxi::cache_layout::linear);
  const fs::path c = tmp.root / "case", m = tmp.root / "mfma", back = tmp.root / "back";
  write_case(c, w, {{"order", "\"score\""}});
  REQUIRE(
      mxi_run("convert-cache " + quoted(c) + " --to mfma16 --out " + quoted(m), tmp.root).status ==
      0);
  REQUIRE(mxi_run("convert-cache " + quoted(m) + " --to linear --out " + quoted(back), tmp.root)
              .status == 0);
  const auto original = read_values<uint8_t>(c / "kv_cache.npy", "uint8");
  CHECK(read_values<uint8_t>(m / "kv_cache.npy", "uint8") != original);
  CHECK(read_values<uint8_t>(back / "kv_cache.npy", "uint8") == original);
  for (const char* f : {"q_values.npy", "weights.npy", "block_table.npy", "query_start_loc.npy"})
    CHECK(read_npy(m / f).bytes == read_npy(c / f).bytes);
  std::ifstream json(m / "problem.json");
  const std::string text((std::istreambuf_iterator<char>(json)), std::istreambuf_iterator<char>());
  CHECK(text.find("\"mfma16\"") != std::string::npos);
  CHECK(text.find("\"score\"") != std::string::npos);

  for (const fs::path& dir : {c, m}) {
    REQUIRE(
        mxi_run("index " + quoted(dir) + " --out " + quoted(dir / "out") + " --backend reference",
                tmp.root)
            .status == 0);
  }
  CHECK(read_npy(c / "out" / "topk_indices.npy").bytes ==
        read_npy(m / "out" / "topk_indices.npy").bytes);
}

TEST_CASE("mxi-run convert-cache writes the aiter orders and refuses pages they cannot hold",
          "[mxi-run]") {
  scratch tmp;
  const auto w = small_workload(mxi::cache_layout::linear);  // BS 32, D 128
  const fs::path c = tmp.root / "case";
  write_case(c, w, {});
  for (const char* to : {"aiter32", "aiter16"}) {
    INFO(to);
    const fs::path a = tmp.root / to, back = tmp.root / (std::string(to) + "-back");
    REQUIRE(mxi_run("convert-cache " + quoted(c) + " --to " + to + " --out " + quoted(a), tmp.root)
                .status == 0);
    REQUIRE(mxi_run("convert-cache " + quoted(a) + " --to linear --out " + quoted(back), tmp.root)
                .status == 0);
    CHECK(read_values<uint8_t>(back / "kv_cache.npy", "uint8") ==
          read_values<uint8_t>(c / "kv_cache.npy", "uint8"));
    REQUIRE(mxi_run("index " + quoted(a) + " --out " + quoted(a / "out") + " --backend cpu", tmp.root)
                .status == 0);
    CHECK(read_values<int32_t>(a / "out" / "topk_indices.npy", "int32") ==
          run_direct(w, mxi::backend::cpu).topk);
  }
  mxi::testing::workload_spec s = w.spec;
  s.block_size = 16;  // half a run of aiter32
  const fs::path small = tmp.root / "bs16";
  write_case(small, mxi::testing::make_workload(s), {});
  const outcome o =
      mxi_run("convert-cache " + quoted(small) + " --to aiter32 --out " + quoted(tmp.root / "x"), tmp.root);
  CHECK(o.status == 2);
  CHECK(o.err.find("cache.block_size must be a multiple of 32 with layout aiter32, got 16") !=
        std::string::npos);
  CHECK_FALSE(fs::exists(tmp.root / "x"));
}

TEST_CASE("mxi-run bad input exits 2 with one line naming it and writes nothing", "[mxi-run]") {
  scratch tmp;
  const auto w = small_workload(mxi::cache_layout::linear);
  const fs::path outs = tmp.root / "outs";
  fs::create_directories(outs);

  struct bad_case {
    const char* what;
    const char* named;  ///< what stderr must mention
    std::function<void(const fs::path&)> spoil;
  };
  const int64_t t = w.num_tokens, h = w.spec.num_heads;
  const std::vector<bad_case> cases = {
      {"missing file", "weights.npy", [](const fs::path& c) { fs::remove(c / "weights.npy"); }},
      {"missing problem.json", "problem.json",
       [](const fs::path& c) { fs::remove(c / "problem.json"); }},
      {"wrong dtype", "weights.npy",
       [&](const fs::path& c) {
         std::vector<int32_t> v(t * h, 1);
         write_npy(c / "weights.npy", {t, h}, v.data());
       }},
      {"wrong shape", "q_scales.npy",
       [&](const fs::path& c) {
         std::vector<uint8_t> v(t * h * 2, 127);
         write_npy(c / "q_scales.npy", {t, h, int64_t{2}}, v.data());
       }},
      {"inconsistent request count", "query_start_loc.npy",
       [&](const fs::path& c) {
         write_npy(c / "query_start_loc.npy", {int64_t(w.query_start_loc.size() - 1)},
                   w.query_start_loc.data());
       }},
      {"not an NPY file", "kv_cache.npy",
       [](const fs::path& c) { std::ofstream(c / "kv_cache.npy") << "hello"; }},
      {"block id >= NB", "block_table",
       [&](const fs::path& c) {
         auto bt = w.block_table;
         bt[0] = static_cast<int32_t>(w.num_pages);
         write_npy(c / "block_table.npy", {int64_t(w.seq_lens.size()), w.max_blocks}, bt.data());
       }},
      {"seq_len < n", "seq_lens",
       [&](const fs::path& c) {
         auto sl = w.seq_lens;
         sl[1] = 2;  // request 1 has 3 query tokens
         write_npy(c / "seq_lens.npy", {int64_t(sl.size())}, sl.data());
       }},
      {"unknown json key", "topk_size",
       [&](const fs::path& c) {
         write_case(c, w, {{"topk_size", "5"}});
       }},
      {"bad json value", "topk",
       [&](const fs::path& c) {
         write_case(c, w, {{"topk", "\"many\""}});
       }},
      {"unknown layout", "layout",
       [&](const fs::path& c) {
         write_case(c, w, {{"layout", "\"tiled\""}});
       }},
      {"topk out of range", "k",
       [&](const fs::path& c) {
         write_case(c, w, {{"topk", "0"}});
       }},
      {"not JSON", "problem.json",
       [](const fs::path& c) { std::ofstream(c / "problem.json") << "{\"topk\": "; }},
      // Found by tests/fuzz/fuzz_problem: nlohmann throws out_of_range, not parse_error, here.
      {"number past double's range", "problem.json",
       [&](const fs::path& c) { write_case(c, w, {{"topk", "1e999"}}); }},
  };
  for (const bad_case& b : cases) {
    INFO(b.what);
    const fs::path c = tmp.root / "case";
    fs::remove_all(c);
    write_case(c, w, {});
    b.spoil(c);
    const outcome o = mxi_run("index " + quoted(c) + " --out " + quoted(outs / "out"), tmp.root);
    CHECK(o.status == 2);
    CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
    CHECK(o.err.find(b.named) != std::string::npos);
    INFO("stderr: " << o.err);
    CHECK(fs::is_empty(outs));  // no output directory, no temporary left behind
  }

  SECTION("an existing output directory survives a failed run untouched") {
    const fs::path c = tmp.root / "case", out = outs / "out";
    fs::remove_all(c);
    write_case(c, w, {{"layout", "\"tiled\""}});
    fs::create_directories(out);
    std::ofstream(out / "keep.txt") << "old";
    CHECK(mxi_run("index " + quoted(c) + " --out " + quoted(out), tmp.root).status == 2);
    CHECK(fs::exists(out / "keep.txt"));
    CHECK(std::distance(fs::directory_iterator(outs), fs::directory_iterator()) == 1);
  }
  SECTION("quantize and convert-cache") {
    const fs::path c = tmp.root / "case";
    fs::remove_all(c);
    write_case(c, w, {});
    std::vector<float> x(2 * 33, 1.0f);
    write_npy(tmp.root / "odd.npy", {2, 33}, x.data());
    const std::pair<std::string, std::string> runs[] = {
        {"quantize " + quoted(tmp.root / "odd.npy") + " --out " + quoted(outs / "q"), "odd.npy"},
        {"quantize " + quoted(tmp.root / "none.npy") + " --out " + quoted(outs / "q"), "none.npy"},
        {"quantize " + quoted(c / "block_table.npy") + " --out " + quoted(outs / "q"), "int32"},
        {"convert-cache " + quoted(c) + " --to tiled --out " + quoted(outs / "c"), "tiled"},
        {"index " + quoted(c) + " --out " + quoted(tmp.root / "no" / "such" / "out"), "--out"},
    };
    for (const auto& [args, named] : runs) {
      INFO(args);
      const outcome o = mxi_run(args, tmp.root);
      CHECK(o.status == 2);
      CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
      CHECK(o.err.find(named) != std::string::npos);
      CHECK(fs::is_empty(outs));
    }
  }
}

// Every byte a person reads is printable ASCII or a newline (CLI11 once printed enum values as
// raw bytes, NUL included).
bool printable(const std::string& text) {
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return c == '\n' || (c >= ' ' && c <= '~'); });
}

TEST_CASE("a bad option value gets one printable line listing every accepted value", "[mxi-run]") {
  scratch tmp;
  const std::string main_job = MXI_MAIN_JOB_PATH;
  struct bad_option {
    std::string program, args, message;  ///< the whole of stderr expected
  };
  const std::vector<bad_option> cases = {
      {mxi_run_path(), "index case --out o --backend tpu",
       "mxi-run: --backend: must be one of cpu, gpu, reference, got 'tpu'\n"},
      {mxi_run_path(), "quantize x.npy --out o --rule round",
       "mxi-run: --rule: must be one of ceil, floor, got 'round'\n"},
      {mxi_run_path(), "convert-cache case --to tiled --out o",
       "mxi-run: --to: must be one of linear, mfma16, aiter32, aiter16, got 'tiled'\n"},
      {main_job, "--layout tiled",
       "mxi-main-job: --layout: must be one of linear, mfma16, aiter32, aiter16, got 'tiled'\n"},
      {main_job, "--backend tpu",
       "mxi-main-job: --backend: must be one of cpu, gpu, reference, got 'tpu'\n"},
      {main_job, "--size huge",
       "mxi-main-job: --size: must be one of small, default, large, got 'huge'\n"},
  };
  for (const bad_option& b : cases) {
    INFO(b.program << " " << b.args);
    const outcome o = run_program(b.program, b.args, tmp.root);
    CHECK(o.status == 2);
    CHECK(o.err == b.message);
    CHECK(printable(o.err));
    CHECK(o.out.empty());
  }
}

TEST_CASE("--help is printable and lists every accepted option value", "[mxi-run]") {
  scratch tmp;
  const std::string main_job = MXI_MAIN_JOB_PATH;
  const std::vector<std::pair<std::string, std::vector<std::string>>> helps = {
      {"'" + mxi_run_path() + "' index --help", {"cpu", "gpu", "reference"}},
      {"'" + mxi_run_path() + "' quantize --help", {"ceil", "floor"}},
      {"'" + mxi_run_path() + "' convert-cache --help", {"linear", "mfma16", "aiter32", "aiter16"}},
      {"'" + main_job + "' --help",
       {"small", "default", "large", "cpu", "gpu", "reference", "linear", "mfma16", "aiter32",
        "aiter16"}},
  };
  for (const auto& [command, values] : helps) {
    INFO(command);
    const outcome o = run_program("sh", "-c \"" + command + "\"", tmp.root);
    CHECK(o.status == 0);
    CHECK(o.err.empty());
    CHECK(printable(o.out));
    for (const std::string& v : values) CHECK(o.out.find(v) != std::string::npos);
  }
}

TEST_CASE("mxi-run output directories follow the umask", "[mxi-run]") {
  scratch tmp;
  const auto w = small_workload(mxi::cache_layout::linear);
  write_case(tmp.root / "case", w, {});
  for (const auto& [mask, mode] :
       {std::pair{"022", fs::perms(0755)}, std::pair{"027", fs::perms(0750)}}) {
    INFO("umask " << mask);
    const fs::path out = tmp.root / (std::string("out") + mask);
    const outcome o = run_program(
        mxi_run_path(), "index " + quoted(tmp.root / "case") + " --out " + quoted(out) +
                            " --backend cpu",
        tmp.root, std::string("umask ") + mask + "; ");
    REQUIRE(o.status == 0);
    CHECK((fs::status(out).permissions() & fs::perms::all) == mode);
  }
}

TEST_CASE("convert-cache refuses the cache shapes index refuses, with the same words",
          "[mxi-run]") {
  scratch tmp;
  const auto w = small_workload(mxi::cache_layout::linear);
  const std::vector<std::pair<std::string, std::function<void(const fs::path&)>>> spoils = {
      {"cache.head_dim must be a multiple of 32 in [32, 512], got 544",
       [&](const fs::path& c) { write_case(c, w, {{"head_dim", "544"}}); }},
      {"cache.page_stride must be a multiple of 16, got " + std::to_string(w.page_stride + 8),
       [&](const fs::path& c) {
         std::vector<uint8_t> cache(w.num_pages * (w.page_stride + 8));
         write_npy(c / "kv_cache.npy", {w.num_pages, w.page_stride + 8}, cache.data());
       }},
  };
  for (const auto& [message, spoil] : spoils) {
    INFO(message);
    const fs::path c = tmp.root / "case";
    fs::remove_all(c);
    write_case(c, w, {});
    spoil(c);
    const outcome convert = mxi_run(
        "convert-cache " + quoted(c) + " --to mfma16 --out " + quoted(tmp.root / "m"), tmp.root);
    CHECK(convert.status == 2);
    CHECK(convert.err == "mxi-run: " + c.string() + ": " + message + "\n");
    CHECK_FALSE(fs::exists(tmp.root / "m"));
    if (message.rfind("cache.page_stride", 0) == 0) {  // index reads q_values with D first
      const outcome index =
          mxi_run("index " + quoted(c) + " --out " + quoted(tmp.root / "o"), tmp.root);
      CHECK(index.status == 2);
      CHECK(index.err == convert.err);
    }
  }
}

TEST_CASE("convert-cache writes problem.json again as plain JSON, every key kept", "[mxi-run]") {
  scratch tmp;
  const auto w = small_workload(mxi::cache_layout::linear);
  const fs::path c = tmp.root / "case", m = tmp.root / "mfma";
  write_case(c, w, {{"order", "\"score\""}});
  std::ifstream in(c / "problem.json");
  std::string original((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  std::ofstream(c / "problem.json") << "// dumped by an engine\n" << original;
  REQUIRE(mxi_run("convert-cache " + quoted(c) + " --to mfma16 --out " + quoted(m), tmp.root)
              .status == 0);
  std::ifstream json(m / "problem.json");
  const std::string text((std::istreambuf_iterator<char>(json)), std::istreambuf_iterator<char>());
  CHECK(text.find("//") == std::string::npos);  // comments dropped, as docs/mxi-run.md says
  // Every key with its value, in alphabetical order, layout changed.
  const std::vector<std::string> lines = {
      "\"block_size\": 32", "\"compress_ratio\": 1", "\"head_dim\": 128", "\"layout\": \"mfma16\"",
      "\"max_model_len\": " + std::to_string(w.max_model_len), "\"num_heads\": 16",
      "\"order\": \"score\"", "\"topk\": 40"};
  size_t at = 0;
  for (const std::string& line : lines) {
    INFO(line << " in\n" << text);
    const size_t found = text.find(line);
    CHECK(found != std::string::npos);
    CHECK(found >= at);
    at = found;
  }
  CHECK(std::count(text.begin(), text.end(), ':') == static_cast<long>(lines.size()));
}

TEST_CASE("mxi-run --backend gpu without a GPU backend exits 1", "[mxi-run]") {
  if (mxi::backend_available(mxi::backend::gpu)) MXI_SKIP("a GPU backend is present here");
  scratch tmp;
  const auto w = small_workload(mxi::cache_layout::linear);
  write_case(tmp.root / "case", w, {});
  const outcome o = mxi_run("index " + quoted(tmp.root / "case") + " --out " +
                                quoted(tmp.root / "out") + " --backend gpu",
                            tmp.root);
  CHECK(o.status == 1);
  CHECK(o.err.find("GPU") != std::string::npos);
  CHECK_FALSE(fs::exists(tmp.root / "out"));
}

TEST_CASE("mxi-run --backend gpu agrees with the exact checker", "[mxi-run][gpu]") {
  if (!mxi::backend_available(mxi::backend::gpu)) MXI_SKIP("no GPU backend or device here");
  scratch tmp;
  for (auto layout : {mxi::cache_layout::linear, mxi::cache_layout::mfma16, mxi::cache_layout::aiter32,
                      mxi::cache_layout::aiter16}) {
    const auto w = small_workload(layout);
    const fs::path c = tmp.root / "case", out = tmp.root / "out";
    fs::remove_all(c);
    write_case(c, w, {{"index_space", "\"cache_slot\""}, {"num_candidate_blocks", "3"}});
    const outcome o = mxi_run(
        "index " + quoted(c) + " --out " + quoted(out) + " --backend gpu --logits", tmp.root);
    REQUIRE(o.status == 0);
    std::vector<int32_t> topk = read_values<int32_t>(out / "topk_indices.npy", "int32");
    std::vector<int32_t> pool = read_values<int32_t>(out / "candidate_blocks.npy", "int32");
    std::vector<float> logits = read_values<float>(out / "logits.npy", "float32");
    mxi::indexer_args args = w.indexer();
    args.topk.indices = topk.data();
    args.topk.space = mxi::index_space::cache_slot;
    args.candidates = {pool.data(), 3, 3, 8};
    args.logits = {logits.data(), w.max_model_len, true};
    CHECK(mxi::testing::check_indexer(w, args) == "");
  }
}

namespace {

// An NPY file as NumPy lays it out: magic, version, header length (2 bytes in 1.0, 4 after),
// the header dict padded with spaces to a 64-byte boundary, then the data.
void write_raw_npy(const fs::path& file, int major, const std::string& dict,
                   const std::vector<uint8_t>& data) {
  const size_t len_bytes = major == 1 ? 2 : 4;
  std::string header = dict;
  header.append(63 - (8 + len_bytes + header.size()) % 64, ' ');
  header += '\n';
  std::ofstream out(file, std::ios::binary);
  out.write("\x93NUMPY", 6);
  out.put(static_cast<char>(major)).put(0);
  for (size_t i = 0; i < len_bytes; ++i) out.put(static_cast<char>(header.size() >> (8 * i)));
  out << header;
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
}

}  // namespace

TEST_CASE("NPY reader: formats 1.0 2.0 and 3.0 and what it refuses", "[npy]") {
  scratch tmp;
  const fs::path f = tmp.root / "a.npy";
  const std::vector<uint8_t> six_floats(24, 0);
  for (int major : {1, 2, 3}) {
    INFO("format " << major);
    write_raw_npy(f, major, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                  six_floats);
    const auto a = read_npy(f, "float32", {{"N", 2}, {"D"}});
    CHECK(a.shape == std::vector<int64_t>{2, 3});
  }
  write_raw_npy(f, 1, "{\"shape\": (24,), \"fortran_order\": False, \"descr\": \"|u1\"}",
                six_floats);
  CHECK(read_npy(f).dtype == "uint8");
  write_raw_npy(f, 1, "{'descr': '<i4', 'fortran_order': True, 'shape': (6,), }", six_floats);
  CHECK(read_npy(f).dtype == "int32");  // Fortran order is C order in one dimension

  const std::pair<std::string, std::vector<uint8_t>> refused[] = {
      {"{'descr': '>f4', 'fortran_order': False, 'shape': (6,), }", six_floats},
      {"{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", six_floats},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (7,), }", six_floats},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }", six_floats},
      {"{'descr': '<f4', 'fortran_order': False }", six_floats},
      {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (6,), }", six_floats},
  };
  for (const auto& [dict, data] : refused) {
    INFO(dict);
    write_raw_npy(f, 1, dict, data);
    CHECK_THROWS_AS(read_npy(f), mxi::tools::input_error);
  }
}

// Found by tests/fuzz/fuzz_npy: a zero extent made the reader skip the overflow check of the
// others, so elements() overflowed int64 (undefined behaviour) on an accepted empty array.
TEST_CASE("NPY reader: extents whose product overflows int64 are refused, even beside a 0",
          "[npy]") {
  scratch tmp;
  const fs::path f = tmp.root / "a.npy";
  const std::string head = "{'descr': '|u1', 'fortran_order': False, 'shape': ";
  write_raw_npy(f, 1, head + "(4611686018427387904, 2, 0), }", {});
  try {  // (Catch2 v2 and v3 name their substring matcher differently)
    read_npy(f);
    FAIL("a shape whose extents overflow int64 was accepted");
  } catch (const mxi::tools::input_error& e) {
    CHECK(std::string(e.what()).find("overflows") != std::string::npos);
  }
  write_raw_npy(f, 1, head + "(4611686018427387904, 0), }", {});
  CHECK(read_npy(f).elements() == 0);
}
