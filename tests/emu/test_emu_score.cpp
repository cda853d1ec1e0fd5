// The gfx950 NVFP4 index scorer (arch/gfx950/score_kernel.hpp) run in the wavefront emulator
// from the same source that score.hip compiles for gfx950, through the emulator's launcher
// (score_emulated.hpp) and the same views -> launch conversion as the HIP dispatch
// (uq/core/score_launch.hpp). Every case is checked three ways:
//
//  1. against the float64 reference (reference/, uqref::nv_score) with the spec's
//     tolerance (compare_scores in tests/test_index_common.hpp: sentinels, -inf and
//     untouched entries bit-exact, finite scores within max(1e-4 + 1e-4 |ref|, a bound derived
//     there for any fp32 summation order));
//  2. against the float64 reference bit for bit: in the emulator the MFMA sums its products
//     exactly and rounds once (docs/gfx950-isa.md §1.6, reference mode), and every E4M3 x
//     E4M3 product is a multiple of 2^-18 below 2^18, so a token's 128-term dot is exact in
//     double and the reference's float(dot) is the same number. (On hardware only 1. holds;
//     this check pins the kernel's data path: dims, tokens, masks, sentinels.)
//  3. against the generic Kokkos scorer on the same inputs, with the tolerance derived at
//     generic_bound() below, and with equal status counters.
#include "support/score_path.hpp"
#include "test_index_common.hpp"

#include "gfx950/score_emulated.hpp"
#include "gfx950/launch_score.hpp"
#include "uq/score.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace uqtest;
using namespace uqtest::index;
using uq::gfx950::ScoreKnobs;

constexpr int kTestComputeUnits = 4;  // keeps the automatic grids small enough to emulate

// How a case's inputs are laid out (both paths get the same views).
struct Layouts {
  bool strided_q = false;       // q transposed in memory with dim stride 2: the kernel's byte loads
  bool odd_q = false;           // dim stride 1 but rows 1 byte apart from alignment: byte loads too
  bool strided_scores = false;  // scores transposed in memory, block stride 2
  bool left_tables = false;     // block_tables LayoutLeft (block stride = num_reqs)
  bool strided_lens = false;    // seq_lens with stride 3
};

struct PathResult {
  std::vector<float> scores;  // [H][rows][S], logical order
  uq::Status status;
  double seconds = 0.0;
};

using QStrided = Kokkos::View<std::uint8_t***, Kokkos::LayoutStride, Mem>;
using ScoresStrided = Kokkos::View<float***, Kokkos::LayoutStride, Mem>;
using TablesStrided = Kokkos::View<std::int32_t**, Kokkos::LayoutStride, Mem>;
using LensStrided = Kokkos::View<std::int32_t*, Kokkos::LayoutStride, Mem>;

// A LayoutStride view over fresh storage with the given strides (elements).
template <class View>
View strided_view(const std::string& label, std::initializer_list<std::size_t> extents,
                  std::initializer_list<std::size_t> strides, Kokkos::View<typename View::value_type*, Mem>& storage) {
  std::size_t span = 1;
  auto s = strides.begin();
  for (std::size_t e : extents) span += (e > 0 ? e - 1 : 0) * *s++;
  storage = Kokkos::View<typename View::value_type*, Mem>(label, span + 8);
  Kokkos::LayoutStride layout;
  int r = 0;
  s = strides.begin();
  for (std::size_t e : extents) {
    layout.dimension[r] = e;
    layout.stride[r] = *s++;
    ++r;
  }
  return View(storage.data(), layout);
}

