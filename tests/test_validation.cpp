// Bad input (docs/semantics.md, "Bad input"): every argument rule gives invalid_argument naming
// the argument in the "<argument> <rule>, got <value>" form; every
// device-data error sets its bit, writes the affected rows as -1 and leaves the others right;
// validate() finds each on the host.
#include <functional>
#include <limits>
#include <string>

#include "catch.hpp"
#include "check.hpp"
#include "host_run.hpp"
#include "workload.hpp"

using namespace mxi;
using namespace mxi::testing;

namespace {

workload_spec small(workload_spec s) {
  s = small_shapes(s);
  s.topk = 16;
  return s;
}

/// A rule: a change to valid arguments, and the argument the error message must name.
template <class Args>
struct rule {
  const char* names;
  std::function<void(Args&)> mutate;
};

/// Whether `message` reads "<name> <rule>, got <value>".
bool names_rule_and_value(const std::string& message, const std::string& name) {
  const size_t got = message.rfind(", got ");
  return message.rfind(name + " ", 0) == 0 && got != std::string::npos &&
         got + 6 < message.size();
}

/// Runs `call` on each mutation of `valid` and expects invalid_argument naming the argument.
template <class Args, class Call>
void expect_rejected(const Args& valid, const std::vector<rule<Args>>& rules, Call&& call) {
  REQUIRE(call(valid).ok());
  for (const rule<Args>& r : rules) {
    Args a = valid;
    r.mutate(a);
    const status s = call(a);
    INFO("rule naming " << r.names << ": " << s.message());
    CHECK(s.code() == status_code::invalid_argument);
    CHECK(names_rule_and_value(s.message(), r.names));
  }
}

execution on(backend b) {
  execution e;
  e.where = b;
  return e;
}

/// Checks that `rows` of a run are all -1 and every other row passes the exact checker.
void expect_failed_rows(const host_workload& w, const host_result<indexer_args>& r,
                        const std::function<bool(int64_t)>& failed) {
  for (int64_t t = 0; t < w.num_tokens; ++t) {
    const int32_t* row = r.topk.data() + t * r.args.topk.stride;
    INFO("token " << t);
    if (failed(t)) {
      CHECK(std::count(row, row + r.args.topk.k, -1) == r.args.topk.k);
      if (r.args.candidates.blocks)
        CHECK(std::count(r.candidates.begin() + t * r.args.candidates.stride,
                         r.candidates.begin() + t * r.args.candidates.stride +
                             r.args.candidates.num_blocks,
                         -1) == r.args.candidates.num_blocks);
    } else {
      CHECK(check_topk_row(w, exact_row(w, t), row, r.args.topk) == "");
    }
  }
}

}  // namespace

