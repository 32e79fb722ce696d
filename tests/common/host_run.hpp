// Running the entry points on a host backend (reference or cpu) with fresh output buffers, so
// tests state only what they change. Buffers start as sentinels (top-k 0x7FFFFFFF, logits and
// candidates likewise recognisable) so an entry a backend forgot to write shows up.
#pragma once

#include <cstdint>
#include <vector>

#include "mxi/mxi.hpp"

namespace mxi::testing {

/// The backends that run on the host, which every CPU test runs alike.
inline constexpr backend host_backends[] = {backend::reference, backend::cpu};

inline constexpr int32_t unwritten = 0x7FFFFFFF;
inline constexpr float unwritten_logit = 12345.0f;

template <class Args>
struct host_result {
  status st;
  Args args;  ///< the arguments run, pointing at the buffers below
  std::vector<int32_t> topk, candidates;
  std::vector<float> logits;
  uint32_t error_word = 0;
};

/// Runs entry A on `where`: outputs sized from `a`'s strides; logits when a.logits.stride > 0,
/// candidates when a.candidates.num_blocks > 0.
inline host_result<indexer_args> run_host(indexer_args a, backend where, int threads = 0) {
  host_result<indexer_args> r;
  const size_t t = static_cast<size_t>(a.queries.num_tokens);
  r.topk.assign(t * a.topk.stride, unwritten);
  a.topk.indices = r.topk.data();
  if (a.logits.stride > 0) {
    r.logits.assign(t * a.logits.stride, unwritten_logit);
    a.logits.data = r.logits.data();
  }
  if (a.candidates.num_blocks > 0) {
    if (a.candidates.stride == 0) a.candidates.stride = a.candidates.num_blocks;
    r.candidates.assign(t * a.candidates.stride, unwritten);
    a.candidates.blocks = r.candidates.data();
  }
  execution exec;
  exec.where = where;
  exec.num_threads = threads;
  exec.error_word = &r.error_word;
  r.st = run_indexer(a, exec);
  r.args = a;
  return r;
}

/// Runs entry B on `where` with the candidate pool `a` already names.
inline host_result<candidate_indexer_args> run_host(candidate_indexer_args a, backend where,
                                                    int threads = 0) {
  host_result<candidate_indexer_args> r;
  r.topk.assign(static_cast<size_t>(a.queries.num_tokens) * a.topk.stride, unwritten);
  a.topk.indices = r.topk.data();
  execution exec;
  exec.where = where;
  exec.num_threads = threads;
  exec.error_word = &r.error_word;
  r.st = run_candidate_indexer(a, exec);
  r.args = a;
  return r;
}

}  // namespace mxi::testing
