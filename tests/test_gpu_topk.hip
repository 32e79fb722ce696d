// The GPU selection building blocks on synthetic score rows, compared bit for bit with a host
// model of the contract (the selection is exact, so there is no tolerance here): the radix
// select in both orders, candidate prep, and candidate publish. Indexer-level cases live in
// test_gpu_indexer.cpp.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "catch.hpp"
#include "device_buffer.hpp"
#include "mxi/device/candidates.hpp"
#include "mxi/device/topk.hpp"
#include "skip.hpp"

namespace {

using namespace mxi;
using mxi::testing::device_buffer;
using mxi::testing::gpu_check;

#define REQUIRE_GPU() \
  if (!mxi::testing::gpu_present()) MXI_SKIP("no GPU: the GPU top-k tests need a device")

/// Rows of scores with their lengths (-1: a broken row), stored [rows][width].
struct score_rows {
  int64_t width = 0;
  std::vector<float> scores;
  std::vector<int32_t> lengths;
  int64_t rows() const { return static_cast<int64_t>(lengths.size()); }
  void add(const std::vector<float>& row, int32_t length) {
    std::vector<float> padded(row);
    padded.resize(static_cast<size_t>(width), std::numeric_limits<float>::quiet_NaN());
    scores.insert(scores.end(), padded.begin(), padded.end());
    lengths.push_back(length);
  }
};

/// The contract's answer for one row: the best k columns by (key desc, column asc), in `order`.
std::vector<int32_t> expected_row(const float* s, int32_t n, int k, output_order order) {
  std::vector<int32_t> out(static_cast<size_t>(k), -1);
  if (n <= 0) return out;
  std::vector<int32_t> cols(static_cast<size_t>(n));
  for (int32_t c = 0; c < n; ++c) cols[c] = c;
  auto better = [&](int32_t a, int32_t b) {
    const uint32_t ka = block::score_key(s[a]), kb = block::score_key(s[b]);
    return ka != kb ? ka > kb : a < b;
  };
  const int taken = std::min(n, k);
  std::partial_sort(cols.begin(), cols.begin() + taken, cols.end(), better);
  cols.resize(static_cast<size_t>(taken));
  if (order == output_order::position) std::sort(cols.begin(), cols.end());
  std::copy(cols.begin(), cols.end(), out.begin());
  return out;
}

/// The current device's target, whose top-k values (device::topk_config_for) the launches use.
arch::target device_target() {
  arch::target t = arch::target::generic;
  gpu_check(device::current_target(&t), "current_target");
  return t;
}

/// Which kernels a device select may take: the tuned ones (the cluster select on sm90 in position
/// order), the one-block kernel for rows that fit and the passes for the rest, or every row on the
/// multi-block passes.
enum class path { tuned, one_block, passes };

const char* path_name(path p) {
  return p == path::tuned ? "tuned" : p == path::one_block ? "one-block" : "passes";
}

/// Runs launch_topk<Config> with the column as the output index; `width` (0: the rows' stride) is
/// the shape's bound on the lengths.
template <device::topk_config (*Config)()>
std::vector<int32_t> select_with(const score_rows& in, int k, output_order order, int64_t width) {
  const device::topk_shape shape{in.rows(), width > 0 ? width : in.width, k, order};
  device_buffer<float> scores(in.scores);
  device_buffer<int32_t> lengths(in.lengths);
  device_buffer<int32_t> out(static_cast<size_t>(in.rows()) * k);
  out.fill_bytes(0x7F);
  device_buffer<char> workspace(device::topk_workspace_bytes(shape));
  gpu_check(device::launch_topk<Config>(shape, device::float_score_keys{scores.data(), in.width},
                                        device::int_lengths{lengths.data()}, device::identity_map{},
                                        out.data(), k, workspace.data(), nullptr),
            "launch_topk");
  gpu_check(platform::device_synchronize(), "synchronize");
  return out.download();
}

std::vector<int32_t> device_select(const score_rows& in, int k, output_order order,
                                   path p = path::tuned, int64_t width = 0) {
  return device::with_target(device_target(), [&](auto target) {
    constexpr arch::target t = decltype(target)::value;
    switch (p) {
      case path::one_block:
        return select_with<device::topk_config_for<t, device::topk_path::one_block>>(in, k, order, width);
      case path::passes:
        return select_with<device::topk_config_for<t, device::topk_path::passes>>(in, k, order, width);
      default:
        return select_with<device::topk_config_for<t>>(in, k, order, width);
    }
  });
}

/// The same rows stored `width` columns apart (padding NaN): past the one-block limit both paths
/// are launched and each row still takes the one its length picks.
score_rows widened(const score_rows& in, int64_t width) {
  score_rows out;
  out.width = width;
  for (int64_t r = 0; r < in.rows(); ++r)
    out.add(std::vector<float>(in.scores.begin() + r * in.width, in.scores.begin() + (r + 1) * in.width),
            in.lengths[r]);
  return out;
}

/// The contract's answer for every row of `in`, back to back.
std::vector<int32_t> expected_rows(const score_rows& in, int k, output_order order) {
  std::vector<int32_t> all;
  for (int64_t r = 0; r < in.rows(); ++r) {
    const std::vector<int32_t> want =
        expected_row(in.scores.data() + r * in.width, in.lengths[r], k, order);
    all.insert(all.end(), want.begin(), want.end());
  }
  return all;
}

/// `got` against `want` row by row, naming the first row that differs.
void require_rows(const score_rows& in, int k, const std::vector<int32_t>& want,
                  const std::vector<int32_t>& got) {
  REQUIRE(got.size() == want.size());
  for (int64_t r = 0; r < in.rows(); ++r) {
    INFO("row " << r << " length " << in.lengths[r] << " width " << in.width << " k " << k);
    REQUIRE(std::equal(want.begin() + r * k, want.begin() + (r + 1) * k, got.begin() + r * k));
  }
}

void check_order(const score_rows& in, int k, output_order order, path p = path::tuned,
                 int64_t width = 0) {
  INFO("order " << (order == output_order::score ? "score" : "position") << " path "
                << path_name(p) << " declared width " << width);
  require_rows(in, k, expected_rows(in, k, order), device_select(in, k, order, p, width));
}

/// Both orders, on the tuned path, the one-block kernel with the passes, and the passes alone.
void check_select(const score_rows& in, int k, int64_t width = 0) {
  for (output_order order : {output_order::position, output_order::score})
    for (path p : {path::tuned, path::one_block, path::passes}) check_order(in, k, order, p, width);
}

/// The cluster select forced to C blocks a row, slices of more than SliceCap columns streamed
/// from global memory (0: as many as shared memory holds), with sm90's numbers (the tuned ones
/// where it runs; elsewhere a cluster of one block is a plain launch).
template <int C, int SliceCap>
constexpr device::topk_config cluster_config() {
  return device::topk_config_for<arch::target::sm90, device::topk_path::cluster, C, SliceCap>();
}

/// The largest cluster the device takes for the cluster select (1 without clusters).
int max_cluster_blocks() {
  int most = 1;
  gpu_check(device::topk_max_cluster_blocks<cluster_config<1, 0>, device::float_score_keys,
                                            device::int_lengths, device::identity_map>(&most),
            "topk_max_cluster_blocks");
  return most;
}

/// Every cluster size the device takes (1 to 8, 16), with slices in shared memory and again
/// with every slice past 700 columns streamed, against the contract and, bit for bit, against the
/// one-block and multi-block paths on the same input (position order: the cluster path's).
void check_clusters(const score_rows& in, int k, int64_t width = 0) {
  const std::vector<int32_t> want = expected_rows(in, k, output_order::position);
  const std::vector<int32_t> one_block = device_select(in, k, output_order::position, path::one_block, width);
  const std::vector<int32_t> passes = device_select(in, k, output_order::position, path::passes, width);
  require_rows(in, k, want, one_block);
  require_rows(in, k, want, passes);
  const int most = max_cluster_blocks();
  int ran = 0;
  const auto run = [&](auto c, auto cap) {
    constexpr int blocks = decltype(c)::value, slice_cap = decltype(cap)::value;
    if (blocks > most) return;
    INFO("cluster of " << blocks << " blocks, slice cap " << slice_cap << " declared width " << width);
    const std::vector<int32_t> got =
        select_with<cluster_config<blocks, slice_cap>>(in, k, output_order::position, width);
    require_rows(in, k, want, got);
    REQUIRE((got == one_block));  // bit for bit (parenthesized: no dump of whole vectors)
    REQUIRE((got == passes));
    ++ran;
  };
  using std::integral_constant;
  const auto both = [&](auto c) {
    run(c, integral_constant<int, 0>{});
    run(c, integral_constant<int, 700>{});
  };
  both(integral_constant<int, 1>{});
  both(integral_constant<int, 2>{});
  both(integral_constant<int, 3>{});
  both(integral_constant<int, 4>{});
  both(integral_constant<int, 5>{});  // the sizes the processing clusters leave (plan_cluster)
  both(integral_constant<int, 6>{});
  both(integral_constant<int, 7>{});
  both(integral_constant<int, 8>{});
  both(integral_constant<int, 16>{});
  if (most < 16) WARN("the device takes clusters of at most " << most << " blocks: larger sizes not run");
  REQUIRE(ran >= 2);
}

std::vector<float> normal_row(int64_t n, std::mt19937_64& rng, float sigma = 1.0f) {
  std::normal_distribution<float> d(0.0f, sigma);
  std::vector<float> row(static_cast<size_t>(n));
  for (float& x : row) x = d(rng);
  return row;
}

/// Rows of ties, n columns each: all equal, all -0, +0 and -0 mixed (equal keys), four values (a
/// huge threshold bin), mostly exact zeros with a few winners (every head's ReLU off).
void add_tie_rows(score_rows& in, int64_t n, std::mt19937_64& rng) {
  in.add(std::vector<float>(n, 0.25f), n);
  in.add(std::vector<float>(n, -0.0f), n);
  std::vector<float> zeros(n, 0.0f);
  for (size_t i = 0; i < zeros.size(); i += 3) zeros[i] = -0.0f;  // -0 ties with +0
  in.add(zeros, n);
  std::vector<float> few(n);
  for (float& x : few) x = static_cast<float>(rng() % 4);
  in.add(few, n);
  std::vector<float> sparse(n, 0.0f);
  for (size_t i = 0; i < sparse.size(); i += 37) sparse[i] = static_cast<float>(rng() % 100);
  in.add(sparse, n);
}

/// Wide-range scores with NaN (both signs), +-inf and denormals sprinkled in; variant 0 has many
/// +inf.
std::vector<float> special_row(int64_t n, std::mt19937_64& rng, int variant) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> row = normal_row(n, rng, 1e30f);
  for (float& x : row) {
    const uint64_t u = rng() % 16;
    if (u == 0) x = nan;
    else if (u == 1) x = -nan;
    else if (u == 2) x = inf;
    else if (u == 3) x = -inf;
    else if (u == 4) x = variant == 0 ? inf : x;
    else if (u == 5) x = std::numeric_limits<float>::denorm_min() * static_cast<float>(rng() % 3);
  }
  return row;
}

}  // namespace

