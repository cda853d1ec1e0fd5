// The uq program's NVFP4 index commands write-index, score and select, driven through
// real .npy files in a temporary folder and checked against the float64 reference
// (reference/, independent of src/): write-index bit-exact against
// uqref::nv_write_index_keys, score against uqref::nv_score (sentinels, -inf and the NaN
// of unwritten entries bit-exact, finite values within the spec's 1e-4 + 1e-4 |ref|; the
// derivation is at ScoreComparison in test_index_common.hpp), select exactly against
// uqref::nv_select. Then every kind of bad input: one line naming the file, exit 2, no
// output written and an existing cache unchanged. Last, the three commands in a row
// through the built program, as a Python user runs them.
#include "cli/cli_test_support.hpp"
#include "cli/program_runner.hpp"

#include "test_index_common.hpp"
#include "uqref.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

using namespace cli_test;
namespace npy = uq::cli::npy;
namespace ix = uqtest::index;

namespace {

constexpr int kD = 128;
constexpr int kPage = 9216;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

std::vector<std::uint8_t> random_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::uint8_t> b(n);
  for (auto& x : b) x = static_cast<std::uint8_t>(rng());
  return b;
}

std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// ------------------------------------------------------------------ write-index
// Realistic keys (outlier channels) with adversarial tokens: an all-zero token, a group
// whose values sit exactly on every E2M1 rounding midpoint (absmax 6 gives scale 1), a
// token so large its scales saturate at 448, one so small its scales round to 0, and a
// group of -0.0 and subnormal-scale values.
std::vector<float> adversarial_keys(std::int64_t T, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> k = ix::random_keys(rng, T);
  std::fill(k.begin(), k.begin() + kD, 0.0f);
  const float ties[16] = {6.0f, 0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f,
                          -0.25f, -0.75f, -1.25f, -1.75f, -2.5f, -3.5f, -5.0f, 0.0f};
  for (int g = 0; g < 8; ++g)
    for (int i = 0; i < 16; ++i) k[1 * kD + g * 16 + i] = ties[i] * (g % 2 ? 1.0f : 0.5f);
  for (int d = 0; d < kD; ++d) k[2 * kD + d] *= 1e6f;
  for (int d = 0; d < kD; ++d) k[3 * kD + d] *= 1e-9f;
  for (int d = 0; d < 16; ++d) k[4 * kD + d] = (d % 3 == 0) ? -0.0f : 1e-3f * static_cast<float>(d - 8);
  return k;
}

struct WriteIndexCase {
  static constexpr int T = 257, NB = 3;
  std::vector<float> keys = adversarial_keys(T, 31);
  std::vector<std::int32_t> slots;

  WriteIndexCase() {
    std::vector<std::int32_t> all(NB * 128);
    std::iota(all.begin(), all.end(), 0);
    std::shuffle(all.begin(), all.end(), std::mt19937_64(32));
    slots.assign(all.begin(), all.begin() + T);
    for (int t = 5; t < T; t += 17) slots[t] = -1;  // skipped tokens
  }
  std::vector<std::int64_t> slots64() const { return std::vector<std::int64_t>(slots.begin(), slots.end()); }
  std::vector<std::string> args(const TempDir& dir) const {
    return {"write-index", "--k",     dir.file("k.npy"),
            "--slots",     dir.file("slots.npy"),
            "--cache",     dir.file("icache.npy")};
  }
};

void expect_reference_counts_clean(const uqref::WriteCounts& c) {
  ASSERT_EQ(c.bad_slots, 0u);
  ASSERT_EQ(c.nonfinite_rows, 0u);
}