TEST_CASE("every argument rule of entry A names the argument") {
  const host_workload w = make_workload(small(decode_spec(2, 100, 2, 31)));
  std::vector<int32_t> topk(static_cast<size_t>(w.num_tokens * 16));
  std::vector<float> logits(static_cast<size_t>(w.num_tokens * w.max_model_len));
  std::vector<int32_t> pool(static_cast<size_t>(w.num_tokens * 4));
  indexer_args valid = w.indexer();
  valid.topk.indices = topk.data();
  using A = indexer_args;
  const std::vector<rule<A>> rules = {
      {"queries.num_heads", [](A& a) { a.queries.num_heads = 24; }},
      {"queries.num_heads", [](A& a) { a.queries.num_heads = 144; }},
      {"queries.head_dim", [](A& a) { a.queries.head_dim = 128; }},
      {"cache.head_dim", [](A& a) { a.cache.head_dim = a.queries.head_dim = 48; }},
      {"cache.head_dim", [](A& a) { a.cache.head_dim = a.queries.head_dim = 544; }},
      {"cache.block_size", [](A& a) { a.cache.block_size = 8; }},
      {"cache.block_size", [](A& a) { a.cache.block_size = 40; }},
      {"cache.block_size", [](A& a) { a.cache.block_size = 2048; }},
      {"cache.page_stride", [](A& a) { a.cache.page_stride += 8; }},
      {"cache.page_stride", [](A& a) { a.cache.page_stride -= 16; }},
      {"cache.num_pages", [](A& a) { a.cache.num_pages = -1; }},
      {"cache.data", [](A& a) { a.cache.data = nullptr; }},
      {"cache.data", [](A& a) { a.cache.data += 4; }},
      {"cache.layout", [](A& a) { a.cache.layout = static_cast<cache_layout>(7); }},
      {"cache.num_pages * cache.page_stride", [](A& a) { a.cache.num_pages = int64_t{1} << 60; }},
      {"queries.values", [](A& a) { a.queries.values = nullptr; }},
      {"queries.scales", [](A& a) { a.queries.scales = nullptr; }},
      {"queries.weights", [](A& a) { a.queries.weights = nullptr; }},
      {"queries.num_tokens", [](A& a) { a.queries.num_tokens = -1; }},
      {"queries.num_tokens * H * D", [](A& a) { a.queries.num_tokens = int64_t{1} << 60; }},
      {"requests.query_start_loc", [](A& a) { a.requests.query_start_loc = nullptr; }},
      {"requests.seq_lens", [](A& a) { a.requests.seq_lens = nullptr; }},
      {"requests.block_table", [](A& a) { a.requests.block_table = nullptr; }},
      {"requests.num_requests", [](A& a) { a.requests.num_requests = -1; }},
      {"requests.block_table_stride", [](A& a) { a.requests.block_table_stride = -1; }},
      {"compress_ratio", [](A& a) { a.compress_ratio = 0; }},
      {"max_model_len", [](A& a) { a.max_model_len = 0; }},
      {"topk.k", [](A& a) { a.topk.k = 0; }},
      {"topk.k", [](A& a) { a.topk.k = a.topk.stride = 4097; }},
      {"topk.stride", [](A& a) { a.topk.stride = a.topk.k - 1; }},
      {"topk.indices", [](A& a) { a.topk.indices = nullptr; }},
      {"topk.order", [](A& a) { a.topk.order = static_cast<output_order>(9); }},
      {"topk.space", [](A& a) { a.topk.space = static_cast<index_space>(9); }},
      {"cache.num_pages * cache.block_size",
       [](A& a) {
         a.topk.space = index_space::cache_slot;
         a.cache.num_pages = (int64_t{1} << 31) / a.cache.block_size + 1;
       }},
      {"logits.stride", [&](A& a) { a.logits.data = logits.data(), a.logits.stride = a.max_model_len - 1; }},
      {"candidates.num_blocks", [&](A& a) { a.candidates.blocks = pool.data(), a.candidates.stride = 4; }},
      {"candidates.block_size",
       [&](A& a) {
         a.candidates.blocks = pool.data();
         a.candidates.num_blocks = a.candidates.stride = 4;
         a.candidates.block_size = 0;
       }},
      {"candidates.stride",
       [&](A& a) {
         a.candidates.blocks = pool.data();
         a.candidates.num_blocks = 4;
         a.candidates.stride = 3;
       }},
  };
  for (backend b : host_backends)
    expect_rejected(valid, rules, [&](const A& a) { return run_indexer(a, on(b)); });
  expect_rejected(valid, rules, [](const A& a) { return validate(a); });
  size_t bytes = 1;
  CHECK(workspace_bytes(valid, backend::cpu, bytes).ok());
  CHECK(bytes == 0);
}