TEST_CASE("gpu top-k: random rows of every length class, both orders", "[gpu][topk]") {
  REQUIRE_GPU();
  std::mt19937_64 rng(7);
  for (int k : {1, 37, 512, 2048, 4096}) {
    score_rows in;
    in.width = 20003;  // not a multiple of 4: rows start at every 4-byte alignment
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{k - 1 > 0 ? k - 1 : 0}, int64_t{k}, int64_t{k + 1},
                      int64_t{4095}, int64_t{4096}, int64_t{4097}, int64_t{12345}, int64_t{20003}})
      in.add(normal_row(n, rng), static_cast<int32_t>(n));
    in.add({}, -1);  // broken row: all -1
    check_select(in, k);
  }
}

TEST_CASE("gpu top-k: more rows than one wave of blocks, some of them short", "[gpu][topk]") {
  // On sm90 the cluster select takes its many-rows blocks here (device/tuning.hpp).
  REQUIRE_GPU();
  std::mt19937_64 rng(13);
  for (int k : {1, 2048}) {
    score_rows in;
    in.width = 9001;
    for (int r = 0; r < 300; ++r) {
      const int64_t n = r % 7 == 0 ? static_cast<int64_t>(rng() % 2100)
                                   : 9001 - static_cast<int64_t>(rng() % 3000);
      in.add(normal_row(n, rng), static_cast<int32_t>(n));
    }
    check_order(in, k, output_order::position);
  }
}

