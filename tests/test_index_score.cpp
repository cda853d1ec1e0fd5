// uq::score on each path this build has for the device (the generic kernel, and the tuned
// one where it exists: sm90 on an H200), against the float64 reference: the shared data cases
// of tests/score_cases.hpp (the matrix, random code bytes, q = 0, saturated keys, NaN scale
// bytes) stamped for these paths, then what only the device paths have: an unaligned cache,
// bad block ids and lengths (masked and counted), plan reuse, and every host error path.
#include "support/score_path.hpp"
#include "test_index_common.hpp"
#include "uq/score.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace uqtest {
namespace index {

// A device path: uq::ScorePlan with one backend (run_score: q and scores dense, or strided
// for odd variants).
class DeviceScorePath : public ScorePath {
 public:
  explicit DeviceScorePath(uq::Backend backend) : backend_(backend) {}
  std::string name() const override { return uq::backend_name(backend_); }
  RunResult run(const ScoreCase& c, int variant) const override { return run_score(c, variant % 2 == 1, backend_); }

 private:
  uq::Backend backend_;
};

std::vector<std::unique_ptr<ScorePath>> score_paths() {
  std::vector<std::unique_ptr<ScorePath>> paths;
  for (const uq::Backend backend : backends_to_test()) paths.push_back(std::make_unique<DeviceScorePath>(backend));
  return paths;
}

}  // namespace index
}  // namespace uqtest

#define UQ_SCORE_PREFIX Index
#include "score_cases.hpp"