TEST_CASE("every argument rule of entry B names the argument") {
  const host_workload w = make_workload(small(decode_spec(2, 100, 2, 32)));
  std::vector<int32_t> topk(static_cast<size_t>(w.num_tokens * 16));
  std::vector<int32_t> pool(static_cast<size_t>(w.num_tokens * 4), 0);
  candidate_indexer_args valid = w.candidate_indexer();
  valid.topk.indices = topk.data();
  valid.candidates.blocks = pool.data();
  valid.candidates.num_blocks = valid.candidates.stride = 4;
  using B = candidate_indexer_args;
  const std::vector<rule<B>> rules = {
      {"candidates.blocks", [](B& a) { a.candidates.blocks = nullptr; }},
      {"candidates.num_blocks", [](B& a) { a.candidates.num_blocks = 0; }},
      {"candidates.block_size", [](B& a) { a.candidates.block_size = 0; }},
      {"candidates.stride", [](B& a) { a.candidates.stride = 2; }},
      {"queries.num_heads", [](B& a) { a.queries.num_heads = 8; }},
      {"topk.k", [](B& a) { a.topk.k = -3; }},
      {"cache.page_stride", [](B& a) { a.cache.page_stride = 1000; }},
  };
  for (backend b : host_backends)
    expect_rejected(valid, rules, [&](const B& a) { return run_candidate_indexer(a, on(b)); });
  expect_rejected(valid, rules, [](const B& a) { return validate(a); });
}

TEST_CASE("every rule of float queries (queries.q) names the argument, on both entry points") {
  const host_workload w = make_workload(small(decode_spec(2, 100, 2, 34)));
  std::vector<int32_t> topk(static_cast<size_t>(w.num_tokens * 16));
  std::vector<int32_t> pool(static_cast<size_t>(w.num_tokens * 4), 0);
  // fp32 queries, one element of room so that a pointer can sit off its element.
  std::vector<float> q(static_cast<size_t>(w.num_tokens * 16 * 64) + 1);
  const auto* at = reinterpret_cast<const uint8_t*>(q.data());
  const auto floats = [&](auto& a) {
    a.topk.indices = topk.data();
    a.queries.values = a.queries.scales = nullptr;
    a.queries.q = q.data();
  };
  indexer_args valid = w.indexer();
  floats(valid);
  candidate_indexer_args valid_b = w.candidate_indexer();
  floats(valid_b);
  valid_b.candidates.blocks = pool.data();
  valid_b.candidates.num_blocks = valid_b.candidates.stride = 4;
  const auto rules_of = [&](auto type_tag) {
    using X = decltype(type_tag);
    return std::vector<rule<X>>{
        {"queries.values", [&](X& a) { a.queries.values = w.q_values.data(); }},  // both given
        {"queries.scales", [&](X& a) { a.queries.scales = w.q_scales.data(); }},
        {"queries.values", [](X& a) { a.queries.q = nullptr; }},  // neither
        {"queries.q_type", [](X& a) { a.queries.q_type = static_cast<float_type>(2); }},
        {"queries.rule", [](X& a) { a.queries.rule = static_cast<format::scale_rule>(2); }},
        {"queries.q", [&](X& a) { a.queries.q = at + 2; }},
        {"queries.q", [&](X& a) { a.queries.q = at + 1, a.queries.q_type = float_type::bf16; }},
        {"queries.weights", [](X& a) { a.queries.weights = nullptr; }},
    };
  };
  using A = indexer_args;
  using B = candidate_indexer_args;
  for (backend b : host_backends) {
    expect_rejected(valid, rules_of(A{}), [&](const A& a) { return run_indexer(a, on(b)); });
    expect_rejected(valid_b, rules_of(B{}),
                    [&](const B& a) { return run_candidate_indexer(a, on(b)); });
  }
  expect_rejected(valid, rules_of(A{}), [](const A& a) { return validate(a); });
  size_t bytes = 1;
  CHECK(workspace_bytes(valid, backend::cpu, bytes).ok());
  CHECK(bytes == 0);

  // The messages say which of the two forms is wanted.
  indexer_args both = valid;
  both.queries.values = w.q_values.data();
  CHECK(validate(both).message() ==
        "queries.values must be null when queries.q is set (the call quantizes q itself), got a "
        "pointer");
  indexer_args neither = valid;
  neither.queries.q = nullptr;
  CHECK(validate(neither).message() ==
        "queries.values must not be null when queries.num_tokens > 0 and queries.q is null, got "
        "null");
  indexer_args odd = valid;
  odd.queries.q = at + 2;
  CHECK(validate(odd).message() ==
        "queries.q must be 4-byte aligned (f32 elements); address mod 4, got 2");
  // bf16 queries need 2-byte alignment only; no tokens, nothing checked.
  indexer_args bf16 = valid;
  bf16.queries.q = at + 2;
  bf16.queries.q_type = float_type::bf16;
  CHECK(validate(bf16).ok());
  indexer_args empty;
  empty.queries.q = at + 1;
  empty.queries.values = w.q_values.data();
  CHECK(validate(empty).ok());
}