TEST_CASE("gpu top-k: all-equal rows and heavy ties keep the smaller columns", "[gpu][topk]") {
  REQUIRE_GPU();
  constexpr int64_t n = 40000;
  score_rows in;
  in.width = n;
  std::mt19937_64 rng(3);
  add_tie_rows(in, n, rng);
  check_select(in, 2048);
  check_select(in, 4096);
}

TEST_CASE("gpu top-k: rows at the one-block limit and one past", "[gpu][topk]") {
  REQUIRE_GPU();
  std::mt19937_64 rng(19);
  for (int k : {2048, 4096})
    for (output_order order : {output_order::position, output_order::score}) {
      const int64_t limit = device::topk_one_block_width(device::topk_shape{1, 1, k, order});
      REQUIRE(limit > 8192);  // a Hopper or CDNA block holds far more (227 KB, 160 KB)
      for (int64_t width : {limit, limit + 1}) {
        score_rows in;
        in.width = width;
        in.add(normal_row(width, rng), static_cast<int32_t>(width));
        in.add(normal_row(width - 1, rng), static_cast<int32_t>(width - 1));
        in.add(std::vector<float>(static_cast<size_t>(width), 1.5f), static_cast<int32_t>(width));
        in.add(normal_row(k, rng), k);
        // Enough rows that rows at the limit take the one-block kernel beside longer ones.
        for (int r = 0; r < device::topk_config_for(device_target()).one_block_min_rows; ++r)
          in.add(normal_row(1000 + r, rng), 1000 + r);
        check_order(in, k, order, path::one_block);
        check_order(in, k, order);
      }
    }
}

TEST_CASE("gpu top-k: more segments than blocks a row, beside short rows", "[gpu][topk]") {
  REQUIRE_GPU();
  // 40 rows past 200K columns: the passes give a row fewer blocks than segments, so each block
  // walks several; the short rows of the same call take the one-block kernel.
  std::mt19937_64 rng(23);
  score_rows in;
  in.width = 210000;
  for (int r = 0; r < 40; ++r) {
    const int32_t n = r % 4 == 0 ? static_cast<int32_t>(3000 + r) : static_cast<int32_t>(210000 - 997 * r);
    in.add(normal_row(n, rng), n);
  }
  in.add({}, -1);
  for (output_order order : {output_order::position, output_order::score}) {
    check_order(in, 2048, order);
    check_order(in, 2048, order, path::one_block);
  }
}

