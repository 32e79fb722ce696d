// A command-line option that takes one of a few names. CLI11's CheckedTransformer prints the
// values of a uint8_t enum as raw bytes (a NUL among them) in its errors and --help, so the names
// are checked here and every message lists them as text.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <utility>
#include <vector>

namespace mxi::tools {

/// The accepted names and what each stands for, in the order help and errors list them.
template <class Value>
using choices = std::vector<std::pair<std::string, Value>>;

/// Adds option `name` to `app`: a value outside `names` is a parse error "NAME: must be one of
/// A, B, C, got X"; an accepted one is stored in `out`.
template <class Value>
CLI::Option* add_choice(CLI::App& app, const std::string& name, Value& out,
                        const choices<Value>& names, const std::string& help) {
  std::string list;
  for (const auto& choice : names) list += (list.empty() ? "" : ", ") + choice.first;
  auto check = [names, list](const std::string& given) {
    for (const auto& choice : names)
      if (choice.first == given) return std::string();
    return "must be one of " + list + ", got '" + given + "'";
  };
  auto store = [names, &out](const std::string& given) {
    for (const auto& choice : names)
      if (choice.first == given) out = choice.second;
  };
  return app.add_option(name, help)
      ->type_name("NAME")
      ->check(CLI::Validator(check, ""))
      ->each(store);
}

}  // namespace mxi::tools