TEST_CASE("every argument rule of the writer and the quantizer names the argument") {
  std::vector<uint8_t> cache(4 * 16 * 40);
  std::vector<float> k(2 * 64);
  std::vector<int64_t> slots = {0, 1};
  k_cache_write_args kw;
  kw.k = k.data();
  kw.num_tokens = 2;
  kw.slot_mapping = slots.data();
  kw.cache.data = cache.data();
  kw.cache.num_pages = 4;
  kw.cache.block_size = 16;
  kw.cache.head_dim = 64;
  kw.cache.page_stride = 16 * 40;
  using W = k_cache_write_args;
  expect_rejected(kw,
                  std::vector<rule<W>>{
                      {"k", [](W& a) { a.k = nullptr; }},
                      {"k", [](W& a) { a.k = reinterpret_cast<const char*>(a.k) + 2; }},
                      {"slot_mapping", [](W& a) { a.slot_mapping = nullptr; }},
                      {"num_tokens", [](W& a) { a.num_tokens = -2; }},
                      {"k_type", [](W& a) { a.k_type = static_cast<float_type>(5); }},
                      {"rule", [](W& a) { a.rule = static_cast<format::scale_rule>(5); }},
                      {"cache.head_dim", [](W& a) { a.cache.head_dim = 100; }},
                      {"cache.page_stride", [](W& a) { a.cache.page_stride = 16 * 34 - 16; }},
                      {"cache.data", [](W& a) { a.cache.data = nullptr; }},
                  },
                  [](const W& a) { return write_k_cache(a, on(backend::reference)); });

  std::vector<float> q(2 * 16 * 64);
  std::vector<uint8_t> values(2 * 16 * 32), scales(2 * 16 * 2);
  q_quantize_args qq;
  qq.q = q.data();
  qq.num_tokens = 2;
  qq.num_heads = 16;
  qq.head_dim = 64;
  qq.values = values.data();
  qq.scales = scales.data();
  using Q = q_quantize_args;
  expect_rejected(qq,
                  std::vector<rule<Q>>{
                      {"q", [](Q& a) { a.q = nullptr; }},
                      {"q", [](Q& a) { a.q = reinterpret_cast<const char*>(a.q) + 1; }},
                      {"values", [](Q& a) { a.values = nullptr; }},
                      {"scales", [](Q& a) { a.scales = nullptr; }},
                      {"num_heads", [](Q& a) { a.num_heads = 20; }},
                      {"head_dim", [](Q& a) { a.head_dim = 16; }},
                      {"num_tokens", [](Q& a) { a.num_tokens = -1; }},
                      {"q_type", [](Q& a) { a.q_type = static_cast<float_type>(3); }},
                      {"num_tokens * num_heads * head_dim",
                       [](Q& a) { a.num_tokens = int64_t{1} << 58; }},
                  },
                  [](const Q& a) { return quantize_q(a, on(backend::cpu)); });
}