/// Counts the floats whose device score_key differs from the contract's order written out
/// (NaN lowest and all equal, -0 with +0, negative scores below positive ones, bits kept), and
/// the least such bit pattern.
__global__ void score_key_mismatches(uint32_t* count, uint32_t* least) {
  const uint64_t step = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
       i < (uint64_t{1} << 32); i += step) {
    const auto bits = static_cast<uint32_t>(i);
    uint32_t want = bits >> 31 ? ~bits : bits | 0x80000000u;
    if (bits == 0x80000000u) want = 0x80000000u;       // -0 is +0
    if ((bits & 0x7FFFFFFFu) > 0x7F800000u) want = 0;  // NaN
    if (block::score_key(__uint_as_float(bits)) != want) {
      atomicAdd(count, 1u);
      atomicMin(least, bits);
    }
  }
}

TEST_CASE("gpu score_key: every float's key is the contract's order", "[gpu][topk]") {
  REQUIRE_GPU();
  device_buffer<uint32_t> count(std::vector<uint32_t>{0});
  device_buffer<uint32_t> least(std::vector<uint32_t>{0xFFFFFFFFu});
  score_key_mismatches<<<1024, 256>>>(count.data(), least.data());
  gpu_check(platform::last_error(), "score_key_mismatches");
  gpu_check(platform::device_synchronize(), "synchronize");
  INFO("least mismatching bits 0x" << std::hex << least.download()[0]);
  REQUIRE(count.download()[0] == 0u);
}

TEST_CASE("gpu top-k: NaN lowest, then -inf, finite, +inf", "[gpu][topk]") {
  REQUIRE_GPU();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::mt19937_64 rng(11);
  score_rows in;
  in.width = 9000;
  for (int variant = 0; variant < 4; ++variant) in.add(special_row(9000, rng, variant), 9000);
  in.add(std::vector<float>(9000, nan), 9000);  // only NaN: still k of them, smallest columns
  check_select(in, 100);
  check_select(in, 4096);
}

TEST_CASE("gpu top-k: 256K-wide rows, k = 4096", "[gpu][topk][large]") {
  REQUIRE_GPU();
  std::mt19937_64 rng(5);
  score_rows in;
  in.width = 262144;
  for (int r = 0; r < 3; ++r) in.add(normal_row(262144 - r * 1000, rng), 262144 - r * 1000);
  in.add(std::vector<float>(262144, 1.0f), 262144);
  check_select(in, 4096);
}

TEST_CASE("gpu top-k: a row gives the same bits alone and in a batch", "[gpu][topk]") {
  REQUIRE_GPU();
  std::mt19937_64 rng(9);
  const std::vector<float> row = normal_row(50000, rng);
  score_rows alone;
  alone.width = 50000;
  alone.add(row, 50000);
  score_rows batch;
  batch.width = 50000;
  for (int r = 0; r < 40; ++r)
    if (r == 17) batch.add(row, 50000);
    else batch.add(normal_row(30000 + r * 500, rng), 30000 + r * 500);
  for (output_order order : {output_order::position, output_order::score}) {
    const std::vector<int32_t> a = device_select(alone, 2048, order);
    const std::vector<int32_t> b = device_select(batch, 2048, order);
    REQUIRE(std::equal(a.begin(), a.end(), b.begin() + 17 * 2048));
    // and the same bits from the other paths, and from a width past the one-block limit
    for (path p : {path::one_block, path::passes}) {
      const std::vector<int32_t> c = device_select(batch, 2048, order, p);
      REQUIRE(std::equal(a.begin(), a.end(), c.begin() + 17 * 2048));
    }
    const int64_t limit = device::topk_one_block_width(device::topk_shape{40, 50000, 2048, order});
    for (path p : {path::tuned, path::one_block}) {
      const std::vector<int32_t> d = device_select(widened(batch, limit + 1), 2048, order, p);
      REQUIRE(std::equal(a.begin(), a.end(), d.begin() + 17 * 2048));
    }
  }
}

// The cluster cases are one test case a k, so racecheck, which takes minutes a k, can run them in
// parts by test name (tools/device-check.sh's topk_specs name every GPU case of this file).

namespace {

/// Every cluster size on rows of every length class around k.
void check_cluster_lengths(int k) {
  std::mt19937_64 rng(29 + k);
  score_rows in;
  in.width = 20003;  // not a multiple of 4: rows start at every 4-byte alignment
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{5}, int64_t{k - 1 > 0 ? k - 1 : 0}, int64_t{k},
                    int64_t{k + 1}, int64_t{k + 3}, int64_t{4095}, int64_t{4097}, int64_t{12345},
                    int64_t{20003}})
    in.add(normal_row(n, rng), static_cast<int32_t>(n));
  in.add({}, -1);  // broken rows: all -1
  in.add(normal_row(100, rng), -7);
  check_clusters(in, k);
}

}  // namespace

