// uq::select_blocks against the float64 reference: random scores with many ties, NaN,
// -inf and sentinels, rows with fewer than k visible blocks, k = 1 .. S, strided
// scores and output, score -> select end to end (q = 0: all ties), bad lengths
// counted, and every host error path.
#include "test_index_common.hpp"
#include "uq/score.hpp"
#include "uq/select_blocks.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace uqtest;
using namespace uqtest::index;

using ScoreView = Kokkos::View<float***, Kokkos::LayoutRight, Mem>;
using OutView = Kokkos::View<std::int32_t***, Kokkos::LayoutRight, Mem>;
constexpr std::int32_t kPoisonIndex = 0x5eadbeef;

// Scores drawn from a few levels (so ties are common), with NaN, +-inf, -0 and the
// sentinels mixed in.
std::vector<float> tie_heavy_scores(std::mt19937_64& rng, std::size_t n) {
  const float inf = std::numeric_limits<float>::infinity();
  const float levels[] = {-3.5f, -0.0f, 0.0f, 0.0f, 1.25f, 1.25f, 7.0f, 7.0f, 1e29f, 1e30f, -inf, inf,
                          std::nanf(""), -std::nanf(""), 2.0f, 2.0f};
  std::uniform_int_distribution<int> pick(0, 15);
  std::uniform_real_distribution<float> u(-10.0f, 10.0f);
  std::vector<float> s(n);
  for (auto& x : s) {
    const int k = pick(rng);
    x = k < 12 ? levels[pick(rng)] : u(rng);
  }
  return s;
}

struct SelectCase {
  int num_reqs = 0, query_len = 1, heads = 1, k = 16;
  std::int64_t S = 0;
  std::vector<float> scores;         // [H][rows][S]
  std::vector<std::int32_t> seq_lens;
  std::int64_t rows() const { return static_cast<std::int64_t>(num_reqs) * query_len; }
};

std::vector<std::int32_t> reference_select(const SelectCase& c) {
  std::vector<std::int32_t> out(static_cast<std::size_t>(c.heads * c.rows() * c.k), kPoisonIndex);
  uqref::nv_select(c.scores.data(), c.S, c.seq_lens.data(), c.num_reqs, c.query_len, c.heads, c.k, out.data());
  return out;
}

// Runs select_blocks with check = false; scores and out LayoutRight or strided.
std::vector<std::int32_t> run_select(const SelectCase& c, bool strided, uq::Status* status = nullptr) {
  auto lens = to_device(c.seq_lens, "seq_lens", c.num_reqs);
  uq::SelectConfig cfg;
  cfg.query_len = c.query_len;
  cfg.check = false;
  uq::BlockSelector<Exec> selector(Exec(), cfg);
  std::vector<std::int32_t> got;
  auto go = [&](const auto& scores, const auto& out) {
    fill_view(scores, c.scores);
    Kokkos::deep_copy(out, kPoisonIndex);
    selector.run(scores, lens, out);
    got = read_view(out);
  };
  if (strided) {
    StridedArray<float> scores("scores", c.heads, c.rows(), c.S);
    StridedArray<std::int32_t> out("out", c.heads, c.rows(), c.k);
    go(scores.view, out.view);
  } else {
    ScoreView scores("scores", c.heads, c.rows(), c.S);
    OutView out("out", c.heads, c.rows(), c.k);
    go(scores, out);
  }
  if (status) *status = selector.status();
  return got;
}

void expect_same_selection(const SelectCase& c, const std::vector<std::int32_t>& got,
                           const std::vector<std::int32_t>& ref, const std::string& what) {
  ASSERT_EQ(got.size(), ref.size());
  int bad = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    ASSERT_NE(ref[i], kPoisonIndex) << "the reference writes every output entry";
    if (got[i] != ref[i] && ++bad <= 10) {
      const std::size_t k = i % c.k, row = (i / c.k) % c.rows(), h = i / (c.k * c.rows());
      ADD_FAILURE() << what << ": out(h=" << h << ", row=" << row << ", " << k << ") = " << got[i]
                    << ", reference " << ref[i];
    }
  }
  EXPECT_EQ(bad, 0) << what;
}