TEST_CASE("the top-k bound a message states is max_topk_k") {
  const host_workload w = make_workload(small(decode_spec(1, 50, 1, 33)));
  std::vector<int32_t> topk(static_cast<size_t>(w.num_tokens) * (max_topk_k + 1));
  indexer_args a = w.indexer();
  a.topk.indices = topk.data();
  a.topk.k = a.topk.stride = max_topk_k + 1;
  CHECK(run_indexer(a, on(backend::reference)).message() ==
        "topk.k must be in [1, " + std::to_string(max_topk_k) + "], got " + std::to_string(max_topk_k + 1));
}

TEST_CASE("execution rules, backends and device-error descriptions") {
  const host_workload w = make_workload(small(decode_spec(1, 50, 1, 33)));
  std::vector<int32_t> topk(16);
  indexer_args a = w.indexer();
  a.topk.indices = topk.data();
  execution e;
  e.num_threads = -1;
  CHECK(run_indexer(a, e).message().find("exec.num_threads") != std::string::npos);
  e.num_threads = 0;
  e.where = static_cast<backend>(7);
  CHECK(run_indexer(a, e).message().find("exec.where") != std::string::npos);
  CHECK(backend_available(backend::reference));
  CHECK(backend_available(backend::cpu));
  if (!backend_available(backend::gpu)) {
    CHECK(best_backend() == backend::cpu);
    const status s = run_indexer(a, on(backend::gpu));
    CHECK(s.code() == status_code::backend_unavailable);
    // A CPU-only build says it has no GPU backend; a GPU build on a machine without a device
    // says no device is present.
    CHECK((s.message().find("without a GPU backend") != std::string::npos ||
           s.message().find("no GPU device") != std::string::npos));
  }
  CHECK(describe_device_errors(0).empty());
  CHECK(describe_device_errors(device_error_block_table).find("block-table") != std::string::npos);
  CHECK(describe_device_errors(device_error_seq_len | device_error_slot_mapping).find("; ") !=
        std::string::npos);
}

