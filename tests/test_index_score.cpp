// uq::score against the float64 reference: the full L x QL x H matrix with init/local
// in {0, 1, 2} (ragged batches with zero-length requests, shuffled block tables,
// strided q and scores, poisoned score buffers), random code bytes, q = 0, saturated
// keys, NaN scale bytes, an unaligned cache, bad block ids and lengths (masked and
// counted), plan reuse, and every host error path. Every data case runs on each path this
// build has for the device: the generic kernel, and the tuned one where it exists (sm90 on an
// H200), both against the same reference.
#include "test_index_common.hpp"
#include "uq/score.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace uqtest;
using namespace uqtest::index;

using ScoreView = Kokkos::View<float***, Kokkos::LayoutRight, Mem>;
using QView = Kokkos::View<std::uint8_t***, Kokkos::LayoutRight, Mem>;

void check_case(const ScoreCase& c, bool strided, const std::vector<double>& key_max, const std::string& case_name,
                uq::Backend backend, ScoreComparison* total = nullptr) {
  const std::string what = std::string(uq::backend_name(backend)) + ": " + case_name;
  const std::vector<float> ref = reference_scores(c);
  const RunResult got = run_score(c, strided, backend);
  const ScoreComparison cmp = compare_scores(c, ref, got.scores, key_max, what);
  EXPECT_TRUE(got.status.ok()) << what << ": " << got.status.describe();
  if (!total)
    std::printf("[%s] %lld exact, %lld within tolerance (largest error / spec tolerance = %.3g), %lld untouched\n",
                what.c_str(), static_cast<long long>(cmp.exact), static_cast<long long>(cmp.close),
                cmp.worst_spec_ratio, static_cast<long long>(cmp.poison));
  if (total) *total += cmp;
}

// ---------------------------------------------------------------- the matrix
// L in {0, 1, 4, 127, 128, 129, 130, 513, 4096} as one ragged batch (with two extra
// zero-length requests) for every QL in {1, 2, 4, 8, 16, 32} and H in {1, 2, 4} with
// H * QL <= 32, and every (init, local) in {0, 1, 2}^2: 135 calls, each on one cache
// shared through shuffled block tables.
TEST(IndexScore, Matrix) {
  for (const uq::Backend backend : backends_to_test()) {
    SCOPED_TRACE(uq::backend_name(backend));
    std::mt19937_64 rng(21);
    const std::int64_t NB = 61;
    ScoreCase base;
    base.cache = random_cache(rng, NB, false);
    const std::vector<double> key_max = page_key_maxima(base.cache);
    ScoreComparison total;
    int config = 0;
    for (int QL : {1, 2, 4, 8, 16, 32})
      for (int H : {1, 2, 4}) {
        if (H * QL > 32) continue;
        for (int init = 0; init <= 2; ++init)
          for (int local = 0; local <= 2; ++local) {
            ScoreCase c = base;
            c.seq_lens = {0, 1, 4, 127, 128, 129, 0, 130, 513, 4096};
            std::shuffle(c.seq_lens.begin(), c.seq_lens.end(), rng);
            c.num_reqs = static_cast<int>(c.seq_lens.size());
            c.query_len = QL;
            c.heads = H;
            c.init_blocks = init;
            c.local_blocks = local;
            c.max_blocks = 33;  // one more than the longest request needs
            c.S = c.max_blocks + 3;
            c.tables = shuffled_tables(rng, c.seq_lens, c.max_blocks, NB);
            c.q = random_q(rng, c.rows() * H * kD);
            const std::string what = "QL=" + std::to_string(QL) + " H=" + std::to_string(H) +
                                     " init=" + std::to_string(init) + " local=" + std::to_string(local);
            check_case(c, (config++ % 2) == 1, key_max, what, backend, &total);
          }
      }
    EXPECT_EQ(total.failures, 0);
    // The matrix exercised every kind of entry.
    EXPECT_GT(total.exact, 1000);
    EXPECT_GT(total.close, 10000);
    EXPECT_GT(total.poison, 1000);
    std::printf("[matrix, %s] %lld exact, %lld within tolerance (%lld where the derived fp32 bound exceeds the spec's;"
                " largest error / spec tolerance = %.3g), %lld untouched\n",
                uq::backend_name(backend), static_cast<long long>(total.exact), static_cast<long long>(total.close),
                static_cast<long long>(total.bound_used), total.worst_spec_ratio, static_cast<long long>(total.poison));
  }
}

// ---------------------------------------------------------------- data corner cases

TEST(IndexScore, RandomCodeBytes) {
  for (const uq::Backend backend : backends_to_test()) {
    SCOPED_TRACE(uq::backend_name(backend));
    std::mt19937_64 rng(22);
    ScoreCase c = simple_case(rng, random_cache(rng, 12, true, 0x60), {700, 255, 1, 257}, 3, 2, 0, 1);
    check_case(c, true, page_key_maxima(c.cache), "random code bytes", backend);
    c = simple_case(rng, random_cache(rng, 12, true, 0x7e), {1500}, 5, 4, 1, 0);
    check_case(c, false, page_key_maxima(c.cache), "random code bytes, all scales", backend);
  }
}