namespace {

using namespace uqtest;
using namespace uqtest::index;

using ScoreView = Kokkos::View<float***, Kokkos::LayoutRight, Mem>;
using QView = Kokkos::View<std::uint8_t***, Kokkos::LayoutRight, Mem>;

// Cache views whose pages do not start on 16-byte boundaries (offset 1 and 4 bytes).
TEST(IndexScore, UnalignedCache) {
  for (const uq::Backend backend : backends_to_test()) {
    SCOPED_TRACE(uq::backend_name(backend));
    std::mt19937_64 rng(26);
    ScoreCase c = simple_case(rng, random_cache(rng, 5, false), {500, 77}, 2, 4, 1, 1);
    // offset 1: byte loads everywhere; offset 4: 4-byte but not 16-byte aligned pages (the
    // sm90 scorer's synchronous-copy kernel). The gfx950 scorer's buffer loads need 4-byte
    // aligned pages: its launcher rejects offset 1 (arch/gfx950/score_launch_args.hpp).
    for (int offset : {1, 4}) {
      Kokkos::View<std::uint8_t*, Mem> storage("storage", c.cache.size() + 16);
      Kokkos::View<std::uint8_t**, Kokkos::LayoutRight, Mem, Kokkos::MemoryUnmanaged> cache(storage.data() + offset,
                                                                                          c.num_blocks(), kPage);
      {
        auto h = Kokkos::create_mirror_view(cache);
        for (std::size_t i = 0; i < c.cache.size(); ++i) h.data()[i] = c.cache[i];
        Kokkos::deep_copy(cache, h);
      }
      if (offset % 4 != 0 && expected_path(backend, uq::impl::device_info(Exec())) == uq::Path::Gfx950) {
        expect_error([&] { run_score(c, false, backend, &cache); }, {"uq::gfx950::launch_score", "4-byte aligned"});
        continue;
      }
      const RunResult got = run_score(c, false, backend, &cache);
      const ScoreComparison cmp =
          compare_scores(c, reference_scores(c), got.scores, page_key_maxima(c.cache), "unaligned cache");
      EXPECT_EQ(cmp.failures, 0) << "offset " << offset;
      EXPECT_GT(cmp.close, 0) << "offset " << offset;
    }
  }
}

// ---------------------------------------------------------------- bad device data
// Bad page ids of needed blocks are masked (the block's tokens are absent: -inf unless
// a sentinel applies) and counted once per (request, block); bad ids of blocks that
// only need a sentinel are never read; negative lengths count as 0; lengths beyond the
// block table are clamped. All of it counted, nothing read out of bounds.
TEST(IndexScore, BadBlockIdsAndLengthsAreMaskedAndCounted) {
  for (const uq::Backend backend : backends_to_test()) {
    SCOPED_TRACE(uq::backend_name(backend));
    std::mt19937_64 rng(27);
    const ScoreCase c = bad_ids_and_lengths_case(rng);
    const std::vector<float> ref = reference_scores(c);
    for (bool strided : {false, true}) {
      const RunResult got = run_score(c, strided, backend);
      const ScoreComparison cmp = compare_scores(c, ref, got.scores, page_key_maxima(c.cache), "bad data");
      EXPECT_EQ(cmp.failures, 0);
      EXPECT_EQ(got.status[uq::Counter::bad_block_ids], 2u);
      EXPECT_EQ(got.status[uq::Counter::negative_seq_lens], 1u);
      EXPECT_EQ(got.status[uq::Counter::long_seq_lens], 1u);
      EXPECT_EQ(got.status[uq::Counter::bad_slots], 0u);
    }
    // Blocks 1 and 2 of request 0 are -inf for both heads and rows (absent tokens).
    for (int h = 0; h < 2; ++h)
      for (int r = 0; r < 2; ++r)
        for (int b = 1; b <= 2; ++b)
          EXPECT_EQ(ref[(h * c.rows() + r) * c.S + b], -std::numeric_limits<float>::infinity());
    // With check = true the convenience function throws after writing, naming the counts.
    DeviceInputs in(c);
    QView q("q", c.rows(), c.heads, kD);
    fill_view(q, c.q);
    ScoreView scores("scores", c.heads, c.rows(), c.S);
    uq::ScoreConfig cfg;
    cfg.query_len = 2;
    cfg.init_blocks = 1;
    cfg.local_blocks = 1;
    cfg.backend = backend;
    expect_error([&] { uq::score(q, in.cache, in.tables, in.seq_lens, scores, cfg); },
                 {"uq::score", "block_tables/seq_lens", "bad_block_ids=2", "negative_seq_lens=1", "long_seq_lens=1"});
  }
}

// A plan is reused: counters accumulate across runs with check = false until reset,
// runs with fewer requests than max_reqs work, and results do not change.
TEST(IndexScore, PlanReuse) {
  for (const uq::Backend backend : backends_to_test()) {
    SCOPED_TRACE(uq::backend_name(backend));
    std::mt19937_64 rng(28);
    ScoreCase c = simple_case(rng, random_cache(rng, 9, false), {300, 1000, 5}, 4, 1, 0, 2);
    c.tables[1 * c.max_blocks + 3] = -1;  // request 1, block 3: computed for every row -> counted
    DeviceInputs in(c);
    QView q("q", c.rows(), c.heads, kD);
    fill_view(q, c.q);
    ScoreView s1("s1", c.heads, c.rows(), c.S), s2("s2", c.heads, c.rows(), c.S);
    uq::ScoreConfig cfg;
    cfg.query_len = 4;
    cfg.local_blocks = 2;
    cfg.check = false;
    cfg.backend = backend;
    uq::ScorePlan<Exec> plan(Exec(), {8, 4, 1, c.max_blocks}, cfg);
    Kokkos::deep_copy(s1, poison_value());
    Kokkos::deep_copy(s2, poison_value());
    EXPECT_EQ(plan.path(), expected_path(backend, plan.device()));
    EXPECT_FALSE(plan.device().name.empty());
    plan.run(q, in.cache, in.tables, in.seq_lens, s1);
    plan.run(q, in.cache, in.tables, in.seq_lens, s2);
    EXPECT_EQ(plan.status()[uq::Counter::bad_block_ids], 2u);
    plan.reset_status();
    EXPECT_TRUE(plan.status().ok());
    const auto h1 = to_host(s1), h2 = to_host(s2);
    for (std::size_t i = 0; i < h1.size(); ++i) ASSERT_EQ(bits_of(h1[i]), bits_of(h2[i])) << i;
    // A run with a single request (a prefix of the batch).
    auto q1 = Kokkos::subview(q, std::make_pair(0, 4), Kokkos::ALL, Kokkos::ALL);
    auto t1 = Kokkos::subview(in.tables, std::make_pair(0, 1), Kokkos::ALL);
    auto l1 = Kokkos::subview(in.seq_lens, std::make_pair(0, 1));
    auto sc1 = Kokkos::subview(s2, Kokkos::ALL, std::make_pair(0, 4), Kokkos::ALL);
    Kokkos::deep_copy(s2, poison_value());
    plan.run(q1, in.cache, t1, l1, sc1);
    const auto h3 = to_host(s2);
    for (std::size_t i = 0; i < h1.size(); ++i) {
      const std::size_t row = (i / c.S) % c.rows();
      if (row < 4)
        ASSERT_EQ(bits_of(h3[i]), bits_of(h1[i])) << i;
      else
        ASSERT_EQ(bits_of(h3[i]), kPoisonBits) << i;
    }
  }
}

// ---------------------------------------------------------------- the generic kernel's grid
// choose_generic_score_span (uq/impl/score_generic.hpp): spans never cross a request, cover
// every block, are at least min_span long (or the whole table when it is shorter), and the
// grid fills the `slots` resident teams about once.
TEST(IndexScore, GenericSpanFillsTheDeviceOnce) {
  struct Case {
    std::int64_t reqs;
    int blocks;
    std::int64_t slots;
  };
  const Case cases[] = {{32, 1024, 528}, {1, 1024, 528}, {8, 1024, 528}, {64, 1024, 528}, {1000, 7, 528},
                        {3, 1, 528},    {1, 3, 528},    {5, 1000, 4},   {1, 1000, 4},   {2, 13, 0},
                        {0, 10, 528},   {7, 1, 1}};
  for (const Case& c : cases) {
    const int min_span = 4;
    const int span = uq::impl::choose_generic_score_span(c.reqs, c.blocks, c.slots, min_span);
    SCOPED_TRACE("reqs " + std::to_string(c.reqs) + ", blocks " + std::to_string(c.blocks) + ", slots " +
                 std::to_string(c.slots) + ": span " + std::to_string(span));
    ASSERT_GE(span, 1);
    ASSERT_LE(span, std::max(c.blocks, 1));
    ASSERT_GE(span, std::min(min_span, c.blocks));
    const std::int64_t per_req = (c.blocks + span - 1) / span;
    // Teams: at most max(slots, reqs) unless min_span forces fewer, longer ones.
    if (c.reqs > 0 && span > min_span)
      EXPECT_LE(c.reqs * per_req, std::max<std::int64_t>(c.slots, c.reqs)) << "more teams than slots";
    if (c.reqs > 0 && c.reqs * per_req < c.slots / 2 && span > min_span)
      ADD_FAILURE() << "the grid fills less than half the slots with spans longer than min_span";
  }
}

// ---------------------------------------------------------------- host errors
TEST(IndexScore, HostErrors) {
  const int R = 2, QL = 2, H = 2, MB = 3;
  QView q("q", R * QL, H, kD);
  Kokkos::View<std::uint8_t**, Kokkos::LayoutRight, Mem> cache("cache", 4, kPage);
  Kokkos::View<std::int32_t**, Kokkos::LayoutRight, Mem> tables("bt", R, MB);
  Kokkos::View<std::int32_t*, Mem> lens("sl", R);
  ScoreView scores("scores", H, R * QL, MB);
  uq::ScoreConfig cfg;
  cfg.query_len = QL;
  EXPECT_NO_THROW(uq::score(q, cache, tables, lens, scores, cfg));
  auto call = [&](auto&& q_, auto&& cache_, auto&& tables_, auto&& lens_, auto&& scores_, uq::ScoreConfig c) {
    return [=] { uq::score(Exec(), q_, cache_, tables_, lens_, scores_, c); };
  };

  // heads, query_len, init, local
  QView q3("q", R * QL, 3, kD);
  ScoreView s3("s", 3, R * QL, MB);
  expect_error(call(q3, cache, tables, lens, s3, cfg), {"uq::score", "'q'", "(heads) in {1, 2, 4}", "got 3"});
  uq::ScoreConfig bad = cfg;
  bad.query_len = 0;
  expect_error(call(q, cache, tables, lens, scores, bad), {"uq::score", "'config.query_len'", ">= 1", "got 0"});
  bad = cfg;
  bad.query_len = 17;  // H = 2: 34 columns
  expect_error(call(q, cache, tables, lens, scores, bad),
               {"uq::score", "'config.query_len'", "heads * query_len <= 32 (heads = 2)", "got 17"});
  bad = cfg;
  bad.init_blocks = -1;
  expect_error(call(q, cache, tables, lens, scores, bad), {"uq::score", "'config.init_blocks'", ">= 0", "got -1"});
  bad = cfg;
  bad.local_blocks = -2;
  expect_error(call(q, cache, tables, lens, scores, bad), {"uq::score", "'config.local_blocks'", ">= 0", "got -2"});
  bad = cfg;
  bad.backend = uq::Backend::Native;
  // Native is an error wherever this build has no tuned scorer for the device (every host
  // build); on an H200 with the sm90 kernels it runs them (tests/test_sm90_score.cpp).
  if (uq::impl::ScoreDispatch<Exec>::tuned_path(uq::impl::device_info(Exec())) == uq::Path::Generic)
    expect_error(call(q, cache, tables, lens, scores, bad),
                 {"uq::score", "'config.backend'", "native uq path", "Backend::Native on"});
  else
    EXPECT_NO_THROW(call(q, cache, tables, lens, scores, bad)());
  bad = cfg;
  bad.backend = uq::Backend::Generic;
  EXPECT_NO_THROW(call(q, cache, tables, lens, scores, bad)());

  // extents
  QView q_rows("q", R * QL + 1, H, kD);
  expect_error(call(q_rows, cache, tables, lens, scores, cfg),
               {"uq::score", "'q'", "extent(0) == 4 (num_reqs * query_len)", "got 5"});
  QView q_dim("q", R * QL, H, 64);
  expect_error(call(q_dim, cache, tables, lens, scores, cfg), {"uq::score", "'q'", "extent(2) == 128", "got 64"});
  Kokkos::View<std::int32_t**, Kokkos::LayoutRight, Mem> tables_r("bt", R + 1, MB);
  expect_error(call(q, cache, tables_r, lens, scores, cfg),
               {"uq::score", "'block_tables'", "extent(0) == 2 (num_reqs", "got 3"});
  ScoreView s_heads("s", 1, R * QL, MB);
  expect_error(call(q, cache, tables, lens, s_heads, cfg), {"uq::score", "'scores'", "extent(0) == 2", "got 1"});
  ScoreView s_rows("s", H, R * QL - 1, MB);
  expect_error(call(q, cache, tables, lens, s_rows, cfg), {"uq::score", "'scores'", "extent(1) == 4", "got 3"});
  ScoreView s_narrow("s", H, R * QL, MB - 1);
  expect_error(call(q, cache, tables, lens, s_narrow, cfg),
               {"uq::score", "'scores'", "extent(2) (S) >= max_blocks = 3", "got 2"});
  Kokkos::View<std::uint8_t**, Kokkos::LayoutRight, Mem> cache_w("cache", 4, kPage + 16);
  expect_error(call(q, cache_w, tables, lens, scores, cfg),
               {"uq::score", "'index_cache'", "extent(1) == 9216", "got 9232"});
  Kokkos::View<std::uint8_t**, Kokkos::LayoutLeft, Mem> cache_l("cache", 4, kPage);
  expect_error(call(q, cache_l, tables, lens, scores, cfg),
               {"uq::score", "'index_cache'", "stride(1) == 1", "got 4"});
  Kokkos::View<std::uint8_t***, Kokkos::LayoutRight, Mem> cache_pad("cache", 4, 2, kPage);
  auto cache_sparse = Kokkos::subview(cache_pad, Kokkos::ALL, 0, Kokkos::ALL);
  expect_error(call(q, cache_sparse, tables, lens, scores, cfg),
               {"uq::score", "'index_cache'", "stride(0) == 9216 (pages dense)", "got 18432"});

  // aliasing of the output with each input
  using Unmanaged = Kokkos::View<float***, Kokkos::LayoutRight, Mem, Kokkos::MemoryUnmanaged>;
  Unmanaged s_over_q(reinterpret_cast<float*>(q.data()), H, R * QL, MB);
  expect_error(call(q, cache, tables, lens, s_over_q, cfg),
               {"uq::score", "'scores'", "memory disjoint from 'q'", "overlapping memory"});
  Unmanaged s_over_cache(reinterpret_cast<float*>(cache.data() + kPage), H, R * QL, MB);
  expect_error(call(q, cache, tables, lens, s_over_cache, cfg), {"uq::score", "memory disjoint from 'index_cache'"});
  Unmanaged s_over_tables(reinterpret_cast<float*>(tables.data()), H, R * QL, MB);
  expect_error(call(q, cache, tables, lens, s_over_tables, cfg), {"uq::score", "memory disjoint from 'block_tables'"});
  Unmanaged s_over_lens(reinterpret_cast<float*>(lens.data()), H, R * QL, MB);
  expect_error(call(q, cache, tables, lens, s_over_lens, cfg), {"uq::score", "memory disjoint from 'seq_lens'"});

  // plan construction and plan/run mismatches
  auto plan_with = [&](uq::ScoreShape s, uq::ScoreConfig c) { return [=] { uq::ScorePlan<Exec>(Exec(), s, c); }; };
  expect_error(plan_with({-1, QL, H, MB}, cfg), {"uq::ScorePlan", "'shape.max_reqs'", ">= 0", "got -1"});
  expect_error(plan_with({R, QL, 8, MB}, cfg), {"uq::ScorePlan", "'shape.heads'", "1, 2 or 4", "got 8"});
  expect_error(plan_with({R, 0, H, MB}, cfg), {"uq::ScorePlan", "'shape.query_len'", ">= 1", "got 0"});
  expect_error(plan_with({R, 32, H, MB}, cfg), {"uq::ScorePlan", "'shape.query_len'", "heads * query_len <= 32"});
  expect_error(plan_with({R, QL, H, -1}, cfg), {"uq::ScorePlan", "'shape.max_blocks'", ">= 0", "got -1"});
  expect_error(plan_with({R, 4, H, MB}, cfg),
               {"uq::ScorePlan", "'config.query_len'", "equal to shape.query_len = 4", "got 2"});
  bad = cfg;
  bad.init_blocks = -3;
  expect_error(plan_with({R, QL, H, MB}, bad), {"uq::ScorePlan", "'config.init_blocks'", "got -3"});
  bad = cfg;
  bad.local_blocks = -4;
  expect_error(plan_with({R, QL, H, MB}, bad), {"uq::ScorePlan", "'config.local_blocks'", "got -4"});
  expect_error(plan_with({1 << 30, QL, H, 1 << 20}, cfg), {"uq::ScorePlan", "'shape'", "<= 2^31 - 1"});
  uq::ScorePlan<Exec> small(Exec(), {1, QL, H, MB}, cfg);
  expect_error([&] { small.run(q, cache, tables, lens, scores); },
               {"uq::score", "'seq_lens'", "<= the plan's max_reqs = 1", "got 2"});
  uq::ScorePlan<Exec> wide(Exec(), {R, QL, H, MB + 1}, cfg);
  expect_error([&] { wide.run(q, cache, tables, lens, scores); },
               {"uq::score", "'block_tables'", "extent(1) == 4 (max_blocks of the plan)", "got 3"});
  uq::ScorePlan<Exec> one_head(Exec(), {R, QL, 1, MB}, cfg);
  expect_error([&] { one_head.run(q, cache, tables, lens, scores); },
               {"uq::score", "'q'", "extent(1) == 1 (heads)", "got 2"});
}

}  // namespace
