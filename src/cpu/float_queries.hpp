// The CPU backends' entry points on float queries (query_view::q): the backend's own quantize_q
// (format::quantize_row) writes them into host scratch, then the MXFP4 path runs on that copy.
#pragma once

#include <cstdint>
#include <vector>

#include "mxi/mxi.hpp"
#include "queries.hpp"

namespace mxi::detail {

/// `run` (an entry point of a CPU backend) as it takes float queries too, quantized by `quantize`
/// (the same backend's quantize_q) first.
template <class Args>
auto with_host_quantized_queries(status (*run)(const Args&, const execution&),
                                 status (*quantize)(const q_quantize_args&, const execution&)) {
  return [run, quantize](const Args& a, const execution& exec) {
    if (a.queries.q == nullptr || a.queries.num_tokens == 0) return run(a, exec);
    std::vector<uint8_t> values(query_value_bytes(a.queries)), scales(query_scale_bytes(a.queries));
    if (status s = quantize(quantize_args_of(a.queries, values.data(), scales.data()), exec); !s)
      return s;
    Args quantized = a;
    quantized.queries.values = values.data();
    quantized.queries.scales = scales.data();
    quantized.queries.q = nullptr;
    return run(quantized, exec);
  };
}

}  // namespace mxi::detail