TEST(IndexSelect, RandomScoresWithTies) {
  std::mt19937_64 rng(31);
  int config = 0;
  for (int QL : {1, 3, 8})
    for (int H : {1, 2, 4})
      for (int k : {1, 5, 16, 37}) {
        SelectCase c;
        c.seq_lens = {0, 1, 128, 129, 700, 4096, 255, 2000, -0};
        std::shuffle(c.seq_lens.begin(), c.seq_lens.end(), rng);
        c.num_reqs = static_cast<int>(c.seq_lens.size());
        c.query_len = QL;
        c.heads = H;
        c.k = k;
        c.S = 37;  // >= every row's visible blocks (4096 / 128 = 32)
        c.scores = tie_heavy_scores(rng, static_cast<std::size_t>(H * c.rows() * c.S));
        const std::string what = "QL=" + std::to_string(QL) + " H=" + std::to_string(H) + " k=" + std::to_string(k);
        expect_same_selection(c, run_select(c, (config++ % 2) == 1), reference_select(c), what);
      }
}

// Rows with fewer than k visible blocks are padded with -1; rows seeing nothing are
// all -1; entries past nb are never candidates even when they are the largest.
TEST(IndexSelect, PaddingAndInvisibleEntries) {
  SelectCase c;
  c.num_reqs = 3;
  c.query_len = 2;
  c.heads = 1;
  c.k = 4;
  c.S = 5;
  c.seq_lens = {129, 0, 1};
  c.scores.assign(static_cast<std::size_t>(c.rows() * c.S), 1e38f);  // large values beyond nb
  // request 0, row 0 (vis 128, nb 1) and row 1 (vis 129, nb 2)
  c.scores[0 * c.S + 0] = 2.0f;
  c.scores[1 * c.S + 0] = 2.0f;
  c.scores[1 * c.S + 1] = 3.0f;
  const auto got = run_select(c, false);
  const std::vector<std::int32_t> expect = {
      0, -1, -1, -1,   // req 0 row 0: block 0 only
      1, 0, -1, -1,    // req 0 row 1: 3.0 before 2.0
      -1, -1, -1, -1,  // req 1: L = 0
      -1, -1, -1, -1,  // req 1 row 1
      -1, -1, -1, -1,  // req 2 row 0: vis = 0
      0, -1, -1, -1,   // req 2 row 1: vis = 1
  };
  EXPECT_EQ(got, expect);
  expect_same_selection(c, got, reference_select(c), "padding");
}

// Ties: equal scores (including -0 vs +0, NaN vs -inf) come out by increasing block.
TEST(IndexSelect, TiesGoToTheSmallerBlock) {
  const float inf = std::numeric_limits<float>::infinity();
  SelectCase c;
  c.num_reqs = 1;
  c.query_len = 1;
  c.heads = 1;
  c.k = 8;
  c.S = 8;
  c.seq_lens = {8 * 128};
  c.scores = {-inf, std::nanf(""), 0.0f, -0.0f, 5.0f, -inf, 5.0f, 0.0f};
  const auto got = run_select(c, true);
  EXPECT_EQ(got, (std::vector<std::int32_t>{4, 6, 2, 3, 7, 0, 1, 5}));
  expect_same_selection(c, got, reference_select(c), "ties");
}

// End to end: scores from uq::score with q = 0 (every computed score ties at 0): the
// init blocks come first, then the local ones, then the others by block index.
TEST(IndexSelect, AfterScoreWithZeroQuery) {
  std::mt19937_64 rng(32);
  ScoreCase sc;
  sc.cache = random_cache(rng, 20, false);
  sc.seq_lens = {2000, 300, 0, 129};
  sc.num_reqs = 4;
  sc.query_len = 2;
  sc.heads = 2;
  sc.init_blocks = 2;
  sc.local_blocks = 2;
  sc.max_blocks = 16;
  sc.S = 17;
  sc.tables.resize(static_cast<std::size_t>(sc.num_reqs * sc.max_blocks));
  for (std::size_t i = 0; i < sc.tables.size(); ++i) sc.tables[i] = static_cast<std::int32_t>((i * 7) % 20);
  sc.q.assign(static_cast<std::size_t>(sc.rows() * sc.heads * kD), 0);
  DeviceInputs in(sc);
  Kokkos::View<std::uint8_t***, Kokkos::LayoutRight, Mem> q("q", sc.rows(), sc.heads, kD);
  ScoreView scores("scores", sc.heads, sc.rows(), sc.S);
  // Entries past nb_req are never written by score: fill them with -inf as a consumer
  // would (select never reads them anyway).
  Kokkos::deep_copy(scores, -std::numeric_limits<float>::infinity());
  uq::ScoreConfig cfg;
  cfg.query_len = 2;
  cfg.init_blocks = 2;
  cfg.local_blocks = 2;
  uq::score(q, in.cache, in.tables, in.seq_lens, scores, cfg);
  OutView out("out", sc.heads, sc.rows(), 16);
  uq::SelectConfig scfg;
  scfg.query_len = 2;
  uq::select_blocks(scores, in.seq_lens, out, scfg);

  SelectCase c;
  c.num_reqs = 4;
  c.query_len = 2;
  c.heads = 2;
  c.k = 16;
  c.S = sc.S;
  c.seq_lens = sc.seq_lens;
  c.scores = to_host(scores);
  const auto got = to_host(out);
  expect_same_selection(c, got, reference_select(c), "after score");
  // Request 0 (L = 2000, 16 blocks), row 1: 0, 1 (init), 14, 15 (local), then 2..13.
  const std::vector<std::int32_t> row1(got.begin() + 16, got.begin() + 32);
  EXPECT_EQ(row1, (std::vector<std::int32_t>{0, 1, 14, 15, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}));
}