TEST_CASE("gpu top-k clusters k 1: every cluster size, every length class",
          "[gpu][topk][cluster]") {
  REQUIRE_GPU();
  check_cluster_lengths(1);
}
TEST_CASE("gpu top-k clusters k 2: every cluster size, every length class",
          "[gpu][topk][cluster]") {
  REQUIRE_GPU();
  check_cluster_lengths(2);
}
TEST_CASE("gpu top-k clusters k 37: every cluster size, every length class",
          "[gpu][topk][cluster]") {
  REQUIRE_GPU();
  check_cluster_lengths(37);
}
TEST_CASE("gpu top-k clusters k 512: every cluster size, every length class",
          "[gpu][topk][cluster]") {
  REQUIRE_GPU();
  check_cluster_lengths(512);
}
TEST_CASE("gpu top-k clusters k 2048: every cluster size, every length class",
          "[gpu][topk][cluster]") {
  REQUIRE_GPU();
  check_cluster_lengths(2048);
}
TEST_CASE("gpu top-k clusters k 4095: every cluster size, every length class",
          "[gpu][topk][cluster]") {
  REQUIRE_GPU();
  check_cluster_lengths(4095);
}
TEST_CASE("gpu top-k clusters k 4096: every cluster size, every length class",
          "[gpu][topk][cluster]") {
  REQUIRE_GPU();
  check_cluster_lengths(4096);
}

namespace {

/// Every cluster size on rows of ties, NaN and infinities.
void check_cluster_ties(int k) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  constexpr int64_t n = 40000;
  std::mt19937_64 rng(31);
  score_rows in;
  in.width = n;
  add_tie_rows(in, n, rng);
  // The threshold's ties spread over every slice (the ties before a slice decide which of its
  // own are taken), and all in the last slices.
  std::vector<float> spread(n), last(n);
  for (int64_t c = 0; c < n; ++c) {
    spread[c] = static_cast<float>(c % 16);
    last[c] = static_cast<float>((c * 16) / n);
  }
  in.add(spread, n);
  in.add(last, n);
  // Scores on a grid of 1/64: the threshold's bin holds a few grid values of about 60 equal keys
  // each, which the pool ranks (block_radix_select::rank) rather than passes over.
  std::normal_distribution<float> normal;
  std::vector<float> gridded(n);
  for (float& x : gridded) x = std::round(normal(rng) * 64.0f) / 64.0f;
  in.add(gridded, n);
  for (int variant = 0; variant < 3; ++variant)
    in.add(special_row(n, rng, variant), static_cast<int32_t>(n - variant * 13));
  in.add(std::vector<float>(n, nan), n);  // only NaN: still k of them, smallest columns
  in.add(std::vector<float>(n, -inf), n / 2);
  check_clusters(in, k);
}

}  // namespace

TEST_CASE("gpu top-k cluster ties k 1: all-equal rows, heavy ties, NaN and infinities",
          "[gpu][topk][cluster]") {
  REQUIRE_GPU();
  check_cluster_ties(1);
}
TEST_CASE("gpu top-k cluster ties k 100: all-equal rows, heavy ties, NaN and infinities",
          "[gpu][topk][cluster]") {
  REQUIRE_GPU();
  check_cluster_ties(100);
}
TEST_CASE("gpu top-k cluster ties k 2048: all-equal rows, heavy ties, NaN and infinities",
          "[gpu][topk][cluster]") {
  REQUIRE_GPU();
  check_cluster_ties(2048);
}
TEST_CASE("gpu top-k cluster ties k 4096: all-equal rows, heavy ties, NaN and infinities",
          "[gpu][topk][cluster]") {
  REQUIRE_GPU();
  check_cluster_ties(4096);
}

TEST_CASE("gpu top-k clusters: width 1M with short rows, and rows streamed from global memory",
          "[gpu][topk][cluster][large]") {
  REQUIRE_GPU();
  std::mt19937_64 rng(37);
  // Short rows under a 1M bound: the cost follows the lengths (the one-block path launches the
  // passes too; every path gives the same bits).
  score_rows short_rows;
  short_rows.width = 33000;
  for (int r = 0; r < 64; ++r) {
    const int32_t len = r == 5 ? 0 : r == 6 ? -1 : r == 7 ? 1500 : 32768 + (r % 3) * 77;
    short_rows.add(normal_row(len > 0 ? len : 0, rng), len);
  }
  check_clusters(short_rows, 2048, int64_t{1} << 20);
  check_select(short_rows, 2048, int64_t{1} << 20);
  // Rows longer than one block's slice in shared memory at every cluster size that can hold them
  // (about 32K columns at 512 threads): a slice streams in windows of one scan each.
  score_rows long_rows;
  long_rows.width = 300001;
  long_rows.add(normal_row(300001, rng), 300001);
  long_rows.add(normal_row(131073, rng), 131073);
  std::vector<float> ties(300001);
  for (size_t c = 0; c < ties.size(); ++c) ties[c] = static_cast<float>(rng() % 3);
  long_rows.add(ties, 300001);
  long_rows.add(normal_row(70000, rng), 70000);
  long_rows.add({}, -1);
  for (int k : {2048, 4096}) {
    INFO("k " << k);
    check_clusters(long_rows, k, int64_t{1} << 20);
  }
}