TEST(CliWriteIndex, CreatesTheCacheBitExactWithTheReferenceFromFloatKeys) {
  TempDir dir;
  const WriteIndexCase c;
  save_f32(dir.file("k.npy"), {WriteIndexCase::T, kD}, c.keys);  // float32: quantised as given, no bf16 rounding
  save_i32(dir.file("slots.npy"), {WriteIndexCase::T}, c.slots);
  const CliResult r = run(with_options(c.args(dir), {"--num-blocks", "3"}));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("created"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(3, 9216) uint8: 242 of 257 tokens written"), std::string::npos) << r.out;

  std::vector<std::uint8_t> want(std::size_t(c.NB) * kPage, 0);
  expect_reference_counts_clean(uqref::nv_write_index_keys(c.keys.data(), c.slots64().data(), c.T, want.data(), c.NB));
  const npy::Array got = npy::read(dir.file("icache.npy"));
  ASSERT_EQ(got.shape, (std::vector<std::int64_t>{3, kPage}));
  ASSERT_TRUE(got.dtype.is('u', 1));
  EXPECT_TRUE(std::vector<std::uint8_t>(got.data.begin(), got.data.end()) == want) << "cache differs from uqref";
  EXPECT_GT(std::count_if(want.begin(), want.end(), [](std::uint8_t b) { return b != 0; }), 15000);

  // The float path really skips the bf16 rounding: keys rounded to bf16 first give
  // another cache (so the comparison above could fail).
  std::vector<float> rounded(c.keys.size());
  for (std::size_t i = 0; i < rounded.size(); ++i) rounded[i] = uqref::bf16_value(uqref::bf16_round(c.keys[i]));
  std::vector<std::uint8_t> via_bf16(want.size(), 0);
  uqref::nv_write_index_keys(rounded.data(), c.slots64().data(), c.T, via_bf16.data(), c.NB);
  EXPECT_FALSE(via_bf16 == want);
}

TEST(CliWriteIndex, UpdatesAnExistingCacheInPlaceFromBf16Bits) {
  TempDir dir;
  const WriteIndexCase c;
  std::vector<std::uint16_t> bits(c.keys.size());
  std::vector<float> values(c.keys.size());
  for (std::size_t i = 0; i < bits.size(); ++i) {
    bits[i] = uqref::bf16_round(c.keys[i]);
    values[i] = uqref::bf16_value(bits[i]);
  }
  save_u16(dir.file("k.npy"), {WriteIndexCase::T, kD}, bits);  // uint16: raw bf16 bits
  save_i64(dir.file("slots.npy"), {WriteIndexCase::T}, c.slots64());
  // An existing cache of other bytes: the skipped and unused slots must keep them.
  std::vector<std::uint8_t> cache = random_bytes(std::size_t(c.NB) * kPage, 33);
  save_u8(dir.file("icache.npy"), {WriteIndexCase::NB, kPage}, cache);
  const CliResult r = run(with_options(c.args(dir), {"--num-blocks=3"}));  // agrees with the file: accepted
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("updated"), std::string::npos) << r.out;
  const std::vector<std::uint8_t> before = cache;
  expect_reference_counts_clean(uqref::nv_write_index_keys(values.data(), c.slots64().data(), c.T, cache.data(), c.NB));
  const std::vector<std::uint8_t> got = load_as<std::uint8_t>(dir.file("icache.npy"), 'u', 1);
  EXPECT_TRUE(got == cache) << "in-place update differs from uqref";
  // 242 of the 384 slots written: the other 142 (72 bytes each) keep their bytes.
  std::size_t kept = 0;
  for (std::size_t i = 0; i < got.size(); ++i) kept += got[i] == before[i];
  EXPECT_GE(kept, std::size_t(142 * 72));
  EXPECT_EQ(dir.list().size(), 3u) << "no temporary file left behind";
}

TEST(CliWriteIndex, BadDataFailsAndLeavesTheCacheUnchanged) {
  TempDir dir;
  WriteIndexCase c;
  save_u8(dir.file("icache.npy"), {WriteIndexCase::NB, kPage}, random_bytes(std::size_t(c.NB) * kPage, 34));
  const std::string before = read_bytes(dir.file("icache.npy"));
  save_f32(dir.file("k.npy"), {WriteIndexCase::T, kD}, c.keys);
  c.slots[100] = c.NB * 128;  // one past the last slot
  save_i32(dir.file("slots.npy"), {WriteIndexCase::T}, c.slots);
  CliResult r = run(c.args(dir));
  expect_one_line_error(r, "write-index", 2);
  EXPECT_NE(r.err.find("bad_slots=1"), std::string::npos) << r.err;
  EXPECT_EQ(read_bytes(dir.file("icache.npy")), before);

  const WriteIndexCase good;
  save_i32(dir.file("slots.npy"), {WriteIndexCase::T}, good.slots);
  std::vector<float> keys = good.keys;
  keys[7 * kD + 99] = NAN;
  save_f32(dir.file("k.npy"), {WriteIndexCase::T, kD}, keys);
  r = run(c.args(dir));
  expect_one_line_error(r, "write-index", 2);
  EXPECT_NE(r.err.find("nonfinite_inputs=1"), std::string::npos) << r.err;
  EXPECT_EQ(read_bytes(dir.file("icache.npy")), before);
  EXPECT_EQ(dir.list().size(), 3u) << "no temporary file left behind";
}