// Scores wider than the scorer's block table (S > max_blocks) and a seq_len longer than the
// table: score clamps the request to max_blocks * 128 tokens and writes nothing past that;
// selection, told the same max_blocks, clamps the same way. Every entry the scorer leaves
// unwritten is poisoned with a value above both sentinels, so reading one would select it.
TEST(IndexSelect, NeverReadsEntriesScoreDidNotWrite) {
  std::mt19937_64 rng(34);
  ScoreCase sc;
  sc.cache = random_cache(rng, 12, false);
  sc.seq_lens = {5 * 128 + 5, 300, 100000};  // request 2 is longer than max_blocks * 128
  sc.num_reqs = 3;
  sc.query_len = 1;
  sc.heads = 1;
  sc.init_blocks = 1;
  sc.local_blocks = 1;
  sc.max_blocks = 6;
  sc.S = 11;
  sc.tables.resize(static_cast<std::size_t>(sc.num_reqs * sc.max_blocks));
  for (std::size_t i = 0; i < sc.tables.size(); ++i) sc.tables[i] = static_cast<std::int32_t>((i * 5) % 12);
  sc.q.resize(static_cast<std::size_t>(sc.rows() * sc.heads * kD));
  for (auto& b : sc.q) b = static_cast<std::uint8_t>(rng() % 0x7e);  // finite E4M3 bytes
  DeviceInputs in(sc);
  Kokkos::View<std::uint8_t***, Kokkos::LayoutRight, Mem> q("q", sc.rows(), sc.heads, kD);
  Kokkos::deep_copy(q, to_device(sc.q, "q_src", sc.rows(), sc.heads, kD));
  ScoreView scores("scores", sc.heads, sc.rows(), sc.S);
  const float poison = 3.0e38f;
  Kokkos::deep_copy(scores, poison);
  uq::ScoreConfig cfg;
  cfg.init_blocks = 1;
  cfg.local_blocks = 1;
  cfg.check = false;
  uq::score(q, in.cache, in.tables, in.seq_lens, scores, cfg);

  OutView out("out", sc.heads, sc.rows(), 8);
  Kokkos::deep_copy(out, 12345);
  uq::SelectConfig scfg;
  scfg.max_blocks = sc.max_blocks;
  scfg.check = false;
  uq::BlockSelector<Exec> selector(Exec(), scfg);
  selector.run(scores, in.seq_lens, out);
  EXPECT_EQ(selector.status()[uq::Counter::long_seq_lens], 1u);
  const auto got = to_host(out);
  const auto host_scores = to_host(scores);
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_GE(got[i], -1) << "entry " << i;
    ASSERT_LT(got[i], sc.max_blocks) << "entry " << i << " selects a block past the table";
    if (got[i] >= 0) {
      const std::size_t row = i / 8;
      EXPECT_NE(host_scores[row * static_cast<std::size_t>(sc.S) + static_cast<std::size_t>(got[i])], poison)
          << "entry " << i << " selected an unwritten score";
    }
  }
  // Request 2 sees all 6 blocks of its table: the clamped selection is a full row of them.
  for (int j = 0; j < 6; ++j) EXPECT_GE(got[2 * 8 + static_cast<std::size_t>(j)], 0) << j;
  EXPECT_EQ(got[2 * 8 + 6], -1);

  // A max_blocks wider than the scores view is a host error.
  scfg.max_blocks = sc.S + 1;
  expect_error([&] { uq::select_blocks(Exec(), scores, in.seq_lens, out, scfg); },
               {"uq::select_blocks", "'config.max_blocks'", "<= scores.extent(2) = 11", "12"});
}