// q = 0: every dot is exactly 0, so every computed score is +0 (ties for selection).
TEST(IndexScore, ZeroQueryGivesZeroScores) {
  for (const uq::Backend backend : backends_to_test()) {
    SCOPED_TRACE(uq::backend_name(backend));
    std::mt19937_64 rng(23);
    ScoreCase c = simple_case(rng, random_cache(rng, 8, false), {600, 129}, 2, 2, 1, 1);
    std::fill(c.q.begin(), c.q.end(), 0);
    check_case(c, false, page_key_maxima(c.cache), "q = 0", backend);
    const RunResult got = run_score(c, true, backend);
    int zeros = 0;
    for (float v : got.scores)
      if (v == 0.0f) {
        EXPECT_EQ(bits_of(v), 0u) << "a zero score must be +0";
        ++zeros;
      }
    // Request 0 (L = 600): blocks 1..3 of its 5 are neither init nor local, for both rows
    // and heads; request 1 (L = 129) has only sentinels and -inf.
    EXPECT_EQ(zeros, 3 * 2 * 2);
  }
}

// Large scales: most k̂ saturate to +-448 and q reaches +-448 too (dots up to ~2.6e7).
TEST(IndexScore, SaturatedKeysAndLargeQueries) {
  for (const uq::Backend backend : backends_to_test()) {
    SCOPED_TRACE(uq::backend_name(backend));
    std::mt19937_64 rng(24);
    std::vector<std::uint8_t> cache = random_cache(rng, 6, true, 0x7e);
    std::uniform_int_distribution<int> big(0x70, 0x7e);
    for (std::int64_t p = 0; p < 6; ++p)
      for (int i = 8192; i < kPage; ++i) cache[p * kPage + i] = static_cast<std::uint8_t>(big(rng));
    ScoreCase c = simple_case(rng, cache, {640, 300}, 2, 1, 0, 0);
    std::normal_distribution<double> n(0.0, 200.0);
    for (auto& b : c.q) b = uqref::e4m3_round(n(rng));
    check_case(c, true, page_key_maxima(c.cache), "saturation", backend);
  }
}

// Out-of-contract NaN scale bytes: NaN dots are ignored by the block maximum, and a
// block whose visible dots are all NaN scores -inf (the reference's documented rule).
TEST(IndexScore, NanScaleBytesAreIgnoredByTheMaximum) {
  for (const uq::Backend backend : backends_to_test()) {
    SCOPED_TRACE(uq::backend_name(backend));
    std::mt19937_64 rng(25);
    std::vector<std::uint8_t> cache = random_cache(rng, 3, false);
    for (int t = 0; t < kBlk; t += 3) cache[0 * kPage + 8192 + t * 8 + (t % 8)] = 0x7f;  // page 0: some tokens
    for (int t = 0; t < kBlk; ++t) cache[1 * kPage + 8192 + t * 8 + 2] = 0xff;           // page 1: every token
    ScoreCase c = simple_case(rng, cache, {384}, 1, 2, 0, 0);
    c.tables = {0, 1, 2};
    check_case(c, false, std::vector<double>(3 * kD, 448.0), "NaN scales", backend);
    const RunResult got = run_score(c, false, backend);
    for (int h = 0; h < 2; ++h) {
      EXPECT_TRUE(std::isfinite(got.scores[h * c.S + 0]));
      EXPECT_EQ(got.scores[h * c.S + 1], -std::numeric_limits<float>::infinity());
    }
  }
}

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
    const std::int64_t NB = 7;
    ScoreCase c;
    c.cache = random_cache(rng, NB, false);
    c.seq_lens = {600, -5, 1000, 300};  // 1000 > max_blocks * 128 = 640: clamped
    c.num_reqs = 4;
    c.query_len = 2;
    c.heads = 2;
    c.init_blocks = 1;
    c.local_blocks = 1;
    c.max_blocks = 5;
    c.S = 6;
    c.tables = {
        3, -1, 9, 0, 1,    // req 0: blocks 1 (-1) and 2 (9) bad and computed; 4 is local
        2, 2, 2, 2, 2,     // req 1: length -5 -> nothing
        99, 4, 5, 6, -3,   // req 2: block 0 is init only (bad id never read); block 4 local: -3 not read
        1, 2, 1000, 0, 0,  // req 3: block 2 local for row 1 and... see below
    };
    // req 3: L = 300, QL = 2: row 0 vis 299 (nb 3), row 1 vis 300 (nb 3): block 2 local
    // for both rows, so 1000 is never read.
    c.q = random_q(rng, c.rows() * c.heads * kD);
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
  if (uq::native_path_for(uq::impl::device_info(Exec()), uq::impl::built_paths()) == uq::Path::Generic)
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