TEST_CASE("gpu top-k clusters: the plan fills the GPU and fits shared memory", "[topk][cluster]") {
  // No GPU needed: the host's choice of cluster size and slice for an H200-like device.
  const device::topk_config config = cluster_config<0, 0>();
  constexpr int threads = cluster_config<0, 0>().cluster_threads;
  device::topk_config many_rows_rule = config;  // plan() leaves out the few-rows rule (plan_few)
  many_rows_rule.cluster_few_rows = 0;
  using smem_t = device::detail::cluster_select_smem<threads>;
  device::detail::cluster_device d;
  d.sms = 132;
  d.max_blocks = 16;
  d.resident_max = 4;
  for (int r = 1; r <= 4; ++r) d.budget[r] = (233472 / r - 1024) / 1024 * 1024;
  const auto plan = [&](int64_t rows, int64_t width) {
    return device::detail::plan_cluster<threads>(device::topk_shape{rows, width, 2048}, d,
                                                 many_rows_rule);
  };
  for (int64_t rows : {1, 4, 32, 64, 100, 132, 256, 4096})
    for (int64_t width : {int64_t{5000}, int64_t{32768}, int64_t{262144}, int64_t{1} << 20}) {
      const auto p = plan(rows, width);
      INFO("rows " << rows << " width " << width << " blocks " << p.blocks << " slice " << p.slice_max);
      REQUIRE(p.blocks >= 1);
      REQUIRE(p.blocks <= config.cluster_blocks_most());
      REQUIRE((rows * p.blocks >= d.sms || p.blocks == config.cluster_blocks_most() ||
               rows * p.blocks * 2 > d.sms * d.resident_max ||
               width / (p.blocks * 2) < config.cluster_slice_min));
      REQUIRE((p.blocks == 1 || rows * p.blocks / 2 < d.sms));  // the fewest that fill the GPU
      REQUIRE(p.slice_max <= smem_t::steps::max_columns);
      REQUIRE(p.smem == smem_t::bytes(p.slice_max));
      const int64_t resident = std::min<int64_t>((rows * p.blocks + d.sms - 1) / d.sms, 4);
      REQUIRE(p.smem <= d.budget[resident]);
      // Slices of the widest row sit in shared memory unless the budget or one compaction
      // window is smaller.
      REQUIRE((p.slice_max >= (width + p.blocks - 1) / p.blocks ||
               p.slice_max == smem_t::steps::max_columns ||
               smem_t::bytes(p.slice_max + 4) > d.budget[resident]));
    }
  REQUIRE(plan(64, int64_t{1} << 20).blocks == 4);
  REQUIRE(plan(1, 32768).blocks == config.cluster_blocks_most());  // one row takes the most
  // ... that leave slices of at least 4096 columns.
  REQUIRE(plan(1, 16384).blocks == 4);
  REQUIRE(plan(1, 5000).blocks == 1);
  // A cap of 8, 16 for 2 to 4 rows (sm90's tuning): one row keeps 8, four take 16, five 8.
  const auto plan_few = [&](int64_t rows) {
    return device::detail::plan_cluster<threads>(device::topk_shape{rows, int64_t{1} << 20, 2048},
                                                 d, config);
  };
  REQUIRE(plan_few(1).blocks == 8);
  REQUIRE(plan_few(2).blocks == 16);
  REQUIRE(plan_few(4).blocks == 16);
  REQUIRE(plan_few(5).blocks == 8);
  REQUIRE(
      device::detail::plan_cluster<threads>(device::topk_shape{4, 32768, 2048}, d, config).blocks ==
      8);  // slices of 4096, not 2048
  REQUIRE(plan(32, 131072).blocks == 8);
  d.max_blocks = 8;  // a device that places no 16-block cluster
  REQUIRE(plan(1, 32768).blocks == std::min(8, config.cluster_blocks_most()));
  d.resident_max = 1;  // one block an SM: 4 a row would need a second wave
  REQUIRE(plan(64, 32768).blocks == 2);
  REQUIRE(plan(64, 32768).smem <= d.budget[1]);
  REQUIRE(plan(40, 32768).blocks == 3);  // 4 a row would not all be resident: as many as are
  // The H200's processing clusters hold 15 clusters of 8 blocks of 1024 threads: 16 rows take
  // the largest cluster the device holds 16 of (4 where it says nothing of 5 to 7) rather than
  // wait for a second wave; 15 rows keep 8.
  d.clusters[2] = 66;
  d.clusters[4] = 32;
  d.clusters[8] = 15;
  REQUIRE(plan(16, 32768).blocks == 4);
  REQUIRE(plan(15, 32768).blocks == 8);
  REQUIRE(plan(33, 32768).blocks == 2);
  // ... unless the smaller cluster's slices of the declared width would stream from global memory
  // where 8's sit in shared memory; where 8's stream too, the wave decides.
  REQUIRE(plan(16, 262144).blocks == 8);
  REQUIRE(plan(16, int64_t{1} << 20).blocks == 4);
  d.clusters[4] = 30;
  REQUIRE(plan(32, 131072).blocks == 4);  // clusters of 2 would stream
  // Every size as an H200 answers (bench_topk's context, clusters_resident).
  const int h200[] = {0, 0, 66, 39, 30, 22, 17, 15, 15};
  for (int c = 2; c <= 8; ++c) d.clusters[c] = h200[c];
  REQUIRE(plan(32, 131072).blocks == 3);
  REQUIRE(plan(16, 32768).blocks == 6);
  REQUIRE(plan(16, int64_t{1} << 20).blocks == 6);
  REQUIRE(plan(15, 32768).blocks == 8);
  REQUIRE(plan(16, 16384).blocks == 4);  // the candidate call's select: slices of 4096
  // Rows of 32K (no slice streams at any size): every row's cluster is resident at once.
  for (int64_t rows = 1; rows <= 64; ++rows) {
    const auto p = plan(rows, 32768);
    INFO("rows " << rows << " blocks " << p.blocks);
    REQUIRE((p.blocks == 1 || rows <= d.clusters[p.blocks] || d.clusters[p.blocks] == 0));
  }
}