TEST(CliWriteIndex, RejectsMalformedInputsNamingTheFile) {
  TempDir dir;
  const WriteIndexCase c;
  const std::string k = dir.file("k.npy"), slots = dir.file("slots.npy"), cache = dir.file("icache.npy");
  auto save_valid = [&] {
    save_f32(k, {WriteIndexCase::T, kD}, c.keys);
    save_i32(slots, {WriteIndexCase::T}, c.slots);
  };
  auto expect_error = [&](const std::string& words, std::vector<std::string> args = {}, int status = 2) {
    if (args.empty()) {
      args = c.args(dir);
      args.push_back("--num-blocks");
      args.push_back("3");
    }
    const CliResult r = run(args);
    expect_one_line_error(r, "write-index", status);
    EXPECT_NE(r.err.find(words), std::string::npos) << r.err;
    EXPECT_FALSE(exists(cache));
    save_valid();
  };
  save_valid();
  // No cache file and no size to create one.
  expect_error("'" + cache + "' does not exist: give --num-blocks to create it", c.args(dir));
  std::vector<double> k64(std::size_t(c.T) * kD, 0.5);
  npy::DType f8;
  f8.kind = 'f';
  f8.size = 8;
  f8.descr = "<f8";
  npy::write(k, f8, {WriteIndexCase::T, kD}, k64.data());
  expect_error(k + ": expected float32 (used as is) or uint16 (bf16 bits), found float64");
  save_f32(k, {WriteIndexCase::T, 1, kD}, c.keys);
  expect_error(k + ": expected a 2-d array [T, 128], found a 3-d array (257, 1, 128) float32");
  save_f32(k, {c.T / 2 + 1, 2 * kD}, std::vector<float>(std::size_t(c.T / 2 + 1) * 2 * kD, 1.0f));
  expect_error(k + ": expected shape [T, 128], found (129, 256) float32");
  save_i32(slots, {c.T - 1}, std::vector<std::int32_t>(c.T - 1, 0));
  expect_error(slots + ": expected shape [T] with T = 257 (from " + k + "), found (256,) int32");
  save_f32(slots, {WriteIndexCase::T}, std::vector<float>(c.T, 0.0f));
  expect_error(slots + ": expected int32 or int64, found float32");

  // An existing cache of the wrong width, dtype or size, or cut short: rejected and
  // left as it was.
  auto expect_cache_error = [&](const std::string& words, std::vector<std::string> args) {
    const std::string before = read_bytes(cache);
    const CliResult r = run(args);
    expect_one_line_error(r, "write-index", 2);
    EXPECT_NE(r.err.find(words), std::string::npos) << r.err;
    EXPECT_EQ(read_bytes(cache), before);
  };
  save_u8(cache, {2, 9215}, std::vector<std::uint8_t>(2 * 9215, 1));
  expect_cache_error(cache + ": expected shape [num_blocks, 9216], found (2, 9215) uint8", c.args(dir));
  save_u8(cache, {2, 72, 128}, std::vector<std::uint8_t>(2 * kPage, 1));
  expect_cache_error(cache + ": expected a 2-d array [num_blocks, 9216], found a 3-d array (2, 72, 128) uint8",
                     c.args(dir));
  save_i32(cache, {2, kPage}, std::vector<std::int32_t>(2 * kPage, 1));
  expect_cache_error(cache + ": expected uint8, found int32", c.args(dir));
  save_u8(cache, {3, kPage}, std::vector<std::uint8_t>(3 * kPage, 1));
  expect_cache_error(cache + ": expected extent 0 = 4 (from --num-blocks), found shape (3, 9216)",
                     with_options(c.args(dir), {"--num-blocks", "4"}));
  const std::string full = read_bytes(cache);
  write_bytes(cache, full.substr(0, full.size() - 100));
  expect_cache_error(cache + ": expected 27648 data bytes for shape (3, 9216) uint8, found 27548 (truncated file)",
                     c.args(dir));
  // The same command on a valid cache succeeds: the failures above were the files'.
  save_u8(cache, {3, kPage}, std::vector<std::uint8_t>(3 * kPage, 1));
  const CliResult ok = run(c.args(dir));
  EXPECT_EQ(ok.status, 0) << ok.err;
}

// ------------------------------------------------------------------ score

// A ragged batch with a zero-length request, lengths around the block edges, a request
// shorter than QL and shuffled block tables, over a cache written by the reference.
ix::ScoreCase make_score_case(std::uint64_t seed, int heads, int query_len, int init, int local) {
  std::mt19937_64 rng(seed);
  constexpr std::int64_t NB = 15;
  std::vector<std::uint8_t> cache = ix::random_cache(rng, NB, false);
  // max_blocks 9 (one more than the longest request needs), as many score columns
  return ix::ragged_case(rng, std::move(cache), {129, 0, 1000, 1, 128, 300, 127, 257, 513}, query_len, heads, init,
                         local, 9, 9);
}

// The reference scores with NaN where nv_score writes nothing, as uq score's file has.
std::vector<float> reference_scores_nan_filled(const ix::ScoreCase& c) {
  std::vector<float> ref = ix::reference_scores(c);
  for (float& v : ref)
    if (bits_of(v) == ix::kPoisonBits) v = kNaN;
  return ref;
}

