// The uq program's revision-3 commands through real .npy files (spec ultraquant.md §5.9, §7):
// decode with several query tokens per sequence (--query-len, --query-start-loc; out [T, Hq, 256],
// lse [T, Hq]) against the float64 reference within the per-row tolerances of the library's tests,
// and gather-kv bit for bit against the reference's gather; bad inputs give one line and exit 2.
#include "cli/cli_test_support.hpp"
#include "cli/reference_cache.hpp"

#include "support/decode_tolerance.hpp"
#include "support/lse_tolerance.hpp"
#include "support/reference_inputs.hpp"

#include "uqref.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

using namespace cli_test;
namespace npy = uq::cli::npy;

namespace {

constexpr int D = 256;

// A cache written by the reference writer: 3 sequences of lengths 40, 2 and 300 over shuffled
// blocks, 2 KV heads x QG 6, block 16; every slot holds a token.
struct CliCache {
  static constexpr int B = 3, Hk = 2, QG = 6, Hq = Hk * QG, BS = 16, NB = 24, MB = 20, SB = 272;
  std::vector<std::int32_t> lens = {40, 2, 300};
  std::vector<std::int32_t> tables = shuffled_block_tables(lens, NB, BS, MB, 21);
  std::vector<std::uint8_t> cache = reference_filled_cache(NB, BS, Hk, SB, 22, 23);