TEST_CASE("device-data errors: bit set, affected rows -1, other rows right, validate finds it") {
  workload_spec s = small(prefill_spec({20, 45, 30}, 34));
  const host_workload base = make_workload(s);
  struct scenario {
    const char* name;
    uint32_t bit;
    std::function<void(host_workload&, indexer_args&)> mutate;
    std::function<bool(const host_workload&, int64_t)> failed;  // on the unmutated workload
    std::string says;  ///< the start and the end of validate()'s message
    std::string got;
  };
  const int bs = s.block_size;
  const std::vector<scenario> scenarios = {
      {"query_start_loc", device_error_query_start_loc,
       [](host_workload& w, indexer_args&) { w.query_start_loc[2] = w.query_start_loc[1] - 1; },
       [](const host_workload&, int64_t) { return true; }, "requests.query_start_loc",
       ", got [0, 20, 19, 95]"},
      {"query_start_loc end", device_error_query_start_loc,
       [](host_workload& w, indexer_args&) { w.query_start_loc.back() -= 1; },
       [](const host_workload&, int64_t) { return true; }, "requests.query_start_loc",
       ", got [0, 20, 65, 94]"},
      {"seq_lens", device_error_seq_len,
       [](host_workload& w, indexer_args&) { w.seq_lens[1] = 44; },
       [](const host_workload& w, int64_t t) { return w.request_of(t) == 1; },
       "requests.seq_lens[1]", ", got 44"},
      {"max_model_len", device_error_max_model_len,
       [](host_workload&, indexer_args& a) { a.max_model_len = 35; },
       [](const host_workload& w, int64_t t) { return w.visible(t) > 35; }, "max_model_len",
       ", got 35 (requests.seq_lens[1] = 45)"},
      {"block_table id", device_error_block_table,
       [](host_workload& w, indexer_args&) {
         w.block_table[1 * w.max_blocks + 2] = static_cast<int32_t>(w.num_pages);
       },
       [bs](const host_workload& w, int64_t t) {
         return w.request_of(t) == 1 && w.visible(t) > 2 * bs;
       },
       "requests.block_table",
       ", got requests.block_table[1][2] = " + std::to_string(base.num_pages)},
      {"block_table negative", device_error_block_table,
       [](host_workload& w, indexer_args&) { w.block_table[2 * w.max_blocks + 0] = -5; },
       [](const host_workload& w, int64_t t) { return w.request_of(t) == 2; },
       "requests.block_table", ", got requests.block_table[2][0] = -5"},
  };
  for (const scenario& sc : scenarios) {
    host_workload w = base;
    indexer_args a = w.indexer();
    sc.mutate(w, a);
    a.candidates.num_blocks = 3;
    a.logits.stride = base.max_model_len;
    a.logits.clean = true;
    std::vector<int32_t> out(static_cast<size_t>(w.num_tokens * 16));
    indexer_args checked = a;
    checked.topk.indices = out.data();
    checked.candidates.blocks = nullptr;
    const status v = validate(checked);
    INFO(sc.name << ": " << v.message());
    CHECK(v.code() == status_code::invalid_argument);
    CHECK(names_rule_and_value(v.message(), sc.says));
    CHECK(v.message().size() >= sc.got.size());
    CHECK(v.message().compare(v.message().size() - std::min(v.message().size(), sc.got.size()),
                              std::string::npos, sc.got) == 0);
    for (backend b : host_backends) {
      const auto r = run_host(a, b);
      REQUIRE(r.st.ok());
      CHECK(r.error_word == sc.bit);
      expect_failed_rows(base, r, [&](int64_t t) { return sc.failed(base, t); });
      for (int64_t t = 0; t < w.num_tokens; ++t)
        if (sc.failed(base, t))
          CHECK(r.logits[t * a.logits.stride] == -std::numeric_limits<float>::infinity());
    }
  }
  // Too few block-table columns: a table one column narrower than the longest row needs.
  host_workload w = base;
  const int64_t narrow = w.max_blocks - 1;
  std::vector<int32_t> table;
  for (int r = 0; r < 3; ++r)
    for (int64_t c = 0; c < narrow; ++c) table.push_back(w.block_table[r * w.max_blocks + c]);
  indexer_args a = w.indexer();
  a.requests.block_table = table.data();
  a.requests.block_table_stride = narrow;
  for (backend b : host_backends) {
    const auto r = run_host(a, b);
    CHECK(r.error_word == device_error_block_table);
    expect_failed_rows(base, r, [&](int64_t t) { return w.visible(t) > narrow * bs; });
  }
  std::vector<int32_t> out(static_cast<size_t>(w.num_tokens * 16));
  a.topk.indices = out.data();
  CHECK(validate(a).code() == status_code::invalid_argument);
  a = base.indexer();
  a.topk.indices = out.data();
  CHECK(validate(a).ok());
}

TEST_CASE("entry B: a bad page in a row's visible range fails the row, read by a candidate or not") {
  // The block table covers every visible page of a request; the GPU checks that once
  // per request, so the CPU backends fail the same rows.
  workload_spec s = small(decode_spec(2, 150, 1, 35));
  s.seq_lens = {100, 190};  // request 0 needs 7 block-table columns of 12
  const host_workload base = make_workload(s);
  const int ncb = 2, cbs = 8;
  std::vector<int32_t> ids = {0, 1, 0, 1};  // positions 0 .. 15: page column 0 only
  auto args_for = [&](const host_workload& w) {
    candidate_indexer_args a = w.candidate_indexer();
    a.candidates.blocks = ids.data();
    a.candidates.num_blocks = a.candidates.stride = ncb;
    a.candidates.block_size = cbs;
    return a;
  };
  std::vector<int32_t> out(32);
  host_workload w = base;
  w.block_table[0 * w.max_blocks + 9] = -1;  // past request 0's visible range: never needed
  for (backend b : host_backends) {
    const auto r = run_host(args_for(w), b);
    CHECK(r.error_word == 0);
    CHECK(check_candidate_indexer(base, r.args) == "");
  }
  w.block_table[0 * w.max_blocks + 3] = -1;  // visible to token 0, but no candidate reads it
  for (backend b : host_backends) {
    const auto r = run_host(args_for(w), b);
    CHECK(r.error_word == device_error_block_table);
    CHECK(std::count(r.topk.begin(), r.topk.begin() + 16, -1) == 16);
    CHECK(check_topk_row(base, exact_candidate_row(base, 1, ids.data() + ncb, ncb, cbs),
                         r.topk.data() + 16, r.args.topk) == "");
  }
  candidate_indexer_args a = args_for(w);
  a.topk.indices = out.data();
  CHECK(validate(a).code() == status_code::invalid_argument);
}