void save_score_inputs(const TempDir& dir, const ix::ScoreCase& c) {
  save_u8(dir.file("q.npy"), {c.rows(), c.heads, kD}, c.q);  // uint8: E4M3 bits
  save_u8(dir.file("icache.npy"), {c.num_blocks(), kPage}, c.cache);
  save_i64(dir.file("bt.npy"), {c.num_reqs, c.max_blocks},
           std::vector<std::int64_t>(c.tables.begin(), c.tables.end()));  // int64: converted to int32
  save_i32(dir.file("sl.npy"), {c.num_reqs}, c.seq_lens);
}

std::vector<std::string> score_args(const TempDir& dir, const ix::ScoreCase& c, const std::string& out = "scores.npy") {
  return {"score",
          "--q", dir.file("q.npy"),
          "--cache", dir.file("icache.npy"),
          "--block-tables", dir.file("bt.npy"),
          "--seq-lens", dir.file("sl.npy"),
          "--query-len", std::to_string(c.query_len),
          "--init-blocks", std::to_string(c.init_blocks),
          "--local-blocks", std::to_string(c.local_blocks),
          "--out", dir.file(out)};
}

struct ScoreCheck {
  ix::ScoreComparison cmp;
  std::int64_t nan = 0, minus_inf = 0, init = 0, local = 0;
};

// Loads the scores file, checks its shape and every entry against the reference.
ScoreCheck check_scores_file(const std::string& file, const ix::ScoreCase& c, const std::string& what) {
  ScoreCheck r;
  const npy::Array a = npy::read(file);
  EXPECT_TRUE(a.dtype.is('f', 4)) << a.dtype.name();
  EXPECT_EQ(a.shape, (std::vector<std::int64_t>{c.heads, c.rows(), c.max_blocks}));
  const std::vector<float> got = load_as<float>(file, 'f', 4);
  const std::vector<float> ref = reference_scores_nan_filled(c);
  if (got.size() != ref.size()) {
    ADD_FAILURE() << what << ": " << got.size() << " scores, expected " << ref.size();
    return r;
  }
  r.cmp = ix::compare_scores(c, ref, got, ix::page_key_maxima(c.cache), what);
  EXPECT_EQ(r.cmp.failures, 0) << what;
  // The spec's tolerance holds on its own here (keys and queries are well conditioned):
  // the derived fp32 bound that compare_scores also allows is not needed.
  EXPECT_LE(r.cmp.worst_spec_ratio, 1.0) << what;
  for (float v : ref) {
    r.nan += std::isnan(v);
    r.minus_inf += v == -std::numeric_limits<float>::infinity();
    r.init += v == 1e30f;
    r.local += v == 1e29f;
  }
  return r;
}

TEST(CliScore, MatchesTheReferenceWithSentinelsAndNaNForUnwrittenBlocks) {
  TempDir dir;
  const ix::ScoreCase c = make_score_case(41, 4, 2, 1, 1);
  save_score_inputs(dir, c);
  save_f32(dir.file("scores.npy"), {1}, {12345.0f});  // poison: must be replaced
  const CliResult r = run(score_args(dir, c));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("uq score: wrote " + dir.file("scores.npy") + " (4, 18, 9) float32; path "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("status ok"), std::string::npos) << r.out;
  const ScoreCheck s = check_scores_file(dir.file("scores.npy"), c, "H=4 QL=2 init=1 local=1");
  // Every kind of entry was exercised.
  EXPECT_GT(s.cmp.close, 60);
  EXPECT_GT(s.nan, 50);
  EXPECT_GT(s.minus_inf, 0);
  EXPECT_GT(s.init, 20);
  EXPECT_GT(s.local, 20);
}