/// A row's request and length for candidate prep, as a test gives them (request r for row r).
struct given_rows {
  const int32_t* visible;
  MXI_DEVICE device::row_info locate(int64_t t, int*) const {
    return device::row_info{static_cast<int32_t>(t), visible[t]};
  }
};

TEST_CASE("gpu candidates: prep sorts, dedupes and drops dead ids, and resolves each column's slot",
          "[gpu][candidates]") {
  REQUIRE_GPU();
  // Rows given as they are (given_rows), or located in a batch of one token a request whose
  // lengths give the same visible lengths (batch_rows, as the backend runs it overlapped with row_info),
  // all rows or from the third on.
  const int source = GENERATE(0, 1, 2);
  const int first = source == 2 ? 2 : 0;
  // The call's max_model_len small enough for the bitmap dedupe (ids below 131072), also so
  // small that "no id" (2^id_bits - 1) lies inside the bitmap's words, or too large for it (the
  // sort); rows of at most 40000 positions.
  const int64_t max_visible = GENERATE(int64_t{40000}, int64_t{200}, int64_t{1} << 22);
  // Without slots the prep takes the fewest threads that hold the row's ids.
  const bool with_slots = GENERATE(true, false);
  INFO("source " << source << " max_visible " << max_visible << " slots " << with_slots);
  std::mt19937_64 rng(13);
  for (int ncb : {1, 7, 300, 600, 2000, 4096}) {
    const int cbs = ncb % 2 ? 8 : 5;
    const int bs = ncb % 3 ? 64 : 16;
    // 9 rows take 8 prep blocks each (max_prep_parts), 40 take 3, 70 one.
    const int rows = ncb == 300    ? 70
                     : ncb == 2000 ? 40
                                   : 9,
              longest = static_cast<int>(std::min<int64_t>(max_visible, 40000)), num_pages = 3000;
    const int64_t table_stride = (longest + bs - 1) / bs;
    std::vector<int32_t> visible(rows), ids(static_cast<size_t>(rows) * ncb), starts(rows + 1);
    std::vector<int32_t> table(static_cast<size_t>(rows * table_stride));
    for (int32_t& page : table) {
      const uint64_t u = rng() % 50;  // a few ids out of range: clamped
      page = u == 0 ? -3 : u == 1 ? num_pages + 7 : static_cast<int32_t>(rng() % num_pages);
    }
    for (int r = 0; r < rows; ++r) {
      starts[r] = r;
      visible[r] = r == 0 ? -1 : r == 1 ? 0 : static_cast<int32_t>(rng() % longest);
      const int64_t live = (visible[r] + cbs - 1) / cbs;
      for (int i = 0; i < ncb; ++i) {
        const uint64_t u = rng() % 10;
        ids[r * ncb + i] = u == 0 ? -1 : u == 1 ? -5 : u == 2 ? static_cast<int32_t>(live + rng() % 9)
                                                              : static_cast<int32_t>(rng() % (live + 1));
      }
    }
    starts[rows] = rows;
    const int64_t columns = int64_t{ncb} * cbs, launched = rows - first;
    device_buffer<int32_t> d_ids(ids), d_visible(visible), d_starts(starts), d_table(table);
    device_buffer<int32_t> prepared(ids.size()), counts(rows),
        slots(static_cast<size_t>(launched * columns * 2));
    prepared.fill_bytes(0x7F);
    counts.fill_bytes(0x7F);
    slots.fill_bytes(0x7F);
    device::candidate_slot_sink sink;
    sink.pairs = with_slots ? slots.data() : nullptr;
    sink.block_table = d_table.data() + first * table_stride;
    sink.block_table_stride = table_stride;
    sink.block_size = bs;
    sink.num_pages = num_pages;
    const auto prep = [&](auto row_source) {
      gpu_check(device::launch_candidate_prep(
                    d_ids.data() + first * ncb, ncb, launched, ncb, cbs, row_source, max_visible,
                    prepared.data() + first * ncb, ncb, counts.data() + first, nullptr, sink),
                "launch_candidate_prep");
    };
    if (source == 0) {
      prep(given_rows{d_visible.data()});
    } else {
      // One token a request, so seq_lens = visible gives each row its length (compress ratio
      // 1); requests are counted from the batch's first, and so is the table.
      sink.block_table = d_table.data();
      prep(device::batch_rows{d_starts.data(), d_visible.data(), rows, 1, first});
    }
    const std::vector<int32_t> got = prepared.download(), got_counts = counts.download(),
                               got_slots = slots.download();
    for (int r = first; r < rows; ++r) {
      std::vector<int32_t> live;
      for (int i = 0; i < ncb; ++i) {
        const int64_t b = ids[r * ncb + i];
        if (b >= 0 && b * cbs < visible[r]) live.push_back(static_cast<int32_t>(b));
      }
      std::sort(live.begin(), live.end());
      live.erase(std::unique(live.begin(), live.end()), live.end());
      const int32_t count = static_cast<int32_t>(live.size());
      INFO("ncb " << ncb << " row " << r);
      for (int64_t c = 0; c < columns; ++c) {
        int32_t page = 0, token = -1;
        if (c / cbs < count) {
          const int64_t pos = int64_t{live[c / cbs]} * cbs + c % cbs;
          if (pos < visible[r]) {
            page = std::clamp(table[r * table_stride + pos / bs], 0, num_pages - 1);
            token = static_cast<int32_t>(pos % bs);
          }
        }
        const int64_t at = 2 * ((r - first) * columns + c);
        if (!with_slots) {
          REQUIRE(got_slots[at] == 0x7F7F7F7F);  // not written
          continue;
        }
        REQUIRE(got_slots[at] == page);
        REQUIRE(got_slots[at + 1] == token);
      }
      live.resize(static_cast<size_t>(ncb), -1);
      REQUIRE(std::equal(live.begin(), live.end(), got.begin() + r * ncb));
      REQUIRE(got_counts[r] == count);
    }
  }
}

