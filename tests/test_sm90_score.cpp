// The Hopper (sm_90) NVFP4 index scorer (arch/sm90/score*.cuh), what only this path has: its
// selection on a compute capability 9.x device, a long request split over CTAs with every
// block bad, more than 64 requests, agreement with the generic path on the same inputs, forced
// spans through the launcher (one CTA per block, uneven spans, one CTA per request), and the
// launcher's argument errors. Every data case of test_index_score.cpp (the whole
// L x QL x H x init/local matrix, strided views, poison, random code bytes, q = 0, saturation,
// NaN scales, unaligned caches, bad ids and lengths, plan reuse) also runs there on this path
// (Backend::Native, next to Generic). Backend::Native throughout: on a build or device without
// the sm90 scorer these tests FAIL (they never skip).
//
// Tolerance: compare_scores (test_index_common.hpp) derives it: the kernel's fp16 operands hold
// k̂ x 2^-8 and q exactly, so products are exact and the only error is the fp32 summation of
// 128 products, in any order (the tensor core's order included), then the exact x 256:
// gamma_127 * sum |q k̂| plus the reference's final rounding, or the spec's 1e-4 + 1e-4 |ref|
// where that is larger.
// Sentinels, -inf and untouched entries are compared bit for bit.
#include "test_index_common.hpp"
#include "uq/score.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#if defined(UQ_ENABLE_SM90)
#include "sm90/launch_score.hpp"
#endif

namespace {

using namespace uqtest;
using namespace uqtest::index;

#if defined(UQ_ENABLE_SM90)

using ScoreView = Kokkos::View<float***, Kokkos::LayoutRight, Mem>;
using QView = Kokkos::View<std::uint8_t***, Kokkos::LayoutRight, Mem>;

RunResult run_sm90(const ScoreCase& c, bool strided) { return run_score(c, strided, uq::Backend::Native); }

// The sm90 launcher called directly (dense views), with chosen knobs.
RunResult run_launcher(const ScoreCase& c, const uq::sm90::ScoreKnobs& knobs, double* seconds = nullptr,
                       int repeats = 1) {
  DeviceInputs in(c);
  QView q("q", c.rows(), c.heads, kD);
  fill_view(q, c.q);
  ScoreView scores("scores", c.heads, c.rows(), c.S);
  Kokkos::deep_copy(scores, poison_value());
  const Exec exec;
  uq::impl::DequantTable<Exec> table(exec);
  uq::impl::StatusCounters<Exec> counters(exec);
  const uq::impl::ScoreParams p = score_params_of(c);
  uq::sm90::ScoreLaunch l =
      uq::sm90::score_launch(q, uq::impl::index_cache_addressing(in.cache), in.tables, in.seq_lens, scores,
                             table.view(), counters.view(), p, c.num_reqs, 0, static_cast<void*>(exec.cuda_stream()));
  l.knobs = knobs;
  uq::sm90::launch_score(l);  // warm-up (and the checked result: the same bits every time)
  exec.fence();
  if (seconds) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < repeats; ++i) uq::sm90::launch_score(l);
    exec.fence();
    *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / repeats;
  }
  RunResult r;
  r.scores = read_view(scores);
  r.status = counters.read(exec);
  return r;
}

void print(const std::string& what, const ScoreComparison& cmp) {
  std::printf("[%s] %lld exact, %lld within tolerance (%lld where the derived fp32 bound exceeds the spec's; largest "
              "error / spec tolerance = %.3g), %lld untouched\n",
              what.c_str(), static_cast<long long>(cmp.exact), static_cast<long long>(cmp.close),
              static_cast<long long>(cmp.bound_used), cmp.worst_spec_ratio, static_cast<long long>(cmp.poison));
}

ScoreComparison check_sm90(const ScoreCase& c, bool strided, const std::vector<double>& key_max,
                           const std::string& what, bool quiet = false) {
  const RunResult got = run_sm90(c, strided);
  const ScoreComparison cmp = compare_scores(c, reference_scores(c), got.scores, key_max, what);
  EXPECT_TRUE(got.status.ok()) << what << ": " << got.status.describe();
  EXPECT_EQ(cmp.failures, 0) << what;
  if (!quiet) print(what, cmp);
  return cmp;
}