TEST(CliScore, RoundsFloatQueriesToE4m3AndTakesOtherShapesAndOptions) {
  TempDir dir;
  // {H, QL, init, local}
  for (const auto& shape :
       {std::vector<int>{1, 1, 0, 0}, std::vector<int>{2, 16, 2, 0}, std::vector<int>{1, 32, 0, 2}}) {
    ix::ScoreCase c = make_score_case(50 + shape[1], shape[0], shape[1], shape[2], shape[3]);
    save_score_inputs(dir, c);
    // float32 queries with values on E4M3 ties, beyond 448 (saturating) and tiny.
    std::mt19937_64 rng(60);
    std::normal_distribution<float> n(0.0f, 3.0f);
    std::vector<float> qf(c.q.size());
    for (std::size_t i = 0; i < qf.size(); ++i) qf[i] = n(rng);
    qf[0] = 1.0625f;   // midway between E4M3 1.0 and 1.125: ties to even (1.0)
    qf[1] = 1000.0f;   // saturates to 448
    qf[2] = -1e-5f;    // underflows to -0
    qf[3] = 17.0f;     // midway between 16 and 18: ties to even (16)
    for (std::size_t i = 0; i < qf.size(); ++i) c.q[i] = uqref::e4m3_round(qf[i]);
    save_f32(dir.file("q.npy"), {c.rows(), c.heads, kD}, qf);
    const CliResult r = run(with_options(score_args(dir, c), {"--backend", "generic"}));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("path generic"), std::string::npos) << r.out;
    check_scores_file(dir.file("scores.npy"), c,
                      "H=" + std::to_string(c.heads) + " QL=" + std::to_string(c.query_len) + " float32 q");
  }
  // A serial build has no native scorer: asking for one is an error, not a fallback.
  const ix::ScoreCase c = make_score_case(70, 1, 1, 0, 0);
  save_score_inputs(dir, c);
  const CliResult r = run(with_options(score_args(dir, c, "native.npy"), {"--backend=native"}));
  if (expect_native_ran_or_refused(r, "score", dir.file("native.npy")))
    check_scores_file(dir.file("native.npy"), c, "native");
}