TEST_CASE("gpu candidates: publish = select over block maxima, newest block pinned", "[gpu][candidates]") {
  REQUIRE_GPU();
  std::mt19937_64 rng(17);
  const int cbs = 8, ncb = 64, width = 5000;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<int32_t> visible = {-1, 0, 1, 7, 8, 9, 511, 512, 513, 4999, 5000};
  std::vector<float> scores(visible.size() * width);
  for (size_t r = 0; r < visible.size(); ++r)
    for (int c = 0; c < width; ++c) {
      const uint64_t u = rng() % 50;
      scores[r * width + c] = u == 0 ? nan : r == 9 ? 1.0f : static_cast<float>(rng() % 1000);
    }
  const int64_t nblk = (width + cbs - 1) / cbs;
  device_buffer<float> d_scores(scores);
  device_buffer<int32_t> d_visible(visible);
  device_buffer<uint32_t> keys(visible.size() * nblk);
  const auto lengths = device::live_block_lengths<device::int_lengths>{{d_visible.data()}, cbs};
  const device::topk_shape shape{static_cast<int64_t>(visible.size()), nblk, ncb, output_order::position};
  device_buffer<char> workspace(device::topk_workspace_bytes(shape));
  device_buffer<int32_t> out(visible.size() * ncb);
  gpu_check(device::launch_candidate_block_keys(shape.rows, nblk, device::float_score_keys{d_scores.data(), width},
                                                device::int_lengths{d_visible.data()}, cbs, keys.data(),
                                                nblk, nullptr),
            "block keys");
  gpu_check(device::launch_topk(shape, device::uint_keys{keys.data(), nblk}, lengths, device::identity_map{},
                                out.data(), ncb, workspace.data(), nullptr),
            "select");
  const std::vector<int32_t> got = out.download();
  for (size_t r = 0; r < visible.size(); ++r) {
    const int64_t v = visible[r];
    const int64_t live = v <= 0 ? 0 : (v + cbs - 1) / cbs;
    std::vector<float> block_score(static_cast<size_t>(live));
    std::vector<uint64_t> order;  // (key, ~id): larger is better
    for (int64_t j = 0; j < live; ++j) {
      uint32_t best = 0;
      for (int64_t p = j * cbs; p < std::min<int64_t>(v, (j + 1) * cbs); ++p)
        best = std::max(best, block::score_key(scores[r * width + p]));
      if (std::min<int64_t>(v, (j + 1) * cbs) == v) best = block::key_positive_infinity;
      order.push_back((uint64_t{best} << 32) | (0xFFFFFFFFu - static_cast<uint32_t>(j)));
    }
    std::sort(order.rbegin(), order.rend());
    std::vector<int32_t> want;
    for (size_t i = 0; i < order.size() && i < static_cast<size_t>(ncb); ++i)
      want.push_back(static_cast<int32_t>(0xFFFFFFFFu - static_cast<uint32_t>(order[i])));
    std::sort(want.begin(), want.end());
    want.resize(ncb, -1);
    INFO("row " << r << " visible " << v);
    REQUIRE(std::equal(want.begin(), want.end(), got.begin() + r * ncb));
  }
}