// Runs the emulated gfx950 kernel (knobs given or chosen as the dispatch does) or the
// generic scorer on views of the case laid out as `v`, scores poisoned first.
PathResult run_path(const ScoreCase& c, const Layouts& v, bool emulated, const ScoreKnobs* knobs = nullptr) {
  const std::int64_t rows = c.rows();
  DeviceInputs in(c);
  Kokkos::View<std::uint8_t*, Mem> q_storage;
  Kokkos::View<float*, Mem> s_storage;
  Kokkos::View<std::int32_t*, Mem> t_storage, l_storage;
  QStrided q;
  if (v.strided_q) {
    const std::size_t sd = 2, sr = 128 * sd + 3, sh = rows * sr + 5;
    q = strided_view<QStrided>("q", {std::size_t(rows), std::size_t(c.heads), 128}, {sr, sh, sd}, q_storage);
  } else if (v.odd_q) {
    q = strided_view<QStrided>("q", {std::size_t(rows), std::size_t(c.heads), 128},
                               {std::size_t(c.heads) * 129 + 1, 129, 1}, q_storage);
  } else {
    q = strided_view<QStrided>("q", {std::size_t(rows), std::size_t(c.heads), 128},
                               {std::size_t(c.heads) * 128, 128, 1}, q_storage);
  }
  fill_view(q, c.q);
  ScoresStrided scores;
  if (v.strided_scores) {
    const std::size_t sb = 2, sh = c.S * sb + 1, sr = c.heads * sh + 3;
    scores = strided_view<ScoresStrided>("scores", {std::size_t(c.heads), std::size_t(rows), std::size_t(c.S)},
                                         {sh, sr, sb}, s_storage);
  } else {
    scores = strided_view<ScoresStrided>("scores", {std::size_t(c.heads), std::size_t(rows), std::size_t(c.S)},
                                         {std::size_t(rows * c.S), std::size_t(c.S), 1}, s_storage);
  }
  Kokkos::deep_copy(s_storage, poison_value());
  TablesStrided tables = strided_view<TablesStrided>(
      "tables", {std::size_t(c.num_reqs), std::size_t(c.max_blocks)},
      v.left_tables ? std::initializer_list<std::size_t>{1, std::size_t(c.num_reqs)}
                    : std::initializer_list<std::size_t>{std::size_t(c.max_blocks), 1},
      t_storage);
  Kokkos::deep_copy(tables, in.tables);
  LensStrided lens =
      strided_view<LensStrided>("lens", {std::size_t(c.num_reqs)}, {v.strided_lens ? 3u : 1u}, l_storage);
  Kokkos::deep_copy(lens, in.seq_lens);

  PathResult r;
  const auto t0 = std::chrono::steady_clock::now();
  if (emulated) {
    uq::impl::DequantTable<Exec> table(Exec{});
    uq::impl::StatusCounters<Exec> counters(Exec{});
    const uq::impl::ScoreParams p = score_params_of(c);
    uq::gfx950::ScoreLaunch l = uq::gfx950::score_launch(q, uq::impl::index_cache_addressing(in.cache), tables, lens,
                                                         scores, table.view(), counters.view(), p, c.num_reqs);
    l.knobs = knobs ? *knobs
                    : uq::gfx950::choose_score_knobs(c.num_reqs, c.max_blocks, c.query_len, c.heads, kTestComputeUnits);
    uq::gfx950::emulate_score(l);
    r.status = counters.read(Exec{});
  } else {
    uq::ScoreConfig cfg;
    cfg.query_len = c.query_len;
    cfg.init_blocks = c.init_blocks;
    cfg.local_blocks = c.local_blocks;
    cfg.backend = uq::Backend::Generic;
    cfg.check = false;
    uq::ScorePlan<Exec> plan(Exec(), {c.num_reqs, c.query_len, c.heads, c.max_blocks}, cfg);
    plan.run(q, in.cache, tables, lens, scores);
    r.status = plan.status();
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.scores = read_view(scores);
  return r;
}

// ---------------------------------------------------------------- emulated vs generic
// Tolerance between the two implementations for entry (h, row, b), from the data:
//   both form the same exact products q[d] k̂[t][d] (E4M3 x E4M3: at most 8 significant
//   bits, exact in fp32). The emulated MFMA sums a token's 128 products exactly and rounds
//   once: |e_t - s_t| <= u |s_t| (s_t the exact dot, u = 2^-24). The generic kernel sums
//   them in fp32 in its own order: |g_t - s_t| <= gamma_127 A_t with A_t = sum_d |q[d]
//   k̂[t][d]| (Higham Th. 4.4, any order; gamma_n = n u / (1 - n u)). A maximum over the
//   same set of tokens moves by at most the largest per-token difference:
//       |max e - max g| <= max_t (gamma_127 A_t + u |s_t|)   over the row's visible tokens.
// Tighter than the reference comparison: no 1e-4 floor, and A_t per token instead of the
// per-dim maxima bound (sum_d |q[d]| max_t |k̂[t][d]|).
double generic_bound(const ScoreCase& c, int h, std::int64_t row, std::int64_t b) {
  const double u = std::ldexp(1.0, -24), gamma = 127 * u / (1 - 127 * u);
  const std::int64_t req = row / c.query_len;
  const int r = static_cast<int>(row % c.query_len);
  const std::int64_t L = std::min<std::int64_t>(std::max(c.seq_lens[req], 0), std::int64_t{c.max_blocks} * kBlk);
  const std::int64_t vis = std::max<std::int64_t>(L - c.query_len + r + 1, 0);
  const std::int64_t count = std::min<std::int64_t>(vis - b * kBlk, kBlk);
  const std::uint8_t* page = c.cache.data() + std::int64_t{c.tables[req * c.max_blocks + b]} * kPage;
  const std::uint8_t* q = c.q.data() + (row * c.heads + h) * kD;
  double bound = 0.0;
  for (std::int64_t t = 0; t < count; ++t) {
    double a = 0.0, s = 0.0;
    for (int d = 0; d < kD; ++d) {
      const double p = uqref::e4m3_value(q[d]) * uqref::nv_dequant(page, static_cast<int>(t), d);
      a += std::fabs(p);
      s += p;
    }
    if (std::isfinite(s)) bound = std::max(bound, gamma * a + u * std::fabs(s));
  }
  return bound;
}

struct GenericComparison {
  std::int64_t identical = 0, within = 0, failures = 0;
  double worst = 0.0;  // max |emulated - generic| / bound over entries that differ
};

GenericComparison compare_with_generic(const ScoreCase& c, const std::vector<float>& emu, const std::vector<float>& gen,
                                       const std::string& what) {
  GenericComparison r;
  const std::int64_t rows = c.rows();
  for (int h = 0; h < c.heads; ++h)
    for (std::int64_t row = 0; row < rows; ++row)
      for (std::int64_t b = 0; b < c.S; ++b) {
        const std::size_t i = static_cast<std::size_t>((h * rows + row) * c.S + b);
        bool ok = bits_of(emu[i]) == bits_of(gen[i]);
        if (ok) {
          ++r.identical;
        } else if (std::isfinite(emu[i]) && std::isfinite(gen[i]) && emu[i] != 1e30f && emu[i] != 1e29f &&
                   gen[i] != 1e30f && gen[i] != 1e29f) {
          const double bound = generic_bound(c, h, row, b);
          const double diff = std::fabs(static_cast<double>(emu[i]) - gen[i]);
          r.worst = std::max(r.worst, bound > 0 ? diff / bound : INFINITY);
          ok = diff <= bound;
          ++r.within;
        }
        if (!ok && ++r.failures <= 10)
          ADD_FAILURE() << what << ": emulated scores(h=" << h << ", row=" << row << ", b=" << b << ") = " << emu[i]
                        << " (0x" << std::hex << bits_of(emu[i]) << "), generic " << gen[i] << " (0x" << bits_of(gen[i])
                        << std::dec << ")";
      }
  return r;
}

// Bit-exact comparison with the reference (item 2 of the file comment).
std::int64_t count_bit_differences(const std::vector<float>& a, const std::vector<float>& b) {
  std::int64_t n = 0;
  for (std::size_t i = 0; i < a.size(); ++i) n += bits_of(a[i]) != bits_of(b[i]);
  return n;
}

void expect_same_status(const uq::Status& a, const uq::Status& b, const std::string& what) {
  for (int i = 0; i < uq::kNumCounters; ++i)
    EXPECT_EQ(a.counts[i], b.counts[i]) << what << ": counter " << uq::counter_name(static_cast<uq::Counter>(i));
}

// Checks one case three ways; returns the emulated result.
PathResult check_case(const ScoreCase& c, const Layouts& v, const std::string& what, const ScoreKnobs* knobs = nullptr,
                      const std::vector<double>* key_max_in = nullptr) {
  const std::vector<float> ref = reference_scores(c);
  const PathResult emu = run_path(c, v, true, knobs);
  const PathResult gen = run_path(c, v, false);
  const std::vector<double> key_max = key_max_in ? *key_max_in : page_key_maxima(c.cache);
  const ScoreComparison cmp = compare_scores(c, ref, emu.scores, key_max, what + " (emulated vs reference)");
  EXPECT_EQ(cmp.failures, 0) << what;
  EXPECT_EQ(count_bit_differences(ref, emu.scores), 0) << what << ": the emulated kernel must equal the reference bit for bit";
  const GenericComparison g = compare_with_generic(c, emu.scores, gen.scores, what);
  EXPECT_EQ(g.failures, 0) << what;
  expect_same_status(emu.status, gen.status, what);
  return emu;
}

// ---------------------------------------------------------------- cases

std::int64_t total_blocks(const std::vector<std::int32_t>& lens) {
  std::int64_t n = 0;
  for (std::int32_t L : lens) n += (std::max(L, 0) + kBlk - 1) / kBlk;
  return n;
}

// A ragged batch with one request per length, its own pages (shuffled), random queries.
ScoreCase ragged_case(std::mt19937_64& rng, std::vector<std::int32_t> lens, int QL, int H, int init, int local,
                      bool random_codes = false, int spare_blocks = 1) {
  ScoreCase c;
  c.num_reqs = static_cast<int>(lens.size());
  c.query_len = QL;
  c.heads = H;
  c.init_blocks = init;
  c.local_blocks = local;
  int mb = 0;
  for (std::int32_t L : lens) mb = std::max<int>(mb, (std::max(L, 0) + kBlk - 1) / kBlk);
  c.max_blocks = mb + spare_blocks;
  c.S = c.max_blocks + 3;
  c.seq_lens = lens;
  c.cache = random_cache(rng, std::max<std::int64_t>(total_blocks(lens), 1) + 2, random_codes);
  c.tables = shuffled_tables(rng, lens, c.max_blocks, c.num_blocks());
  c.q = random_q(rng, c.rows() * H * kD);
  return c;
}

// The causal straddle of the spec's matrix (L = 130, QL = 4: rows see 127..130 tokens, so
// block 1 is invisible to row 0 and row 1 and partial for rows 2 and 3) and the worked
// example of nvfp4-index-sources.md §5.6 (exact values).
TEST(EmuScore, CausalStraddleAndWorkedExample) {
  std::mt19937_64 rng(8002);
  for (int local : {0, 1})
    for (int H : {1, 4}) {
      ScoreCase c = ragged_case(rng, {130, 130, 257}, 4, H, 0, local);
      check_case(c, Layouts{}, "straddle local=" + std::to_string(local) + " H=" + std::to_string(H));
    }

  ScoreCase c;
  c.num_reqs = 1;
  c.query_len = 2;
  c.heads = 1;
  c.local_blocks = 1;
  c.max_blocks = 2;
  c.S = 3;
  c.seq_lens = {129};
  c.cache.assign(10 * kPage, 0);
  c.tables = {5, 9};
  std::uint8_t* page5 = c.cache.data() + 5 * kPage;
  page5[0] = 0x21;
  page5[1] = 0x9F;
  page5[8192] = 0x39;  // token 0, group 0: 1.125
  c.q.assign(2 * kD, 0);
  for (int r = 0; r < 2; ++r)
    for (int d = 0; d < 16; ++d) c.q[r * kD + d] = 0xB8;  // -1.0
  const PathResult emu = check_case(c, Layouts{}, "worked example");
  // row 0: 1e29, -inf; row 1: 5.875, 1e29 (the 0.5625 + 1.125 - 7.0 - 0.5625 dot, negated)
  EXPECT_EQ(emu.scores[0], 1e29f);
  EXPECT_EQ(emu.scores[1], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(bits_of(emu.scores[2]), kPoisonBits);
  EXPECT_EQ(emu.scores[3], 5.875f);
  EXPECT_EQ(emu.scores[4], 1e29f);
}

// Every knob setting gives the same scores (each entry is the same MFMA's result whichever
// wave or workgroup computes it, so they must agree bit for bit), for a 1-column and a
// 32-column shape: shared and per-wave positions, buffered units of 1, 4, 5, 16, direct
// units, several splits and chunks smaller than the batch.
TEST(EmuScore, KnobsDoNotChangeScores) {
  std::mt19937_64 rng(8003);
  struct Shape {
    int QL, H;
  };
  for (Shape s : {Shape{1, 1}, Shape{8, 4}}) {
    ScoreCase c = ragged_case(rng, {700, 0, 2100, 129, 1, 1400, 300}, s.QL, s.H, 1, 1);
    const std::vector<float> ref = reference_scores(c);
    const std::vector<double> key_max = page_key_maxima(c.cache);
    const int cmax = uq::gfx950::scorer::chunk_max(uq::gfx950::scorer::padded_columns(s.QL * s.H));
    std::vector<ScoreKnobs> settings;
    auto add = [&](int chunk, int splits, bool per_wave, int unit, bool buffered) {
      ScoreKnobs k;
      k.chunk = std::min(chunk, cmax);
      k.splits = splits;
      k.per_wave = per_wave;
      k.unit = unit;
      k.buffered = buffered;
      settings.push_back(k);
    };
    add(7, 1, false, 1, false);
    add(7, 3, false, 2, false);
    add(7, 2, false, 4, true);
    add(7, 1, false, 5, true);
    add(7, 1, false, 16, true);
    add(3, 2, false, 3, true);  // 3 chunks of 3, 3, 1 requests
    add(2, 1, true, 1, false);  // per-wave: each wave its own units
    add(1, 5, true, 2, false);
    add(4, 7, false, 1, false);
    std::vector<float> first;
    for (std::size_t i = 0; i < settings.size(); ++i) {
      const ScoreKnobs& k = settings[i];
      const std::string what = "QL=" + std::to_string(s.QL) + " H=" + std::to_string(s.H) + " knobs{chunk " +
                               std::to_string(k.chunk) + ", splits " + std::to_string(k.splits) + ", per_wave " +
                               std::to_string(k.per_wave) + ", unit " + std::to_string(k.unit) + ", buffered " +
                               std::to_string(k.buffered) + "}";
      const PathResult emu = run_path(c, Layouts{}, true, &k);
      const ScoreComparison cmp = compare_scores(c, ref, emu.scores, key_max, what);
      EXPECT_EQ(cmp.failures, 0) << what;
      EXPECT_GT(cmp.close, 0) << what;
      if (i == 0)
        first = emu.scores;
      else
        EXPECT_EQ(count_bit_differences(first, emu.scores), 0) << what;
      EXPECT_TRUE(emu.status.ok()) << what << ": " << emu.status.describe();
    }
  }
}

// More than 64 requests: several chunks (1 column: 64 requests per chunk; 32 columns: 8 per
// chunk), under the dispatch's knobs and under explicit ones.
TEST(EmuScore, MoreThan64Requests) {
  std::mt19937_64 rng(8004);
  std::uniform_int_distribution<int> len(0, 700);
  for (auto shape : {std::pair<int, int>{1, 1}, std::pair<int, int>{8, 4}}) {
    const int n = shape.first == 1 ? 150 : 70;
    std::vector<std::int32_t> lens(n);
    for (auto& L : lens) L = len(rng);
    lens[3] = 0;
    lens[n - 1] = 1;
    ScoreCase c = ragged_case(rng, lens, shape.first, shape.second, 0, 1);
    const std::string what = std::to_string(n) + " requests, QL=" + std::to_string(shape.first);
    check_case(c, Layouts{}, what);
    ScoreKnobs k = uq::gfx950::choose_score_knobs(n, c.max_blocks, c.query_len, c.heads, kTestComputeUnits);
    EXPECT_GT(uq::gfx950::score_chunks(n, k), 1) << what;
    k.chunk = shape.first == 1 ? 37 : 5;  // uneven chunks, the last one partial
    k.splits = 2;
    const PathResult a = run_path(c, Layouts{true, false, true, false, false}, true, &k);
    EXPECT_EQ(count_bit_differences(reference_scores(c), a.scores), 0) << what << " with chunks of " << k.chunk;
  }
}

// Requests sharing pages (a common prefix, and a page used at different positions): each
// page is loaded once per position and scored for every request that holds it, across
// column groups and within one.
TEST(EmuScore, SharedPages) {
  std::mt19937_64 rng(8005);
  for (auto shape : {std::pair<int, int>{1, 1}, std::pair<int, int>{2, 2}, std::pair<int, int>{16, 2}}) {
    ScoreCase c = ragged_case(rng, {900, 900, 640, 1000, 300, 900, 129, 900, 770, 900, 900, 900, 900, 900, 900, 900, 900, 650},
                              shape.first, shape.second, 1, 1);
    // Requests 0..17 share the first 4 pages of request 0 (their blocks 0..3), request 5
    // also uses request 0's block 5 page at its block 6, request 7 holds one page twice.
    for (int r = 1; r < c.num_reqs; ++r)
      for (int b = 0; b < 4 && b < (c.seq_lens[r] + kBlk - 1) / kBlk; ++b)
        c.tables[r * c.max_blocks + b] = c.tables[b];
    c.tables[5 * c.max_blocks + 6] = c.tables[5];
    c.tables[7 * c.max_blocks + 6] = c.tables[7 * c.max_blocks + 5];
    const std::string what = "shared pages QL=" + std::to_string(shape.first) + " H=" + std::to_string(shape.second);
    check_case(c, Layouts{}, what);
    ScoreKnobs k = uq::gfx950::choose_score_knobs(c.num_reqs, c.max_blocks, c.query_len, c.heads, 1);
    k.buffered = !k.per_wave;
    k.unit = 3;
    check_case(c, Layouts{}, what + ", buffered", &k);
  }
}

// Small-integer data: keys of scale 1.0 (E2M1 values), queries in {0, +-0.5, +-1, +-2}: every
// product is a multiple of 0.25 below 12 and every partial sum a multiple of 0.25 below 1536,
// all exact in fp32, so any summation order gives the same bits: emulated, generic and
// reference must be identical.
TEST(EmuScore, ExactDataIsBitIdenticalAcrossImplementations) {
  std::mt19937_64 rng(8007);
  ScoreCase c = ragged_case(rng, {1000, 77, 513, 0, 256}, 4, 2, 1, 1);
  std::uniform_int_distribution<int> byte(0, 255);
  for (std::int64_t p = 0; p < c.num_blocks(); ++p) {
    for (int i = 0; i < 8192; ++i) c.cache[p * kPage + i] = static_cast<std::uint8_t>(byte(rng));
    for (int i = 8192; i < kPage; ++i) c.cache[p * kPage + i] = 0x38;
  }
  const std::uint8_t qs[] = {0x00, 0x30, 0xB0, 0x38, 0xB8, 0x40, 0xC0};
  std::uniform_int_distribution<int> pick(0, 6);
  for (auto& b : c.q) b = qs[pick(rng)];
  const std::vector<float> ref = reference_scores(c);
  const PathResult emu = run_path(c, Layouts{}, true);
  const PathResult gen = run_path(c, Layouts{}, false);
  EXPECT_EQ(count_bit_differences(ref, emu.scores), 0);
  EXPECT_EQ(count_bit_differences(gen.scores, emu.scores), 0);
  int finite = 0;
  for (float v : ref) finite += std::isfinite(v) && v != 1e30f && v != 1e29f;
  EXPECT_GT(finite, 50);
}

// Bad page ids of needed blocks are masked (-inf unless a sentinel applies) and counted once
// per (request, block), bad ids of sentinel-only blocks are never read, negative lengths are
// 0 and lengths past the block table are clamped, each counted once: in every knob mode the
// counters equal the generic path's and the expected numbers.
TEST(EmuScore, BadBlockIdsAndLengthsAreMaskedAndCounted) {
  std::mt19937_64 rng(8008);
  const ScoreCase c = bad_ids_and_lengths_case(rng);
  std::vector<ScoreKnobs> modes(4);
  modes[0] = uq::gfx950::choose_score_knobs(4, 5, 2, 2, kTestComputeUnits);
  modes[1].chunk = 4, modes[1].splits = 3, modes[1].per_wave = false;
  modes[2].chunk = 4, modes[2].splits = 1, modes[2].unit = 2, modes[2].buffered = true;
  modes[3].chunk = 1, modes[3].splits = 2, modes[3].per_wave = true;
  for (std::size_t m = 0; m < modes.size(); ++m) {
    for (bool strided : {false, true}) {
      Layouts v;
      v.strided_q = strided;
      v.strided_scores = strided;
      v.left_tables = strided;
      const std::string what = "bad data, knob mode " + std::to_string(m) + (strided ? ", strided" : "");
      const PathResult emu = check_case(c, v, what, &modes[m]);
      EXPECT_EQ(emu.status[uq::Counter::bad_block_ids], 2u) << what;
      EXPECT_EQ(emu.status[uq::Counter::negative_seq_lens], 1u) << what;
      EXPECT_EQ(emu.status[uq::Counter::long_seq_lens], 1u) << what;
      EXPECT_EQ(emu.status[uq::Counter::bad_slots], 0u) << what;
    }
  }
}

// Nothing to score: no requests, or a block table of width 0 (no launch, no counts, as the
// generic path), and every length 0 (a launch that stores nothing).
TEST(EmuScore, EmptyWork) {
  std::mt19937_64 rng(8009);
  ScoreCase c = ragged_case(rng, {0, 0, -3}, 2, 1, 1, 1, false, 0);
  ASSERT_EQ(c.max_blocks, 0);
  c.S = 2;
  const PathResult a = check_case(c, Layouts{}, "width 0");
  EXPECT_TRUE(a.status.ok()) << a.status.describe();
  c = ragged_case(rng, {0, 0, -3}, 2, 1, 1, 1, false, 2);
  const PathResult b = check_case(c, Layouts{}, "all lengths 0");
  EXPECT_EQ(b.status[uq::Counter::negative_seq_lens], 1u);
  for (float v : b.scores) EXPECT_EQ(bits_of(v), kPoisonBits);
}

// ---------------------------------------------------------------- launch argument errors
TEST(EmuScore, LaunchArgumentErrors) {
  std::vector<std::uint8_t> cache(2 * kPage + 8), table(2048), q(4 * 2 * kD);
  std::vector<std::int32_t> tables(2 * 3), lens(2);
  std::vector<float> scores(2 * 4 * 3);
  std::vector<unsigned long long> counters(uq::kNumCounters);
  auto base = [&] {
    uq::gfx950::ScoreLaunch l;
    l.scores = scores.data();
    l.scores_stride_head = 12;
    l.scores_stride_row = 3;
    l.counters = counters.data();
    l.q = q.data();
    l.q_stride_row = 2 * kD;
    l.q_stride_head = kD;
    l.index_cache = cache.data();
    l.num_blocks = 2;
    l.dequant_table = table.data();
    l.block_tables = tables.data();
    l.table_stride_req = 3;
    l.seq_lens = lens.data();
    l.num_reqs = 2;
    l.query_len = 2;
    l.heads = 2;
    l.max_blocks = 3;
    l.knobs.chunk = 2;
    return l;
  };
  auto fails = [](uq::gfx950::ScoreLaunch l, std::initializer_list<std::string> fragments) {
    expect_error([&] { uq::gfx950::emulate_score(l); }, fragments);
  };
  EXPECT_NO_THROW(uq::gfx950::emulate_score(base()));
  auto l = base();
  l.heads = 3;
  fails(l, {"uq::gfx950::launch_score", "'heads'", "1, 2 or 4", "got 3"});
  l = base();
  l.query_len = 17;
  fails(l, {"'query_len'", "heads * query_len <= 32 (heads = 2)", "got 17"});
  l = base();
  l.knobs.chunk = 65;
  fails(l, {"'knobs.chunk'", "1 .. 64 (the chunk's Q rows fit LDS)", "got 65"});
  l = base();
  l.query_len = 16;
  l.knobs.chunk = 9;  // 32 columns: 8 requests per chunk
  fails(l, {"'knobs.chunk'", "1 .. 8", "got 9"});
  l = base();
  l.knobs.splits = 0;
  fails(l, {"'knobs.splits'", ">= 1", "got 0"});
  l = base();
  l.knobs.buffered = true;
  l.knobs.unit = 17;
  fails(l, {"'knobs.unit'", "1 .. 16 (buffered)", "got 17"});
  l = base();
  l.knobs.buffered = true;
  l.knobs.per_wave = true;
  fails(l, {"'knobs.buffered'", "false when knobs.per_wave"});
  l = base();
  l.index_cache = cache.data() + 1;
  fails(l, {"'index_cache'", "4-byte aligned"});
  l = base();
  l.dequant_table = nullptr;
  fails(l, {"'dequant_table'", "got nullptr"});
  l = base();
  l.q_stride_row = std::int64_t{1} << 30;
  fails(l, {"'q'", "below 2^31 bytes"});
  l = base();
  l.scores_stride_block = -1;
  fails(l, {"'scores strides'", "non-negative"});
  l = base();
  l.max_blocks = 1 << 24;
  fails(l, {"'max_blocks'", "0 .. 2^24 - 1"});
  l = base();
  l.knobs.splits = 1 << 20;
  l.knobs.unit = 1 << 12;
  fails(l, {"'knobs'", "splits * (per_wave ? 4 : 1) * unit + max_blocks <= 2^31 - 1"});
  l = base();
  l.init_blocks = -1;
  fails(l, {"'init_blocks'", ">= 0", "got -1"});
}

}  // namespace

// ---------------------------------------------------------------- the shared cases
// The data cases of tests/score_cases.hpp (the matrix, random code bytes, q = 0, saturation,
// NaN scale bytes) on the emulated gfx950 kernels, each checked the three ways of the file
// comment: the reference comparison in the body, then bit-exactness with the reference and
// agreement with the generic scorer (tolerance of generic_bound, equal counters) here.
namespace uqtest {
namespace index {

// The layouts of case `variant`: dense and strided q (byte loads) and odd rows, strided
// scores, LayoutLeft tables and strided lengths in turn.
Layouts emulated_layouts(int variant) {
  Layouts v;
  v.strided_q = variant % 3 == 1;
  v.odd_q = variant % 3 == 2;
  v.strided_scores = variant % 2 == 1;
  v.left_tables = variant % 4 == 2;
  v.strided_lens = variant % 5 == 3;
  return v;
}

class EmulatedScorePath : public ScorePath {
 public:
  std::string name() const override { return "gfx950 (emulated)"; }
  RunResult run(const ScoreCase& c, int variant) const override {
    const PathResult r = run_path(c, emulated_layouts(variant), true);
    return RunResult{r.scores, r.status};
  }
  void cross_check(const ScoreCase& c, int variant, const std::vector<float>& ref, const RunResult& got,
                   const std::string& what) const override {
    EXPECT_EQ(count_bit_differences(ref, got.scores), 0) << what << ": the emulated kernel must equal the reference bit for bit";
    const PathResult gen = run_path(c, emulated_layouts(variant), false);
    const GenericComparison g = compare_with_generic(c, got.scores, gen.scores, what);
    EXPECT_EQ(g.failures, 0) << what;
    expect_same_status(got.status, gen.status, what);
  }
};

std::vector<std::unique_ptr<ScorePath>> score_paths() {
  std::vector<std::unique_ptr<ScorePath>> paths;
  paths.push_back(std::make_unique<EmulatedScorePath>());
  return paths;
}

}  // namespace index
}  // namespace uqtest

#define UQ_SCORE_PREFIX Emu
#include "score_cases.hpp"