  void save(const TempDir& dir) const {
    save_u8(dir.file("cache.npy"), {NB, BS, Hk, SB}, cache);
    save_i32(dir.file("bt.npy"), {B, MB}, tables);
    save_i32(dir.file("sl.npy"), {B}, lens);
  }
  // The generic path, whose tolerances expect_matches applies (an sm90 GPU would take its FP8
  // multi-token kernel under Auto, with its own bound: tests/sm90_decode_queries.cpp); the
  // options' plumbing is the same on every path.
  std::vector<std::string> decode_args(const TempDir& dir) const {
    return {"decode", "--q", dir.file("q.npy"), "--cache", dir.file("cache.npy"), "--block-tables", dir.file("bt.npy"),
            "--seq-lens", dir.file("sl.npy"), "--qg", "6", "--out", dir.file("out.npy"), "--lse", dir.file("lse.npy"),
            "--backend", "generic"};
  }
  uqref::DecodeResult reference(const std::vector<std::uint16_t>& q, const std::vector<std::int32_t>& starts) const {
    uqref::DecodeInputs in = uqtest::reference_decode_inputs(q.data(), Hq, QG, cache.data(), NB, BS, Hk, SB,
                                                             tables.data(), MB, lens.data(), B, 1.0 / 16.0);
    in.query_start_loc = starts.data();
    in.num_query_tokens = starts.back();
    return uqref::uq_decode(in);
  }
};

// out and lse of a run against the reference: per element within decode_tolerance, per row lse
// within lse_tolerance; rows that see nothing exactly 0 and -inf.
void expect_matches(const TempDir& dir, const uqref::DecodeResult& ref, int T) {
  const npy::Array out = npy::read(dir.file("out.npy"));
  ASSERT_EQ(out.shape, (std::vector<std::int64_t>{T, CliCache::Hq, D}));
  const std::vector<float> got = load_as<float>(dir.file("out.npy"), 'f', 4);
  const std::vector<float> lse = load_as<float>(dir.file("lse.npy"), 'f', 4);
  ASSERT_EQ(lse.size(), std::size_t(T) * CliCache::Hq);
  int empty_rows = 0;
  for (std::size_t row = 0; row < lse.size(); ++row) {
    if (ref.attended[row] == 0) {
      ++empty_rows;
      EXPECT_EQ(lse[row], -INFINITY) << row;
      for (int d = 0; d < D; ++d) ASSERT_EQ(got[row * D + d], 0.0f) << row;
      continue;
    }
    EXPECT_NEAR(lse[row], ref.lse[row], uqtest::lse_tolerance(ref.lse[row], ref.score_abs[row], ref.attended[row]));
    for (int d = 0; d < D; ++d) {
      const std::size_t i = row * D + d;
      ASSERT_NEAR(got[i], ref.out[i], uqtest::decode_tolerance(ref.out[i], ref.vmax[i], ref.score_abs[row], ref.attended[row]))
          << "row " << row << " dim " << d;
    }
  }
  EXPECT_GT(empty_rows, 0) << "the case has rows that see nothing";
}

TEST(CliDecodeQueries, QueryLenMatchesTheReference) {
  TempDir dir;
  const CliCache s;
  s.save(dir);
  const int QL = 3, T = CliCache::B * QL;  // sequence 1 (2 tokens): its first new token sees nothing
  const std::vector<float> q = random_values(std::size_t(T) * CliCache::Hq * D, 24, 0.7f);
  save_f32(dir.file("q.npy"), {T, CliCache::Hq, D}, q);
  const CliResult r = run(with_options(s.decode_args(dir), {"--query-len", "3"}));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("9 query tokens of 3 sequences"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("lse " + dir.file("lse.npy") + " (9, 12) float32"), std::string::npos) << r.out;
  expect_matches(dir, s.reference(bf16_bits(q), {0, 3, 6, 9}), T);
}

TEST(CliDecodeQueries, QueryStartLocMatchesTheReference) {
  TempDir dir;
  const CliCache s;
  s.save(dir);
  const std::vector<std::int32_t> starts = {0, 4, 4, 9};  // n_b = 4, 0, 5 (sequence 1 has none)
  std::vector<std::int64_t> starts64(starts.begin(), starts.end());
  save_i64(dir.file("qsl.npy"), {4}, starts64);  // int64: converted
  const int T = 9;
  const std::vector<float> q = random_values(std::size_t(T) * CliCache::Hq * D, 25, 0.7f);
  save_f32(dir.file("q.npy"), {T, CliCache::Hq, D}, q);
  const std::vector<std::string> args =
      with_options(s.decode_args(dir), {"--query-start-loc", dir.file("qsl.npy"), "--partitions", "1"});
  CliResult r = run(args);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("1 kernel;"), std::string::npos) << r.out;
  // Here every row sees tokens (sequence 0's 37 .. 40, sequence 2's 296 .. 300); the second call
  // below gives sequence 1 more new tokens than its length, so rows that see nothing.
  const uqref::DecodeResult ref = s.reference(bf16_bits(q), starts);
  const std::vector<float> got = load_as<float>(dir.file("out.npy"), 'f', 4);
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], ref.out[i], uqtest::decode_tolerance(ref.out[i], ref.vmax[i], ref.score_abs[i / D], ref.attended[i / D]));

  const std::vector<std::int32_t> starts2 = {0, 1, 5, 9};  // sequence 1: 4 new tokens of 2
  save_i32(dir.file("qsl.npy"), {4}, starts2);
  r = run(args);
  ASSERT_EQ(r.status, 0) << r.err;
  expect_matches(dir, s.reference(bf16_bits(q), starts2), T);
}

