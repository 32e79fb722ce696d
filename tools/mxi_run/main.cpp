// mxi-run: replays one indexer call from NPY files on any backend (docs/mxi-run.md). Exit
// status: 0 success, 2 bad input (one line on stderr), 1 anything else.
#include <CLI/CLI.hpp>
#include <iostream>
#include <string>

#include "choice.hpp"
#include "commands.hpp"
#include "npy.hpp"

namespace {

using mxi::backend;
using mxi::tools::add_choice;

const mxi::tools::choices<backend> backends = {
    {"cpu", backend::cpu}, {"gpu", backend::gpu}, {"reference", backend::reference}};
const mxi::tools::choices<mxi::cache_layout> layouts = {{"linear", mxi::cache_layout::linear},
                                                        {"mfma16", mxi::cache_layout::mfma16}};
const mxi::tools::choices<mxi::format::scale_rule> rules = {
    {"ceil", mxi::format::scale_rule::ceil}, {"floor", mxi::format::scale_rule::floor}};

int fail(int code, const std::string& message) {
  std::cerr << "mxi-run: " << message << '\n';
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Replays the mxi sparse-attention indexer on tensors from NPY files.", "mxi-run"};
  app.require_subcommand(1);

  std::string case_dir, out_dir, input;
  backend where = mxi::best_backend();
  mxi::cache_layout to = mxi::cache_layout::linear;
  mxi::format::scale_rule rule = mxi::format::scale_rule::ceil;
  bool logits = false;

  auto* index = app.add_subcommand("index", "Run the indexer on CASE_DIR, write OUT_DIR");
  index->add_option("CASE_DIR", case_dir, "problem.json and the input tensors")->required();
  index->add_option("--out", out_dir, "output directory")->required();
  add_choice(*index, "--backend", where, backends,
             "cpu | gpu | reference (default: the best available)");
  index->add_flag("--logits", logits, "also write logits.npy");

  auto* quantize = app.add_subcommand("quantize", "Quantize float32 [N, D] rows to MXFP4");
  quantize->add_option("IN", input, "float32 [N, D] NPY file")->required();
  quantize->add_option("--out", out_dir, "output directory")->required();
  add_choice(*quantize, "--rule", rule, rules, "ceil | floor (default ceil)");

  auto* convert = app.add_subcommand("convert-cache", "Rewrite a case's K cache in another layout");
  convert->add_option("CASE_DIR", case_dir, "the case to convert")->required();
  add_choice(*convert, "--to", to, layouts, "linear | mfma16")->required();
  convert->add_option("--out", out_dir, "output directory (a full case)")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    return fail(2, e.what());
  }

  try {
    if (*index)
      mxi::tools::run_index(case_dir, out_dir, where, logits);
    else if (*quantize)
      mxi::tools::run_quantize(input, out_dir, rule);
    else
      mxi::tools::run_convert_cache(case_dir, to, out_dir);
  } catch (const mxi::tools::input_error& e) {
    return fail(2, e.what());
  } catch (const std::exception& e) {
    return fail(1, e.what());
  }
  return 0;
}