TEST(CliScore, BadBlockIdsAndSeqLensFailOrAreMaskedWithNoCheck) {
  TempDir dir;
  ix::ScoreCase c = make_score_case(80, 2, 4, 0, 1);
  c.tables[2 * c.max_blocks + 2] = static_cast<std::int32_t>(c.num_blocks());  // a visible block of request 2
  save_score_inputs(dir, c);
  CliResult r = run_rejected_then_unchecked("score", score_args(dir, c), "bad_block_ids=", dir.file("scores.npy"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("uq score: warning: the device masked bad data (bad_block_ids="), std::string::npos) << r.err;
  check_scores_file(dir.file("scores.npy"), c, "bad block id, --no-check");

  ix::ScoreCase neg = make_score_case(81, 1, 2, 1, 0);
  neg.seq_lens[5] = -9;
  save_score_inputs(dir, neg);
  r = run_rejected_then_unchecked("score", score_args(dir, neg, "neg.npy"), "negative_seq_lens=1", dir.file("neg.npy"));
  ASSERT_EQ(r.status, 0) << r.err;
  check_scores_file(dir.file("neg.npy"), neg, "negative length, --no-check");
}

TEST(CliScore, RejectsMalformedInputsNamingTheFile) {
  TempDir dir;
  const ix::ScoreCase c = make_score_case(90, 2, 2, 1, 1);
  const std::string q = dir.file("q.npy"), cache = dir.file("icache.npy"), bt = dir.file("bt.npy"),
                    sl = dir.file("sl.npy");
  auto expect_error = [&](const std::string& words, std::vector<std::string> args = {}, int status = 2) {
    if (args.empty()) args = score_args(dir, c);
    const CliResult r = run(args);
    expect_one_line_error(r, "score", status);
    EXPECT_NE(r.err.find(words), std::string::npos) << r.err;
    EXPECT_FALSE(exists(dir.file("scores.npy")));
    save_score_inputs(dir, c);  // restore the valid inputs
  };
  save_score_inputs(dir, c);
  const std::int64_t rows = c.rows();  // 9 requests x QL 2 = 18
  save_u16(q, {rows, 2, kD}, std::vector<std::uint16_t>(std::size_t(rows) * 2 * kD, 0x3f80));
  expect_error(q + ": expected uint8 (E4M3 bits) or float32 (rounded to E4M3), found uint16");
  save_u8(q, {rows, 2 * kD}, std::vector<std::uint8_t>(std::size_t(rows) * 2 * kD, 0x38));
  expect_error(q + ": expected a 3-d array [rows, H, 128], found a 2-d array (18, 256) uint8");
  save_u8(q, {rows, 2, 64}, std::vector<std::uint8_t>(std::size_t(rows) * 2 * 64, 0x38));
  expect_error(q + ": expected shape [rows, H, 128], found (18, 2, 64) uint8");
  save_u8(q, {rows, 3, kD}, std::vector<std::uint8_t>(std::size_t(rows) * 3 * kD, 0x38));
  expect_error(q + ": expected shape [R*QL, H, 128] with H (index heads) in {1, 2, 4}, found shape (18, 3, 128)");
  // H = 4 and QL = 16: 64 columns per request.
  save_u8(q, {9 * 16, 4, kD}, std::vector<std::uint8_t>(std::size_t(9) * 16 * 4 * kD, 0x38));
  std::vector<std::string> args = score_args(dir, c);
  args[10] = "16";
  ASSERT_EQ(args[9], "--query-len");
  expect_error(q + ": expected H x QL <= 32 with QL = 16 (from --query-len), found shape (144, 4, 128): 4 x 16 = 64",
               args);
  args[10] = "3";
  expect_error(q + ": expected shape [R*QL, H, 128] with R*QL = 9 x 3 = 27 (R from " + sl +
                   ", QL from --query-len), found shape (18, 2, 128)",
               args);
  args[10] = "0";
  expect_error("option --query-len: expected an integer in [1, ", args);
  save_u8(cache, {c.num_blocks(), 9215}, std::vector<std::uint8_t>(std::size_t(c.num_blocks()) * 9215, 0));
  expect_error(cache + ": expected shape [num_blocks, 9216], found (15, 9215) uint8");
  const std::string full = read_bytes(cache);
  write_bytes(cache, full.substr(0, full.size() - 9216));
  expect_error(cache + ": expected 138240 data bytes for shape (15, 9216) uint8, found 129024 (truncated file)");
  save_i32(bt, {7, c.max_blocks}, std::vector<std::int32_t>(7 * c.max_blocks, 0));
  expect_error(sl + ": expected shape [R] with R = 7 (from " + bt + "), found (9,) int32");
  save_i32(bt, {c.num_reqs}, std::vector<std::int32_t>(c.num_reqs, 0));
  expect_error(bt + ": expected a 2-d array [R, max_blocks], found a 1-d array (9,) int32");
  save_i64(sl, {c.num_reqs}, {1, 2, 3, std::int64_t(1) << 33, 5, 6, 7, 8, 9});
  expect_error(sl + ": expected values in the int32 range, found 8589934592 at flat index 3");
  save_f32(sl, {c.num_reqs}, std::vector<float>(c.num_reqs, 1.0f));
  expect_error(sl + ": expected int32 or int64, found float32");
  std::remove(bt.c_str());
  expect_error(bt + ": cannot open: No such file or directory", {}, 1);
  args = score_args(dir, c);
  args.resize(args.size() - 2);  // no --out
  expect_error("missing required option --out SCORES.npy", args);
}

// ------------------------------------------------------------------ select
// Scores full of ties (few distinct values, -0 next to +0), NaN, -inf and sentinels,
// with NaN past each request's blocks as uq score leaves them.
struct SelectCase {
  static constexpr int H = 2, R = 6, QL = 3, S = 9;
  std::vector<std::int32_t> lens = {0, 1, 130, 300, 1000, 129};
  std::vector<float> scores = std::vector<float>(std::size_t(H) * R * QL * S);

  SelectCase() {
    const float values[] = {-2.0f, -1.0f, -0.0f, 0.0f, 1.0f, 2.0f, 3.5f, 1e29f, 1e30f,
                            -std::numeric_limits<float>::infinity(), kNaN};
    std::mt19937_64 rng(101);
    std::uniform_int_distribution<int> pick(0, 10);
    std::normal_distribution<float> n(0.0f, 5.0f);
    for (int h = 0; h < H; ++h)
      for (int row = 0; row < R * QL; ++row) {
        const int nb_req = (lens[row / QL] + 127) / 128;
        for (int b = 0; b < S; ++b) {
          float& v = scores[(std::size_t(h) * R * QL + row) * S + b];
          v = b >= nb_req ? kNaN : (row % 4 == 1 ? n(rng) : values[pick(rng)]);
        }
      }
  }
  void save(const TempDir& dir) const {
    save_f32(dir.file("scores.npy"), {H, R * QL, S}, scores);
    save_i32(dir.file("sl.npy"), {R}, lens);
  }
  std::vector<std::int32_t> reference(int k) const {
    std::vector<std::int32_t> out(std::size_t(H) * R * QL * k, 12345);
    uqref::nv_select(scores.data(), S, lens.data(), R, QL, H, k, out.data());
    return out;
  }
  std::vector<std::string> args(const TempDir& dir, const std::string& out = "idx.npy") const {
    return {"select", "--scores", dir.file("scores.npy"), "--seq-lens", dir.file("sl.npy"), "--query-len", "3",
            "--out", dir.file(out)};
  }
};

TEST(CliSelect, MatchesTheReferenceExactlyWithTiesNaNAndPadding) {
  TempDir dir;
  const SelectCase c;
  c.save(dir);
  for (int k : {1, 4, 8, 9, 16, 17}) {
    std::vector<std::string> args = c.args(dir);
    if (k != 16) {  // 16 is the default
      args.push_back("--k");
      args.push_back(std::to_string(k));
    }
    save_i32(dir.file("idx.npy"), {1}, {777});  // poison: must be replaced
    const CliResult r = run(args);
    ASSERT_EQ(r.status, 0) << r.err;
    const npy::Array a = npy::read(dir.file("idx.npy"));
    EXPECT_TRUE(a.dtype.is('i', 4));
    EXPECT_EQ(a.shape, (std::vector<std::int64_t>{SelectCase::H, SelectCase::R * SelectCase::QL, k}));
    const std::vector<std::int32_t> got = load_as<std::int32_t>(dir.file("idx.npy"), 'i', 4);
    const std::vector<std::int32_t> want = c.reference(k);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i)
      ASSERT_EQ(got[i], want[i]) << "k=" << k << " entry " << i << " (head " << i / (k * 18) << ", row "
                                 << i / k % 18 << ", rank " << i % k << ")";
    // Padding (-1) and real picks both occur, and rows with fewer than k visible blocks
    // exist for every k > 1.
    EXPECT_GT(std::count(want.begin(), want.end(), -1), 0);
    EXPECT_GT(std::count_if(want.begin(), want.end(), [](std::int32_t v) { return v > 0; }), 0);
  }
}