TEST(CliDecodeQueries, BadInputsGiveOneLineAndExit2) {
  TempDir dir;
  const CliCache s;
  s.save(dir);
  save_f32(dir.file("q.npy"), {9, CliCache::Hq, D}, random_values(std::size_t(9) * CliCache::Hq * D, 26));
  const auto with = [&](const std::vector<std::string>& extra) { return run(with_options(s.decode_args(dir), extra)); };
  CliResult r = with({"--query-len", "4"});  // 9 rows != 3 x 4
  expect_one_line_error(r, "decode", 2);
  EXPECT_NE(r.err.find("T = B x QL = 3 x 4 = 12 rows"), std::string::npos) << r.err;
  save_i32(dir.file("qsl.npy"), {3}, {0, 4, 9});
  r = with({"--query-start-loc", dir.file("qsl.npy")});
  expect_one_line_error(r, "decode", 2);
  EXPECT_NE(r.err.find("shape [B + 1] = [4]"), std::string::npos) << r.err;
  save_i32(dir.file("qsl.npy"), {4}, {0, 5, 4, 9});
  r = with({"--query-start-loc", dir.file("qsl.npy")});
  expect_one_line_error(r, "decode", 2);
  EXPECT_NE(r.err.find("non-decreasing"), std::string::npos) << r.err;
  EXPECT_FALSE(exists(dir.file("out.npy")));
  r = with({"--query-start-loc", dir.file("qsl.npy"), "--query-len", "3"});
  expect_one_line_error(r, "decode", 2);
  // --no-check: the malformed sequence is skipped and counted, the others written.
  r = with({"--query-start-loc", dir.file("qsl.npy"), "--no-check"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("bad_start_locs=1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("skipped"), std::string::npos) << r.err;
}

// ------------------------------------------------------------------ gather-kv
TEST(CliGatherKv, RowsAreTheReferenceBitForBit) {
  TempDir dir;
  const CliCache s;
  s.save(dir);
  const std::vector<std::int32_t> starts = {0, 30, 30 + 2, 30 + 2 + 300};
  save_i32(dir.file("ksl.npy"), {4}, starts);
  const std::vector<std::string> common = {"gather-kv", "--cache", dir.file("cache.npy"), "--block-tables",
                                           dir.file("bt.npy"), "--k-out", dir.file("k.npy"), "--v-out",
                                           dir.file("v.npy")};
  const int T = starts.back();
  std::vector<std::uint16_t> k(std::size_t(T) * CliCache::Hk * D), v(k.size());
  uqref::GatherInputs in{s.cache.data(), CliCache::NB, CliCache::BS, CliCache::Hk, CliCache::SB, s.tables.data(), CliCache::MB,
                         starts.data(), CliCache::B, T};
  const uqref::GatherCounts c = uqref::uq_gather_kv(in, k.data(), v.data());
  ASSERT_EQ(c.bad_block_ids + c.long_seq_lens + c.bad_start_locs, 0u);
  CliResult r = run(with_options(common, {"--kv-start-loc", dir.file("ksl.npy"), "--out-dtype", "bf16"}));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("(332, 2, 256) uint16 (bf16 bits)"), std::string::npos) << r.out;
  EXPECT_EQ(load_as<std::uint16_t>(dir.file("k.npy"), 'u', 2), k);
  EXPECT_EQ(load_as<std::uint16_t>(dir.file("v.npy"), 'u', 2), v);

  // --seq-lens: each sequence's whole length, one after the other (float32: the same values).
  const std::vector<std::int32_t> whole = {0, 40, 42, 342};
  std::vector<std::uint16_t> k2(std::size_t(342) * CliCache::Hk * D), v2(k2.size());
  in.kv_start_loc = whole.data();
  in.num_tokens = 342;
  uqref::uq_gather_kv(in, k2.data(), v2.data());
  r = run(with_options(common, {"--seq-lens", dir.file("sl.npy")}));
  ASSERT_EQ(r.status, 0) << r.err;
  const std::vector<float> kf = load_as<float>(dir.file("k.npy"), 'f', 4);
  ASSERT_EQ(kf.size(), k2.size());
  for (std::size_t i = 0; i < kf.size(); ++i) ASSERT_EQ(uqref::bf16_round(kf[i]), k2[i]) << i;
  EXPECT_EQ(uqref::bf16_round(load_as<float>(dir.file("v.npy"), 'f', 4)[7]), v2[7]);

  // One of --kv-start-loc and --seq-lens; a bad kv_start_loc is an error, or counted with --no-check.
  r = run(common);
  expect_one_line_error(r, "gather-kv", 2);
  save_i32(dir.file("ksl.npy"), {4}, {0, 30, 20, 332});
  const std::vector<std::string> bad_starts = with_options(common, {"--kv-start-loc", dir.file("ksl.npy")});
  r = run(bad_starts);
  expect_one_line_error(r, "gather-kv", 2);
  EXPECT_NE(r.err.find("non-decreasing"), std::string::npos) << r.err;
  r = run(with_options(bad_starts, {"--no-check"}));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("bad_start_locs=1"), std::string::npos) << r.err;
}

}  // namespace
