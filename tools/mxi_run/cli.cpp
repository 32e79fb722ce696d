#include "cli.hpp"

#include <CLI/CLI.hpp>
#include <iostream>

#include "choice.hpp"
#include "commands.hpp"
#include "npy.hpp"

namespace mxi::tools {
namespace {

const choices<backend> backends = {
    {"cpu", backend::cpu}, {"gpu", backend::gpu}, {"reference", backend::reference}};
const choices<cache_layout> layouts = {{"linear", cache_layout::linear},
                                       {"mfma16", cache_layout::mfma16},
                                       {"aiter32", cache_layout::aiter32},
                                       {"aiter16", cache_layout::aiter16}};
const choices<format::scale_rule> rules = {{"ceil", format::scale_rule::ceil},
                                           {"floor", format::scale_rule::floor}};

int fail(int code, const std::string& message) {
  std::cerr << "mxi-run: " << message << '\n';
  return code;
}

}  // namespace

std::optional<int> parse_command_line(int argc, const char* const* argv, invocation& out) {
  CLI::App app{"Replays the mxi sparse-attention indexer on tensors from NPY files.", "mxi-run"};
  app.require_subcommand(1);
  out = invocation{};
  out.where = best_backend();

  auto* index = app.add_subcommand("index", "Run the indexer on CASE_DIR, write OUT_DIR");
  index->add_option("CASE_DIR", out.case_dir, "problem.json and the input tensors")->required();
  index->add_option("--out", out.out_dir, "output directory")->required();
  add_choice(*index, "--backend", out.where, backends,
             "cpu | gpu | reference (default: the best available)");
  index->add_flag("--logits", out.logits, "also write logits.npy");

  auto* quantize = app.add_subcommand("quantize", "Quantize float32 [N, D] rows to MXFP4");
  quantize->add_option("IN", out.input, "float32 [N, D] NPY file")->required();
  quantize->add_option("--out", out.out_dir, "output directory")->required();
  add_choice(*quantize, "--rule", out.rule, rules, "ceil | floor (default ceil)");

  auto* convert = app.add_subcommand("convert-cache", "Rewrite a case's K cache in another layout");
  convert->add_option("CASE_DIR", out.case_dir, "the case to convert")->required();
  add_choice(*convert, "--to", out.to, layouts, "linear | mfma16 | aiter32 | aiter16")->required();
  convert->add_option("--out", out.out_dir, "output directory (a full case)")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    return fail(2, e.what());
  }
  out.command = *index ? subcommand::index
                : *quantize ? subcommand::quantize
                            : subcommand::convert_cache;
  return std::nullopt;
}

int run_invocation(const invocation& inv) {
  try {
    switch (inv.command) {
      case subcommand::index: run_index(inv.case_dir, inv.out_dir, inv.where, inv.logits); break;
      case subcommand::quantize: run_quantize(inv.input, inv.out_dir, inv.rule); break;
      case subcommand::convert_cache: run_convert_cache(inv.case_dir, inv.to, inv.out_dir); break;
    }
  } catch (const input_error& e) {
    return fail(2, e.what());
  } catch (const std::exception& e) {
    return fail(1, e.what());
  }
  return 0;
}

}  // namespace mxi::tools
