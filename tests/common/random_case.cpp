#include "random_case.hpp"

#include <initializer_list>
#include <random>
#include <vector>

namespace mxi::testing {

random_case draw_random_case(uint64_t seed, case_scale scale) {
  const bool gpu = scale == case_scale::gpu;
  std::mt19937_64 rng(seed);
  auto pick = [&](std::initializer_list<int> v) { return *(v.begin() + rng() % v.size()); };
  random_case c;
  if (rng() % 2) {
    c.spec = decode_spec(pick({1, 2, 3}), gpu ? pick({40, 150, 500, 3000}) : pick({40, 150, 500}),
                         pick({1, 2, 4}), seed);
  } else {
    std::vector<int32_t> lens;
    for (int r = pick({1, 2, 3}); r > 0; --r)
      lens.push_back(gpu ? pick({1, 5, 17, 40, 300}) : pick({1, 5, 17, 40}));
    c.spec = prefill_spec(lens, seed);
  }
  c.spec.num_heads = gpu ? pick({16, 32, 64, 128}) : pick({16, 32, 64});
  if (!gpu) c.spec.head_dim = pick({32, 64, 128});  // the GPU kernels take D = 128 only
  c.spec.block_size = gpu ? pick({16, 32, 64, 256}) : pick({16, 32, 64});
  c.spec.compress_ratio = pick({1, 1, 2, 4});
  c.spec.topk = gpu ? pick({1, 8, 33, 100, 256, 2048}) : pick({1, 8, 33, 100, 256});
  const cache_layout layouts[] = {cache_layout::linear, cache_layout::mfma16, cache_layout::aiter32,
                                  cache_layout::aiter16};
  c.spec.layout = layouts[rng() % 4];
  if (!layout::holds(c.spec.layout, {c.spec.block_size, c.spec.head_dim}))
    c.spec.layout = cache_layout::linear;  // the aiter orders need whole runs and D/32 split evenly
  c.spec.keys = rng() % 4 == 0 ? key_pattern::few_distinct : key_pattern::gaussian;
  c.spec.page_padding = pick({0, 0, 32});
  c.order = rng() % 2 ? output_order::score : output_order::position;
  c.space = rng() % 3 == 0 ? index_space::cache_slot : index_space::position;
  c.publish_blocks = gpu ? pick({0, 0, 2, 16, 300}) : pick({0, 0, 2, 16});
  c.logits = rng() % 3 == 0;
  c.clean = !gpu || c.publish_blocks % 2 == 0;
  return c;
}

indexer_args random_case_args(const host_workload& w, const random_case& c) {
  indexer_args a = w.indexer();
  a.topk.order = c.order;
  a.topk.space = c.space;
  a.candidates.num_blocks = c.publish_blocks;
  a.candidates.block_size = 8;
  if (c.logits) {
    a.logits.stride = w.max_model_len + 3;
    a.logits.clean = c.clean;
  }
  return a;
}

random_pool draw_random_pool(uint64_t seed, const host_workload& w, case_scale scale) {
  std::mt19937_64 rng(seed);
  random_pool p;
  const bool wide = scale == case_scale::gpu && seed % 3 == 0;
  p.num_blocks = 1 + static_cast<int>(rng() % (wide ? 700 : 12));
  p.ids.resize(static_cast<size_t>(w.num_tokens * p.num_blocks));
  for (int32_t& id : p.ids) id = static_cast<int32_t>(rng() % 80) - 8;
  p.block_size = 1 + static_cast<int>(rng() % 16);
  return p;
}

candidate_indexer_args random_pool_args(const host_workload& w, const random_case& c,
                                        const random_pool& pool) {
  candidate_indexer_args a = w.candidate_indexer();
  a.topk.order = c.order;
  a.topk.space = c.space;
  a.candidates.blocks = pool.ids.data();
  a.candidates.stride = pool.num_blocks;
  a.candidates.num_blocks = pool.num_blocks;
  a.candidates.block_size = pool.block_size;
  return a;
}

}  // namespace mxi::testing
