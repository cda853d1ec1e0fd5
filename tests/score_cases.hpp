// The scorer's data cases, written once and stamped per scorer path (kokkos-kernels'
// unit_test/Test_Blas2_gemv.hpp style, as tests/decode_cases.hpp for decode): the full
// L x QL x H matrix with init/local in {0, 1, 2} (ragged batches with zero-length requests,
// shuffled block tables, layouts varied per case, poisoned score buffers), random code bytes,
// q = 0, saturated keys, NaN scale bytes; each on every path of the stamp
// (support/score_path.hpp), against the float64 reference within the spec's tolerance
// (sentinels, -inf and untouched entries bit-exact), then the path's own cross-checks. What
// only one path has (unaligned caches, bad data and its counters, plan reuse, host errors,
// knobs, emulator internals) stays in that path's files.
#include "support/score_path.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#if !defined(UQ_SCORE_PREFIX)
#error "a scorer stamp file defines UQ_SCORE_PREFIX before including score_cases.hpp"
#endif
#define UQ_SCORE_CAT_(a, b) a##b
#define UQ_SCORE_CAT(a, b) UQ_SCORE_CAT_(a, b)
#define UQ_SCORE_SUITE UQ_SCORE_CAT(UQ_SCORE_PREFIX, Score)

namespace uqtest {
namespace index {
namespace score_cases {

// One case on one path: the reference comparison, the counters (good data: zero), the path's
// cross-checks; a line of figures unless the caller sums them into `total`.
inline RunResult check_case(const ScorePath& path, const ScoreCase& c, int variant, const std::vector<double>& key_max,
                            const std::string& case_name, ScoreComparison* total = nullptr) {
  const std::string what = path.name() + ": " + case_name;
  const std::vector<float> ref = reference_scores(c);
  const RunResult got = path.run(c, variant);
  const ScoreComparison cmp = compare_scores(c, ref, got.scores, key_max, what);
  EXPECT_TRUE(got.status.ok()) << what << ": " << got.status.describe();
  path.cross_check(c, variant, ref, got, what);
  if (!total) {
    EXPECT_EQ(cmp.failures, 0) << what;
    std::printf("[%s] %lld exact, %lld within tolerance (largest error / spec tolerance = %.3g), %lld untouched\n",
                what.c_str(), static_cast<long long>(cmp.exact), static_cast<long long>(cmp.close),
                cmp.worst_spec_ratio, static_cast<long long>(cmp.poison));
  }
  if (total) *total += cmp;
  return got;
}

// ---------------------------------------------------------------- the matrix
// L in {0, 1, 4, 127, 128, 129, 130, 513, 4096} as one ragged batch (with two extra
// zero-length requests) for every QL in {1, 2, 4, 8, 16, 32} and H in {1, 2, 4} with
// H * QL <= 32, and every (init, local) in {0, 1, 2}^2: 135 calls, each on one cache
// shared through shuffled block tables.
TEST(UQ_SCORE_SUITE, Matrix) {
  for (const auto& path : score_paths()) {
    SCOPED_TRACE(path->name());
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
            std::vector<std::int32_t> lens = {0, 1, 4, 127, 128, 129, 0, 130, 513, 4096};
            std::shuffle(lens.begin(), lens.end(), rng);
            // max_blocks 33: one more than the longest request needs
            const ScoreCase c = ragged_case(rng, base.cache, lens, QL, H, init, local, 33, 33 + 3);
            const std::string what = "QL=" + std::to_string(QL) + " H=" + std::to_string(H) +
                                     " init=" + std::to_string(init) + " local=" + std::to_string(local);
            check_case(*path, c, config++, key_max, what, &total);
          }
      }
    EXPECT_EQ(config, 135);
    EXPECT_EQ(total.failures, 0);
    // The matrix exercised every kind of entry.
    EXPECT_GT(total.exact, 1000);
    EXPECT_GT(total.close, 10000);
    EXPECT_GT(total.poison, 1000);
    std::printf("[matrix, %s] %lld exact, %lld within tolerance (%lld where the derived fp32 bound exceeds the spec's;"
                " largest error / spec tolerance = %.3g), %lld untouched\n",
                path->name().c_str(), static_cast<long long>(total.exact), static_cast<long long>(total.close),
                static_cast<long long>(total.bound_used), total.worst_spec_ratio, static_cast<long long>(total.poison));
  }
}

// ---------------------------------------------------------------- data corner cases

TEST(UQ_SCORE_SUITE, RandomCodeBytes) {
  for (const auto& path : score_paths()) {
    SCOPED_TRACE(path->name());
    std::mt19937_64 rng(22);
    ScoreCase c = simple_case(rng, random_cache(rng, 12, true, 0x60), {700, 255, 1, 257}, 3, 2, 0, 1);
    check_case(*path, c, 1, page_key_maxima(c.cache), "random code bytes");
    c = simple_case(rng, random_cache(rng, 12, true, 0x7e), {1500}, 5, 4, 1, 0);
    check_case(*path, c, 0, page_key_maxima(c.cache), "random code bytes, all scales");
  }
}

// q = 0: every dot is exactly 0, so every computed score is +0 (ties for selection).
TEST(UQ_SCORE_SUITE, ZeroQueryGivesZeroScores) {
  for (const auto& path : score_paths()) {
    SCOPED_TRACE(path->name());
    std::mt19937_64 rng(23);
    ScoreCase c = simple_case(rng, random_cache(rng, 8, false), {600, 129}, 2, 2, 1, 1);
    std::fill(c.q.begin(), c.q.end(), 0);
    check_case(*path, c, 0, page_key_maxima(c.cache), "q = 0");
    const RunResult got = path->run(c, 1);
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
TEST(UQ_SCORE_SUITE, SaturatedKeysAndLargeQueries) {
  for (const auto& path : score_paths()) {
    SCOPED_TRACE(path->name());
    std::mt19937_64 rng(24);
    std::vector<std::uint8_t> cache = random_cache(rng, 6, true, 0x7e);
    std::uniform_int_distribution<int> big(0x70, 0x7e);
    for (std::int64_t p = 0; p < 6; ++p)
      for (int i = 8192; i < kPage; ++i) cache[p * kPage + i] = static_cast<std::uint8_t>(big(rng));
    ScoreCase c = simple_case(rng, cache, {640, 300}, 2, 1, 0, 0);
    std::normal_distribution<double> n(0.0, 200.0);
    for (auto& b : c.q) b = uqref::e4m3_round(n(rng));
    check_case(*path, c, 1, page_key_maxima(c.cache), "saturation");
  }
}

// Out-of-contract NaN scale bytes: NaN dots are ignored by the block maximum, and a
// block whose visible dots are all NaN scores -inf (the reference's documented rule).
TEST(UQ_SCORE_SUITE, NanScaleBytesAreIgnoredByTheMaximum) {
  for (const auto& path : score_paths()) {
    SCOPED_TRACE(path->name());
    std::mt19937_64 rng(25);
    std::vector<std::uint8_t> cache = random_cache(rng, 3, false);
    for (int t = 0; t < kBlk; t += 3) cache[0 * kPage + 8192 + t * 8 + (t % 8)] = 0x7f;  // page 0: some tokens
    for (int t = 0; t < kBlk; ++t) cache[1 * kPage + 8192 + t * 8 + 2] = 0xff;           // page 1: every token
    ScoreCase c = simple_case(rng, cache, {384}, 1, 2, 0, 0);
    c.tables = {0, 1, 2};
    const RunResult got = check_case(*path, c, 0, std::vector<double>(3 * kD, 448.0), "NaN scales");
    for (int h = 0; h < 2; ++h) {
      EXPECT_TRUE(std::isfinite(got.scores[h * c.S + 0]));
      EXPECT_EQ(got.scores[h * c.S + 1], -std::numeric_limits<float>::infinity());
    }
  }
}

}  // namespace score_cases
}  // namespace index
}  // namespace uqtest
