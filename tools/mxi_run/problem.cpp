#include "problem.hpp"

#include <fstream>
#include <limits>
#include <sstream>

#include "npy.hpp"

namespace mxi::tools {
namespace {

[[noreturn]] void fail(const std::filesystem::path& file, const std::string& key,
                       const std::string& what) {
  throw input_error(file.string() + ": key '" + key + "' " + what);
}

template <class Int>
void read_int(const std::filesystem::path& file, const nlohmann::json& j, const std::string& key,
              Int& out) {
  if (!j.is_number_integer()) fail(file, key, "must be an integer, not " + j.dump());
  if (j.is_number_unsigned() ? j.get<uint64_t>() > uint64_t(std::numeric_limits<Int>::max())
                             : (j.get<int64_t>() < std::numeric_limits<Int>::min() ||
                                j.get<int64_t>() > std::numeric_limits<Int>::max()))
    fail(file, key, "is out of range: " + j.dump());
  out = j.get<Int>();
}

// Looks `j` (a string) up in `names`, which pairs each accepted spelling with its value.
template <class Enum, size_t N>
void read_enum(const std::filesystem::path& file, const nlohmann::json& j, const std::string& key,
               const std::pair<const char*, Enum> (&names)[N], Enum& out) {
  std::string accepted;
  for (const auto& [name, value] : names) {
    if (j.is_string() && j.get<std::string>() == name) {
      out = value;
      return;
    }
    accepted += (accepted.empty() ? "\"" : ", \"") + std::string(name) + "\"";
  }
  fail(file, key, "has bad value " + j.dump() + " (expected one of " + accepted + ")");
}

constexpr std::pair<const char*, cache_layout> layouts[] = {{"linear", cache_layout::linear},
                                                            {"mfma16", cache_layout::mfma16},
                                                            {"aiter32", cache_layout::aiter32},
                                                            {"aiter16", cache_layout::aiter16}};
constexpr std::pair<const char*, index_mode> modes[] = {{"single", index_mode::single},
                                                        {"consume", index_mode::consume}};
constexpr std::pair<const char*, index_space> spaces[] = {{"position", index_space::position},
                                                          {"cache_slot", index_space::cache_slot}};
constexpr std::pair<const char*, output_order> orders[] = {{"position", output_order::position},
                                                           {"score", output_order::score}};

}  // namespace

nlohmann::json read_problem_json(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw input_error(file.string() + ": missing file");
  std::stringstream text;
  text << in.rdbuf();
  try {
    return nlohmann::json::parse(text.str(), nullptr, true, /*ignore_comments=*/true);
  } catch (const nlohmann::json::exception& e) {
    // parse_error, or out_of_range for a number past double's range ("1e999"). The message
    // starts with "[json.exception.parse_error.101] "; keep what follows.
    const std::string what = e.what();
    throw input_error(file.string() + ": not valid JSON: " + what.substr(what.find(']') + 2));
  }
}

problem read_problem(const std::filesystem::path& file) {
  const nlohmann::json doc = read_problem_json(file);
  if (!doc.is_object()) throw input_error(file.string() + ": must hold a JSON object");
  problem p;
  for (const auto& [key, v] : doc.items()) {
    if (key == "num_heads")
      read_int(file, v, key, p.num_heads);
    else if (key == "head_dim")
      read_int(file, v, key, p.head_dim);
    else if (key == "block_size")
      read_int(file, v, key, p.block_size);
    else if (key == "topk")
      read_int(file, v, key, p.topk);
    else if (key == "compress_ratio")
      read_int(file, v, key, p.compress_ratio);
    else if (key == "max_model_len")
      read_int(file, v, key, p.max_model_len);
    else if (key == "candidate_block_size")
      read_int(file, v, key, p.candidate_block_size);
    else if (key == "num_candidate_blocks")
      read_int(file, v, key, p.num_candidate_blocks);
    else if (key == "layout")
      read_enum(file, v, key, layouts, p.layout);
    else if (key == "mode")
      read_enum(file, v, key, modes, p.mode);
    else if (key == "index_space")
      read_enum(file, v, key, spaces, p.space);
    else if (key == "order")
      read_enum(file, v, key, orders, p.order);
    else
      fail(file, key, "is unknown");
  }
  return p;
}

const char* layout_name(cache_layout layout) {
  for (const auto& [name, value] : layouts)
    if (value == layout) return name;
  return "?";
}

}  // namespace mxi::tools