TEST(IndexSelect, BadLengthsAreCounted) {
  std::mt19937_64 rng(33);
  SelectCase c;
  c.num_reqs = 4;
  c.query_len = 2;
  c.heads = 2;
  c.k = 3;
  c.S = 4;
  c.seq_lens = {-1, 4 * 128 + 1, 100000, 200};  // negative, two longer than S * 128
  c.scores = tie_heavy_scores(rng, static_cast<std::size_t>(c.heads * c.rows() * c.S));
  uq::Status st;
  const auto got = run_select(c, false, &st);
  expect_same_selection(c, got, reference_select(c), "bad lengths");
  EXPECT_EQ(st[uq::Counter::negative_seq_lens], 1u);
  EXPECT_EQ(st[uq::Counter::long_seq_lens], 2u);
  auto scores = to_device(c.scores, "scores", c.heads, c.rows(), c.S);
  auto lens = to_device(c.seq_lens, "lens", c.num_reqs);
  OutView out("out", c.heads, c.rows(), c.k);
  uq::SelectConfig cfg;
  cfg.query_len = 2;
  expect_error([&] { uq::select_blocks(Exec(), scores, lens, out, cfg); },
               {"uq::select_blocks", "'seq_lens'", "negative_seq_lens=1", "long_seq_lens=2"});
}

TEST(IndexSelect, HostErrors) {
  const int R = 3, QL = 2, H = 2, S = 6;
  ScoreView scores("scores", H, R * QL, S);
  Kokkos::View<std::int32_t*, Mem> lens("lens", R);
  OutView out("out", H, R * QL, 4);
  uq::SelectConfig cfg;
  cfg.query_len = QL;
  EXPECT_NO_THROW(uq::select_blocks(scores, lens, out, cfg));
  auto call = [&](auto&& s_, auto&& l_, auto&& o_, uq::SelectConfig c) {
    return [=] { uq::select_blocks(Exec(), s_, l_, o_, c); };
  };
  uq::SelectConfig bad = cfg;
  bad.query_len = 0;
  expect_error(call(scores, lens, out, bad), {"uq::select_blocks", "'config.query_len'", ">= 1", "got 0"});
  bad.query_len = 3;
  expect_error(call(scores, lens, out, bad),
               {"uq::select_blocks", "'scores'", "extent(1) == 9 (num_reqs * query_len)", "got 6"});
  OutView out_h("out", H + 1, R * QL, 4);
  expect_error(call(scores, lens, out_h, cfg), {"uq::select_blocks", "'out'", "extent(0) == 2", "got 3"});
  OutView out_r("out", H, R * QL + 2, 4);
  expect_error(call(scores, lens, out_r, cfg), {"uq::select_blocks", "'out'", "extent(1) == 6", "got 8"});
  OutView out_k("out", H, R * QL, S + 1);
  expect_error(call(scores, lens, out_k, cfg),
               {"uq::select_blocks", "'out'", "extent(2) (k) <= scores.extent(2) = 6", "got 7"});
  using UnmanagedOut = Kokkos::View<std::int32_t***, Kokkos::LayoutRight, Mem, Kokkos::MemoryUnmanaged>;
  UnmanagedOut out_over_scores(reinterpret_cast<std::int32_t*>(scores.data()) + 5, H, R * QL, 4);
  expect_error(call(scores, lens, out_over_scores, cfg),
               {"uq::select_blocks", "'out'", "memory disjoint from 'scores'", "overlapping memory"});
  UnmanagedOut out_over_lens(lens.data(), H, R * QL, 4);
  expect_error(call(scores, lens, out_over_lens, cfg), {"uq::select_blocks", "memory disjoint from 'seq_lens'"});
  // k = 0 is a valid, empty selection.
  OutView out0("out", H, R * QL, 0);
  EXPECT_NO_THROW(uq::select_blocks(scores, lens, out0, cfg));
}

}  // namespace