TEST(Sm90Score, ThisDeviceIsHopperAndNativeSelectsSm90) {
  const uq::DeviceInfo d = uq::impl::device_info(Exec());
  ASSERT_EQ(d.arch.rfind("sm_90", 0), 0u) << "the sm90 scorer tests need a compute capability 9.x device, got '"
                                          << d.arch << "' (" << d.name << ")";
  EXPECT_TRUE(uq::impl::built_paths().has(uq::Path::Sm90));
  uq::ScoreConfig cfg;
  cfg.query_len = 4;
  cfg.backend = uq::Backend::Native;
  EXPECT_EQ(uq::ScorePlan<Exec>(Exec(), {32, 4, 1, 1024}, cfg).path(), uq::Path::Sm90);
  cfg.backend = uq::Backend::Auto;
  EXPECT_EQ(uq::ScorePlan<Exec>(Exec(), {32, 4, 1, 1024}, cfg).path(), uq::Path::Sm90);
  cfg.backend = uq::Backend::Generic;
  EXPECT_EQ(uq::ScorePlan<Exec>(Exec(), {32, 4, 1, 1024}, cfg).path(), uq::Path::Generic);
}

// Every needed block bad in a long request that the launcher splits over several CTAs (span
// 4): each (request, block) counted once, every computed score -inf, nothing read out of
// bounds. (The general bad-data case runs on the sm90 path in test_index_score.cpp.)
TEST(Sm90Score, EveryNeededBlockBadInASplitRequest) {
  std::mt19937_64 rng(127);
  ScoreCase all = simple_case(rng, random_cache(rng, 3, false), {40 * 128 + 7, 128}, 1, 1, 0, 0);
  for (auto& id : all.tables) id = (id % 2) ? -1 : 3;  // 3 = num_blocks: out of range
  const RunResult got = run_launcher(all, uq::sm90::ScoreKnobs{4});
  const ScoreComparison cmp = compare_scores(all, reference_scores(all), got.scores, page_key_maxima(all.cache),
                                             "every block bad");
  EXPECT_EQ(cmp.failures, 0);
  EXPECT_EQ(got.status[uq::Counter::bad_block_ids], 41u + 1u);
}

// More than 64 requests (several requests per wave slot), ragged with zeros.
TEST(Sm90Score, ManyRequests) {
  std::mt19937_64 rng(128);
  std::vector<std::int32_t> lens(300);
  std::uniform_int_distribution<int> len(0, 2100);
  for (auto& l : lens) l = len(rng) % 7 == 0 ? 0 : len(rng);
  ScoreCase c = simple_case(rng, random_cache(rng, 40, false), lens, 2, 2, 1, 1);
  check_sm90(c, true, page_key_maxima(c.cache), "300 requests");
}

// ---------------------------------------------------------------- sm90 vs generic
// Both within the derived tolerance of the reference, so |sm90 - generic| <= 2 x that bound;
// sentinels, -inf and untouched entries bit-identical.
TEST(Sm90Score, AgreesWithTheGenericPathOnTheSameInputs) {
  std::mt19937_64 rng(130);
  ScoreCase base = simple_case(rng, random_cache(rng, 50, false), {3000, 1, 129, 0, 2047, 640}, 4, 4, 1, 2);
  const std::vector<double> key_max = page_key_maxima(base.cache);
  for (auto [QL, H] : {std::pair<int, int>{1, 1}, {4, 1}, {8, 4}, {3, 2}, {32, 1}}) {
    ScoreCase c = simple_case(rng, base.cache, base.seq_lens, QL, H, 1, 1);
    const std::vector<float> ref = reference_scores(c);
    const RunResult s = run_sm90(c, false);
    const RunResult g = run_score(c, true, uq::Backend::Generic);
    const std::string what = "QL=" + std::to_string(QL) + " H=" + std::to_string(H);
    EXPECT_EQ(compare_scores(c, ref, s.scores, key_max, "sm90 " + what).failures, 0);
    EXPECT_EQ(compare_scores(c, ref, g.scores, key_max, "generic " + what).failures, 0);
    std::size_t identical = 0, finite = 0;
    double worst = 0.0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
      if (!std::isfinite(ref[i]) || ref[i] == 1e30f || ref[i] == 1e29f || bits_of(ref[i]) == kPoisonBits) {
        EXPECT_EQ(bits_of(s.scores[i]), bits_of(g.scores[i])) << what << " entry " << i;
        continue;
      }
      ++finite;
      identical += bits_of(s.scores[i]) == bits_of(g.scores[i]);
      worst = std::max(worst, std::fabs(static_cast<double>(s.scores[i]) - g.scores[i]) /
                                  (1e-4 + 1e-4 * std::fabs(static_cast<double>(ref[i]))));
    }
    std::printf("[sm90 vs generic] %s: %zu finite scores, %.1f%% bit-identical, largest |diff| / spec tolerance "
                "%.3g\n",
                what.c_str(), finite, finite ? 100.0 * identical / finite : 0.0, worst);
  }
}

