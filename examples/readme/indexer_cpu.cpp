// The README's example on the threaded CPU backend: quantize a toy batch's keys into a paged
// MXFP4 cache, run the indexer on its float queries (the call quantizes them), check both error
// channels, print the rows.
#include <cstdio>
#include <vector>

#include "mxi/mxi.hpp"
#include "toy_batch.hpp"

namespace {

bool report(const mxi::status& s) {
  if (!s) std::fprintf(stderr, "%s\n", s.message().c_str());
  return s.ok();
}

}  // namespace

int main() {
  const toy::batch b = toy::make_batch();
  mxi::execution host;  // backend::cpu: every pointer is host memory, no workspace

  // The cache must be 16-byte aligned; std::vector's storage is (operator new aligns to 16).
  std::vector<uint8_t> kv_cache(toy::num_pages * toy::page_stride);
  mxi::k_cache_write_args write;
  write.k = b.keys.data();
  write.num_tokens = static_cast<int64_t>(b.slot_mapping.size());
  write.slot_mapping = b.slot_mapping.data();
  write.cache = {kv_cache.data(), toy::num_pages, toy::page_stride, toy::block_size, toy::head_dim,
                 mxi::cache_layout::linear};
  if (!report(mxi::write_k_cache(write, host))) return 1;

  const int64_t num_tokens = b.num_tokens;
  const float *queries = b.queries.data(), *weights = b.weights.data();
  const int32_t *query_start_loc = b.query_start_loc.data(), *seq_lens = b.seq_lens.data(),
                *block_table = b.block_table.data();
  const int num_requests = b.num_requests;
  const int64_t num_pages = toy::num_pages, page_stride = toy::page_stride;
  const int64_t block_table_stride = b.block_table_stride, max_model_len = toy::max_model_len;
  const int k = toy::k;
  std::vector<int32_t> topk(num_tokens * k);

  // [readme]
  mxi::indexer_args args;
  args.queries.q = queries;  // [T][H][D] fp32, quantized by the call (q_type: f32 or bf16)
  args.queries.weights = weights;
  args.queries.num_tokens = num_tokens;
  args.queries.num_heads = 16;
  args.queries.head_dim = 128;
  args.cache = {kv_cache.data(), num_pages, page_stride, /*block_size*/ 64, /*head_dim*/ 128,
                mxi::cache_layout::linear};
  args.requests = {query_start_loc, seq_lens, block_table, num_requests, block_table_stride};
  args.max_model_len = max_model_len;
  args.topk = {topk.data(), /*stride*/ k, k};  // ascending positions, -1 padded

  mxi::execution exec;      // backend::cpu: host pointers, no workspace
  uint32_t error_word = 0;  // bad data found while running (a page id, a seq_len) lands here
  exec.error_word = &error_word;
  if (mxi::status s = mxi::run_indexer(args, exec); !s) {
    std::fprintf(stderr, "%s\n", s.message().c_str());  // names the argument and the rule
    return 1;
  }
  if (error_word != 0) {  // the rows concerned are all -1, yet the call returned ok
    std::fprintf(stderr, "%s\n", mxi::describe_device_errors(error_word).c_str());
    return 1;
  }
  // [/readme]

  toy::print_rows(topk);
  return 0;
}