TEST_CASE("a default-constructed call is a valid empty one, and a stride matters only when used") {
  for (backend b : host_backends) {
    INFO("backend " << static_cast<int>(b));
    CHECK(run_indexer(indexer_args{}, on(b)).ok());
    CHECK(run_candidate_indexer(candidate_indexer_args{}, on(b)).ok());
  }
  CHECK(validate(indexer_args{}).ok());
  CHECK(validate(candidate_indexer_args{}).ok());
  size_t bytes = 1;
  CHECK(workspace_bytes(indexer_args{}, backend::cpu, bytes).ok());
  CHECK(bytes == 0);

  // Once there are pages, tokens or a pool, their strides and bounds are checked again.
  uint8_t page[16] = {};
  indexer_args paged;
  paged.cache.data = page;
  paged.cache.num_pages = 1;
  CHECK(validate(paged).message() ==
        "cache.page_stride must be >= block_size * (head_dim/2 + head_dim/32) = 4352, got 0");
  const host_workload w = make_workload(small(decode_spec(1, 40, 1, 37)));
  std::vector<int32_t> out(16);
  indexer_args tokens = w.indexer();
  tokens.topk.indices = out.data();
  tokens.max_model_len = 0;
  CHECK(validate(tokens).message() ==
        "max_model_len must be >= 1 when queries.num_tokens > 0, got 0");
  tokens = w.indexer();
  tokens.topk.indices = out.data();
  tokens.topk.stride = 0;
  CHECK(validate(tokens).message() ==
        "topk.stride must be >= topk.k when queries.num_tokens > 0, got 0");
}

TEST_CASE("null pointers and overflowing sizes are reported in full") {
  const host_workload w = make_workload(small(decode_spec(1, 40, 1, 38)));
  std::vector<int32_t> out(16);
  indexer_args a = w.indexer();
  a.topk.indices = out.data();
  a.queries.weights = nullptr;
  CHECK(validate(a).message() ==
        "queries.weights must not be null when queries.num_tokens > 0, got null");
  a = w.indexer();
  a.topk.indices = out.data();
  a.requests.query_start_loc = nullptr;
  CHECK(validate(a).message() == "requests.query_start_loc must not be null when "
                                 "requests.num_requests or queries.num_tokens > 0, got null");
  a = w.indexer();
  a.topk.indices = out.data();
  a.cache.num_pages = int64_t{1} << 60;
  CHECK(validate(a).message() == "cache.num_pages * cache.page_stride must fit in int64, got " +
                                     std::to_string(int64_t{1} << 60) + " * " +
                                     std::to_string(w.page_stride));
}

TEST_CASE("a null error word is allowed") {
  host_workload w = make_workload(small(decode_spec(1, 60, 1, 36)));
  w.seq_lens[0] = -1;
  std::vector<int32_t> out(16, 0);
  indexer_args a = w.indexer();
  a.topk.indices = out.data();
  for (backend b : host_backends) {
    CHECK(run_indexer(a, on(b)).ok());
    CHECK(std::count(out.begin(), out.end(), -1) == 16);
  }
}
