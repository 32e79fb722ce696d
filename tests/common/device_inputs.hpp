// An entry point's inputs (queries, cache, batch description) copied from host memory to the
// device, for the GPU tests and the tools: point() aims a copy of the arguments at them.
#pragma once

#include <cstdint>

#include "device_buffer.hpp"
#include "mxi/mxi.hpp"

namespace mxi::testing {

struct device_inputs {
  device_buffer<uint8_t> q_values, q_scales;
  device_buffer<uint8_t> q;  ///< float queries (query_view::q), when given
  device_buffer<float> weights;
  device_buffer<uint8_t> cache;
  device_buffer<int32_t> block_table, seq_lens, query_start_loc;

  /// `host`: arguments of either entry point whose inputs are in host memory.
  template <class Args>
  explicit device_inputs(const Args& host)
      : q_values(upload(host.queries.values, values_of(host))),
        q_scales(upload(host.queries.scales, values_of(host) / (format::block_elems / 2))),
        q(upload(static_cast<const uint8_t*>(host.queries.q), float_bytes_of(host))),
        weights(upload(host.queries.weights, host.queries.num_tokens * host.queries.num_heads)),
        cache(upload(host.cache.data, host.cache.num_pages * host.cache.page_stride)),
        block_table(upload(host.requests.block_table,
                           host.requests.num_requests * host.requests.block_table_stride)),
        seq_lens(upload(host.requests.seq_lens, host.requests.num_requests)),
        query_start_loc(upload(host.requests.query_start_loc, host.requests.num_requests + 1)) {}

  template <class Args>
  void point(Args& a) const {
    a.queries.values = q_values.data();
    a.queries.scales = q_scales.data();
    a.queries.q = q.data();
    a.queries.weights = weights.data();
    a.cache.data = cache.data();
    a.requests.block_table = block_table.data();
    a.requests.seq_lens = seq_lens.data();
    a.requests.query_start_loc = query_start_loc.data();
  }

 private:
  /// Packed query bytes: T * H * D / 2.
  template <class Args>
  static int64_t values_of(const Args& a) {
    return a.queries.num_tokens * a.queries.num_heads * a.queries.head_dim / 2;
  }
  /// Float query bytes: T * H * D elements of q_type.
  template <class Args>
  static int64_t float_bytes_of(const Args& a) {
    return values_of(a) * 2 * (a.queries.q_type == float_type::f32 ? 4 : 2);
  }
};

}  // namespace mxi::testing
