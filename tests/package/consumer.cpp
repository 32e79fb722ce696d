// What an engine does first with mxi: quantize one K row into a one-page cache and one query,
// score it, and check that the only visible position comes back.
#include <cstdio>
#include <vector>

#include "mxi/mxi.hpp"

int main() {
  constexpr int heads = 16, dim = 128, page = 16;
  std::vector<float> k(dim, 1.0f), q(static_cast<size_t>(heads) * dim, 0.5f);
  mxi::execution exec;  // the threaded CPU backend, host memory

  std::vector<uint8_t> cache(page * (dim / 2 + dim / 32));
  mxi::k_cache_write_args write;
  const int64_t slot = 3;
  write.k = k.data();
  write.num_tokens = 1;
  write.slot_mapping = &slot;
  write.cache = {cache.data(), 1, static_cast<int64_t>(cache.size()), page, dim};
  mxi::status s = mxi::write_k_cache(write, exec);

  std::vector<uint8_t> qv(heads * dim / 2), qs(heads * dim / 32);
  mxi::q_quantize_args quant;
  quant.q = q.data();
  quant.num_tokens = 1;
  quant.num_heads = heads;
  quant.values = qv.data();
  quant.scales = qs.data();
  if (s) s = mxi::quantize_q(quant, exec);

  // One request whose only query token is the 4th of its sequence: it sees positions 0..3.
  std::vector<float> weights(heads, 1.0f);
  const int32_t query_start_loc[] = {0, 1}, seq_lens[] = {4}, block_table[] = {0};
  std::vector<int32_t> topk(8, 7);
  mxi::indexer_args args;
  args.queries = {qv.data(), qs.data(), weights.data(), 1, heads, dim};
  args.cache = {cache.data(), 1, static_cast<int64_t>(cache.size()), page, dim};
  args.requests = {query_start_loc, seq_lens, block_table, 1, 1};
  args.max_model_len = 16;
  args.topk = {topk.data(), 8, 8};
  if (s) s = mxi::run_indexer(args, exec);
  if (!s) {
    std::fprintf(stderr, "mxi: %s\n", s.message().c_str());
    return 1;
  }
  const bool ok = topk[0] == 0 && topk[3] == 3 && topk[4] == -1 && topk[7] == -1;
  std::printf("consumer: %s (row: %d %d %d %d %d ...)\n", ok ? "ok" : "WRONG", topk[0], topk[1],
              topk[2], topk[3], topk[4]);
  return ok ? 0 : 1;
}