TEST(CliSelect, BadLengthsFailOrAreClampedWithNoCheckAndMalformedInputsAreRejected) {
  TempDir dir;
  SelectCase c;
  c.lens[2] = -4;
  c.save(dir);
  CliResult r = run_rejected_then_unchecked("select", c.args(dir), "negative_seq_lens=1", dir.file("idx.npy"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("uq select: warning: bad lengths were masked (negative_seq_lens=1)"), std::string::npos)
      << r.err;
  EXPECT_TRUE(load_as<std::int32_t>(dir.file("idx.npy"), 'i', 4) == c.reference(16));

  const SelectCase good;
  const std::string scores = dir.file("scores.npy"), sl = dir.file("sl.npy");
  auto expect_error = [&](const std::string& words, std::vector<std::string> a = {}) {
    if (a.empty()) a = good.args(dir, "bad.npy");
    const CliResult e = run(a);
    expect_one_line_error(e, "select", 2);
    EXPECT_NE(e.err.find(words), std::string::npos) << e.err;
    EXPECT_FALSE(exists(dir.file("bad.npy")));
    good.save(dir);
  };
  good.save(dir);
  save_u8(scores, {2, 18, 9}, std::vector<std::uint8_t>(2 * 18 * 9, 1));
  expect_error(scores + ": expected float32, found uint8");
  save_f32(scores, {36, 9}, std::vector<float>(36 * 9, 1.0f));
  expect_error(scores + ": expected a 3-d array [H, rows, S], found a 2-d array (36, 9) float32");
  save_f32(scores, {2, 17, 9}, std::vector<float>(2 * 17 * 9, 1.0f));
  expect_error(scores + ": expected shape [H, R*QL, S] with R*QL = 6 x 3 = 18 (R from " + sl +
               ", QL from --query-len), found shape (2, 17, 9)");
  std::vector<std::string> a = good.args(dir, "bad.npy");
  a[6] = "2";
  ASSERT_EQ(a[5], "--query-len");
  expect_error("R*QL = 6 x 2 = 12", a);
  a = good.args(dir, "bad.npy");
  a.push_back("--k");
  a.push_back("0");
  expect_error("option --k: expected an integer in [1, ", a);
  save_u16(sl, {6}, std::vector<std::uint16_t>(6, 1));
  expect_error(sl + ": expected int32 or int64, found uint16");
  const std::string full = read_bytes(scores);
  write_bytes(scores, full.substr(0, full.size() - 3));
  expect_error(scores + ": expected 1296 data bytes for shape (2, 18, 9) float32, found 1293 (truncated file)");
  // A length beyond the S blocks of the scores.
  SelectCase long_len;
  long_len.lens[4] = 9 * 128 + 1;
  long_len.save(dir);
  r = run(long_len.args(dir, "bad.npy"));
  expect_one_line_error(r, "select", 2);
  EXPECT_NE(r.err.find("long_seq_lens=1"), std::string::npos) << r.err;
  EXPECT_FALSE(exists(dir.file("bad.npy")));
}

// ------------------------------------------------------------------ the built program
// The built program, started without a shell, as Python's subprocess starts it.
ChildResult run_program(const TempDir& dir, const std::vector<std::string>& args) {
  return wait_uq(dir, spawn_uq(dir, args));
}

// write-index -> score -> select through the program, as a Python user runs them: keys
// of 3 requests (T = 300 + 17 + 257 tokens) written to scattered pages, their last QL
// tokens' queries scored, the top blocks selected; each step against the reference.
TEST(CliIndexProgram, WriteIndexScoreSelectThroughFiles) {
  TempDir dir;
  constexpr int NB = 9, H = 2, QL = 4, MB = 3;
  const std::vector<std::int32_t> lens = {300, 17, 257};
  const std::vector<std::int32_t> tables = {4, 0, 7, 2, -1, -1, 8, 1, 5};
  std::int64_t T = 0;
  for (std::int32_t l : lens) T += l;
  std::mt19937_64 rng(111);
  const std::vector<float> keys = ix::random_keys(rng, T);
  std::vector<std::int64_t> slots;
  for (std::size_t i = 0; i < lens.size(); ++i)
    for (std::int32_t t = 0; t < lens[i]; ++t) slots.push_back(std::int64_t(tables[i * MB + t / 128]) * 128 + t % 128);
  save_f32(dir.file("k.npy"), {T, kD}, keys);
  save_i64(dir.file("slots.npy"), {T}, slots);
  ChildResult r = run_program(dir, {"write-index", "--k", dir.file("k.npy"), "--slots", dir.file("slots.npy"),
                                      "--cache", dir.file("icache.npy"), "--num-blocks", std::to_string(NB)});
  ASSERT_TRUE(r.exited);
  ASSERT_EQ(r.status, 0) << r.err;
  ix::ScoreCase c;
  c.cache.assign(std::size_t(NB) * kPage, 0);
  expect_reference_counts_clean(uqref::nv_write_index_keys(keys.data(), slots.data(), T, c.cache.data(), NB));
  EXPECT_TRUE(load_as<std::uint8_t>(dir.file("icache.npy"), 'u', 1) == c.cache);

  c.num_reqs = 3;
  c.query_len = QL;
  c.heads = H;
  c.init_blocks = 1;
  c.local_blocks = 1;
  c.max_blocks = MB;
  c.S = MB;
  c.tables = tables;
  c.seq_lens = lens;
  std::normal_distribution<float> n(0.0f, 2.0f);
  std::vector<float> qf(std::size_t(c.rows()) * H * kD);
  c.q.resize(qf.size());
  for (std::size_t i = 0; i < qf.size(); ++i) {
    qf[i] = n(rng);
    c.q[i] = uqref::e4m3_round(qf[i]);
  }
  save_f32(dir.file("q.npy"), {c.rows(), H, kD}, qf);
  save_i32(dir.file("bt.npy"), {3, MB}, tables);
  save_i32(dir.file("sl.npy"), {3}, lens);
  r = run_program(dir, {"score", "--q", dir.file("q.npy"), "--cache", dir.file("icache.npy"), "--block-tables",
                        dir.file("bt.npy"), "--seq-lens", dir.file("sl.npy"), "--query-len", "4", "--init-blocks",
                        "1", "--local-blocks", "1", "--out", dir.file("scores.npy")});
  ASSERT_TRUE(r.exited);
  ASSERT_EQ(r.status, 0) << r.err;
  const ScoreCheck s = check_scores_file(dir.file("scores.npy"), c, "program");
  EXPECT_GT(s.cmp.close, 0);
  EXPECT_GT(s.nan, 0);

  r = run_program(dir, {"select", "--scores", dir.file("scores.npy"), "--seq-lens", dir.file("sl.npy"),
                        "--query-len", "4", "--k", "2", "--out", dir.file("idx.npy")});
  ASSERT_TRUE(r.exited);
  ASSERT_EQ(r.status, 0) << r.err;
  const std::vector<float> ref_scores = reference_scores_nan_filled(c);
  std::vector<std::int32_t> want(std::size_t(H) * c.rows() * 2);
  uqref::nv_select(ref_scores.data(), MB, lens.data(), 3, QL, H, 2, want.data());
  EXPECT_TRUE(load_as<std::int32_t>(dir.file("idx.npy"), 'i', 4) == want);

  // A truncated query file through the program: one line, exit 2, no crash.
  const std::string q_bytes = read_bytes(dir.file("q.npy"));
  for (std::size_t cut : {std::size_t(0), std::size_t(9), std::size_t(100), q_bytes.size() - 1}) {
    write_bytes(dir.file("q.npy"), q_bytes.substr(0, cut));
    r = run_program(dir, {"score", "--q", dir.file("q.npy"), "--cache", dir.file("icache.npy"), "--block-tables",
                          dir.file("bt.npy"), "--seq-lens", dir.file("sl.npy"), "--query-len", "4", "--init-blocks",
                          "0", "--local-blocks", "0", "--out", dir.file("cut.npy")});
    ASSERT_TRUE(r.exited) << "killed by a signal on a file cut to " << cut << " bytes";
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_NE(r.err.find("uq score: " + dir.file("q.npy") + ": expected "), std::string::npos) << r.err;
    EXPECT_FALSE(exists(dir.file("cut.npy")));
  }
}

}  // namespace