// ---------------------------------------------------------------- the launcher itself
// Several spans (one CTA per block, uneven spans, one CTA per request) give the reference's
// scores; the time at the chosen span is printed.
TEST(Sm90Score, SpansMatchReference) {
  std::mt19937_64 rng(131);
  ScoreCase c = simple_case(rng, random_cache(rng, 70, true, 0x58), {64 * 128, 5000, 1, 129, 0, 3333}, 2, 4, 1, 1);
  const std::vector<float> ref = reference_scores(c);
  const std::vector<double> key_max = page_key_maxima(c.cache);
  for (int span : {1, 3, 4, 8, 12, 64, 68}) {
    const RunResult got = run_launcher(c, uq::sm90::ScoreKnobs{span});
    const std::string what = "span " + std::to_string(span);
    const ScoreComparison cmp = compare_scores(c, ref, got.scores, key_max, what);
    EXPECT_EQ(cmp.failures, 0) << what;
    EXPECT_TRUE(got.status.ok()) << what;
    if (span == 8) print(what, cmp);
  }
  // Timing only (no assertion): 32 requests x 256 pages (75 MB), the knobs' span.
  ScoreCase big;
  big.num_reqs = 32;
  big.query_len = 8;
  big.heads = 4;
  big.max_blocks = 256;
  big.S = 256;
  big.cache = std::vector<std::uint8_t>(static_cast<std::size_t>(32 * 256) * kPage);
  for (std::size_t i = 0; i < big.cache.size(); ++i)
    big.cache[i] = static_cast<std::uint8_t>(i % kPage >= 8192 ? 0x28 + (i * 2654435761u >> 7) % 40
                                                               : (i * 2654435761u) >> 11);
  big.seq_lens.assign(32, 256 * 128);
  big.tables.resize(32 * 256);
  std::iota(big.tables.begin(), big.tables.end(), 0);
  std::shuffle(big.tables.begin(), big.tables.end(), rng);
  big.q = random_q(rng, big.rows() * big.heads * kD);
  for (int cols : {4, 32}) {
    big.query_len = cols == 4 ? 4 : 8;
    big.heads = cols == 4 ? 1 : 4;
    big.q = random_q(rng, big.rows() * big.heads * kD);
    const uq::sm90::ScoreKnobs k = uq::sm90::choose_score_knobs(32, 256, big.query_len, big.heads,
                                                                uq::impl::device_info(Exec()).compute_units);
    double sec = 0.0;
    run_launcher(big, k, &sec, 20);
    std::printf("[timing] QL %d H %d, span %d: %.1f us, %.0f GB/s (pages only)\n", big.query_len, big.heads, k.span,
                sec * 1e6, 32.0 * 256 * kPage / sec / 1e9);
  }
}

TEST(Sm90Score, LauncherRejectsWhatTheKernelCannotAddress) {
  uq::sm90::ScoreLaunch l;
  l.num_reqs = 2;
  l.max_blocks = 8;
  l.knobs.span = 0;
  expect_error([&] { uq::sm90::launch_score(l); }, {"uq::sm90::launch_score", "'knobs.span'", ">= 1", "got 0"});
  l.knobs.span = 4;
  l.heads = 3;
  expect_error([&] { uq::sm90::launch_score(l); }, {"uq::sm90::launch_score", "'heads'", "1, 2 or 4", "got 3"});
  l.heads = 4;
  l.query_len = 9;
  expect_error([&] { uq::sm90::launch_score(l); }, {"uq::sm90::launch_score", "'query_len'", "heads * query_len <= 32"});
  l.query_len = 1;
  l.q_stride_dim = -1;
  expect_error([&] { uq::sm90::launch_score(l); }, {"uq::sm90::launch_score", "'q strides'", "non-negative"});
  l.q_stride_dim = 1;
  expect_error([&] { uq::sm90::launch_score(l); }, {"uq::sm90::launch_score", "'pointers'", "non-null"});
  // The knob choice: spans covering max_blocks, the grid within one wave (4 CTAs per SM).
  for (int batch : {1, 7, 32, 64, 300})
    for (int mb : {1, 5, 1024, 4097}) {
      const uq::sm90::ScoreKnobs k = uq::sm90::choose_score_knobs(batch, mb, 4, 1, 132);
      EXPECT_GE(k.span, 1);
      EXPECT_LE(k.span, mb);
      const std::int64_t grid = static_cast<std::int64_t>(batch) * uq::sm90::score_spans_per_req(mb, k);
      EXPECT_TRUE(grid <= 528 || uq::sm90::score_spans_per_req(mb, k) == 1) << batch << " " << mb;
    }
}

#else  // no sm90 scorer in this build

TEST(Sm90Score, NotBuiltHereSoNeverSelected) {
  EXPECT_FALSE(uq::impl::built_paths().has(uq::Path::Sm90));
  const uq::DeviceInfo d = uq::impl::device_info(Exec());
  EXPECT_NE(uq::impl::ScoreDispatch<Exec>::tuned_path(d), uq::Path::Sm90);
}

#endif

}  // namespace
