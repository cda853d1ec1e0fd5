// The uq program's write-kv, rotate-q and decode driven through real .npy files in a
// temporary folder (the CLI's entry point, as `uq <cmd> ...` runs it), checked against
// the float64 reference (reference/, independent of src/): write-kv bit-exact
// against uqref::uq_write_kv, rotate-q bit-exact against uqref::wht256_fp32, decode
// within the error bound derived in src/cli/decode_tolerance.hpp. Then every kind of
// bad input: one line naming the file, exit status 2, no output written.
#include "cli/cli_test_support.hpp"
#include "cli/reference_cache.hpp"

#include "cli/numpy_fixtures.hpp"

#include "cli/decode_tolerance.hpp"
#include "support/lse_tolerance.hpp"
#include "support/reference_inputs.hpp"

#include "uq/partitions.hpp"
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

std::vector<std::uint8_t> random_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::uint8_t> b(n);
  for (auto& x : b) x = static_cast<std::uint8_t>(rng());
  return b;
}

// ------------------------------------------------------------------ write-kv
struct WriteKvCase {
  static constexpr int T = 257, Hk = 2, BS = 32, NB = 9, SB = 276;
  std::vector<float> k = random_values(std::size_t(T) * Hk * D, 1);
  std::vector<std::uint16_t> v = bf16_bits(random_values(std::size_t(T) * Hk * D, 2, 0.5f));
  std::vector<std::int32_t> slots;

  WriteKvCase() {
    std::vector<std::int32_t> all(NB * BS);
    std::iota(all.begin(), all.end(), 0);
    std::shuffle(all.begin(), all.end(), std::mt19937_64(3));
    slots.assign(all.begin(), all.begin() + T);
    for (int t = 0; t < T; t += 13) slots[t] = -1;  // skipped tokens
  }
  void save(const TempDir& dir) const {
    save_f32(dir.file("k.npy"), {T, Hk, D}, k);  // float32: the CLI rounds to bf16
    save_u16(dir.file("v.npy"), {T, Hk, D}, v);  // uint16: raw bf16 bits
    save_i32(dir.file("slots.npy"), {T}, slots);
  }
  // The reference writer on `cache` (updated in place).
  void reference(std::vector<std::uint8_t>& cache) const {
    const std::vector<std::uint16_t> kb = bf16_bits(k);
    const std::vector<std::int64_t> s64(slots.begin(), slots.end());
    const uqref::WriteCounts c = uqref::uq_write_kv(kb.data(), v.data(), s64.data(), T, Hk, cache.data(), NB, BS, SB);
    ASSERT_EQ(c.bad_slots, 0u);
    ASSERT_EQ(c.nonfinite_rows, 0u);
  }
  std::vector<std::string> args(const TempDir& dir) const {
    return {"write-kv", "--k", dir.file("k.npy"), "--v", dir.file("v.npy"), "--slots", dir.file("slots.npy"),
            "--cache", dir.file("cache.npy")};
  }
};

TEST(CliWriteKv, CreatesTheCacheBitExactWithTheReference) {
  TempDir dir;
  const WriteKvCase c;
  c.save(dir);
  const CliResult r = run(with_options(c.args(dir), {"--num-blocks", "9", "--block-size", "32", "--slot-bytes", "276"}));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("created"), std::string::npos);
  EXPECT_NE(r.out.find("(9, 32, 2, 276)"), std::string::npos);
  std::vector<std::uint8_t> want(std::size_t(WriteKvCase::NB) * WriteKvCase::BS * WriteKvCase::Hk * WriteKvCase::SB, 0);
  c.reference(want);
  const npy::Array got = npy::read(dir.file("cache.npy"));
  EXPECT_EQ(got.shape, (std::vector<std::int64_t>{9, 32, 2, 276}));
  ASSERT_TRUE(got.dtype.is('u', 1));
  EXPECT_TRUE(std::vector<std::uint8_t>(got.data.begin(), got.data.end()) == want) << "cache differs from uqref";
  EXPECT_GT(std::count_if(want.begin(), want.end(), [](std::uint8_t b) { return b != 0; }), 50000);
}

TEST(CliWriteKv, UpdatesAnExistingCacheInPlace) {
  TempDir dir;
  const WriteKvCase c;
  c.save(dir);
  // An existing cache full of other bytes: skipped slots and the padding bytes
  // 272..275 of every slot must keep them.
  std::vector<std::uint8_t> cache = random_bytes(std::size_t(WriteKvCase::NB) * WriteKvCase::BS * WriteKvCase::Hk * WriteKvCase::SB, 4);
  save_u8(dir.file("cache.npy"), {WriteKvCase::NB, WriteKvCase::BS, WriteKvCase::Hk, WriteKvCase::SB}, cache);
  const CliResult r = run(with_options(c.args(dir), {"--block-size", "32"}));  // agrees with the file: accepted
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("updated"), std::string::npos);
  c.reference(cache);
  const std::vector<std::uint8_t> got = load_as<std::uint8_t>(dir.file("cache.npy"), 'u', 1);
  EXPECT_TRUE(got == cache) << "in-place update differs from uqref";
  EXPECT_EQ(dir.list().size(), 4u) << "no temporary file left behind";
}

TEST(CliWriteKv, BadDataFailsAndLeavesTheCacheUnchanged) {
  TempDir dir;
  WriteKvCase c;
  const std::vector<std::uint8_t> before = random_bytes(std::size_t(WriteKvCase::NB) * WriteKvCase::BS * WriteKvCase::Hk * WriteKvCase::SB, 5);
  save_u8(dir.file("cache.npy"), {WriteKvCase::NB, WriteKvCase::BS, WriteKvCase::Hk, WriteKvCase::SB}, before);
  const std::string before_bytes = read_bytes(dir.file("cache.npy"));

  c.slots[100] = WriteKvCase::NB * WriteKvCase::BS;  // one past the last slot
  c.save(dir);
  CliResult r = run(c.args(dir));
  expect_one_line_error(r, "write-kv", 2);
  EXPECT_NE(r.err.find("bad_slots=1"), std::string::npos) << r.err;
  EXPECT_EQ(read_bytes(dir.file("cache.npy")), before_bytes);

  WriteKvCase inf_case;
  inf_case.k[5 * D + 17] = INFINITY;
  inf_case.save(dir);
  r = run(inf_case.args(dir));
  expect_one_line_error(r, "write-kv", 2);
  EXPECT_NE(r.err.find("nonfinite_inputs"), std::string::npos) << r.err;
  EXPECT_EQ(read_bytes(dir.file("cache.npy")), before_bytes);
}

TEST(CliWriteKv, RejectsInconsistentInputs) {
  TempDir dir;
  const WriteKvCase c;
  c.save(dir);
  const std::string k = dir.file("k.npy");
  auto expect_error = [&](const std::vector<std::string>& args, const std::string& words) {
    const CliResult r = run(args);
    expect_one_line_error(r, "write-kv", 2);
    EXPECT_NE(r.err.find(words), std::string::npos) << r.err;
    EXPECT_FALSE(exists(dir.file("cache.npy")));
  };
  // No cache file and no size to create one.
  expect_error(c.args(dir), "give --num-blocks and --block-size");
  std::vector<std::string> sized = c.args(dir);
  for (const char* a : {"--num-blocks", "9", "--block-size", "24"}) sized.push_back(a);
  expect_error(sized, "--block-size: expected 16, 32, 64, 128 or 256, found 24");
  sized = c.args(dir);
  for (const char* a : {"--num-blocks", "9", "--block-size", "32", "--slot-bytes", "274"}) sized.push_back(a);
  expect_error(sized, "--slot-bytes: expected a multiple of 4 >= 272");
  sized[sized.size() - 1] = "276";
  // V with fewer tokens than K.
  save_u16(dir.file("v.npy"), {WriteKvCase::T - 1, WriteKvCase::Hk, D}, std::vector<std::uint16_t>(std::size_t(WriteKvCase::T - 1) * WriteKvCase::Hk * D, 0x3f80));
  expect_error(sized, dir.file("v.npy") + ": expected shape [T, Hk, 256] with T = 257 (from " + k + "), found (256, 2, 256) uint16");
  c.save(dir);
  // Slots of the wrong dtype, then of the wrong length.
  save_u16(dir.file("slots.npy"), {WriteKvCase::T}, std::vector<std::uint16_t>(WriteKvCase::T, 1));
  expect_error(sized, dir.file("slots.npy") + ": expected int32 or int64, found uint16");
  save_i64(dir.file("slots.npy"), {WriteKvCase::T + 1}, std::vector<std::int64_t>(WriteKvCase::T + 1, 1));
  expect_error(sized, "with T = 257");
  c.save(dir);
  // K in float64, then with head dim 128.
  std::vector<double> k64(std::size_t(WriteKvCase::T) * WriteKvCase::Hk * D, 0.5);
  npy::DType f8;
  f8.kind = 'f';
  f8.size = 8;
  f8.descr = "<f8";
  npy::write(k, f8, {WriteKvCase::T, WriteKvCase::Hk, D}, k64.data());
  expect_error(sized, k + ": expected float32 (rounded to bf16) or uint16 (bf16 bits), found float64");
  save_f32(k, {WriteKvCase::T, WriteKvCase::Hk, 128}, std::vector<float>(std::size_t(WriteKvCase::T) * WriteKvCase::Hk * 128, 1.0f));
  expect_error(sized, k + ": expected shape [T, Hk, 256], found (257, 2, 128) float32");
  c.save(dir);
  // An existing cache with another number of KV heads, or of another size than asked.
  save_u8(dir.file("cache.npy"), {9, 32, 1, 272}, std::vector<std::uint8_t>(9 * 32 * 272, 0));
  CliResult r = run(c.args(dir));
  expect_one_line_error(r, "write-kv", 2);
  EXPECT_NE(r.err.find("with Hk = 2 (from " + k + ")"), std::string::npos) << r.err;
  save_u8(dir.file("cache.npy"), {9, 32, 2, 272}, std::vector<std::uint8_t>(9 * 32 * 2 * 272, 0));
  std::vector<std::string> mismatch = c.args(dir);
  mismatch.push_back("--num-blocks");
  mismatch.push_back("10");
  r = run(mismatch);
  expect_one_line_error(r, "write-kv", 2);
  EXPECT_NE(r.err.find("extent 0 = 10 (from --num-blocks)"), std::string::npos) << r.err;
  save_u8(dir.file("cache.npy"), {9, 24, 2, 272}, std::vector<std::uint8_t>(9 * 24 * 2 * 272, 0));
  r = run(c.args(dir));
  expect_one_line_error(r, "write-kv", 2);
  EXPECT_NE(r.err.find("block_size in {16, 32, 64, 128, 256}"), std::string::npos) << r.err;
}

// ------------------------------------------------------------------ rotate-q
TEST(CliRotateQ, MatchesTheReferenceWhtBitForBit) {
  TempDir dir;
  const std::vector<float> q = random_values(3 * 5 * D, 7, 2.0f);
  save_f32(dir.file("q.npy"), {3, 5, D}, q);
  save_f32(dir.file("rot.npy"), {1}, {12345.0f});  // poison: must be replaced
  const CliResult r = run({"rotate-q", "--q", dir.file("q.npy"), "--out", dir.file("rot.npy")});
  ASSERT_EQ(r.status, 0) << r.err;
  const npy::Array out = npy::read(dir.file("rot.npy"));
  EXPECT_EQ(out.shape, (std::vector<std::int64_t>{3, 5, D}));
  const std::vector<float> got = load_as<float>(dir.file("rot.npy"), 'f', 4);
  const std::vector<std::uint16_t> qb = bf16_bits(q);
  std::vector<float> row(D), want(D);
  for (int r0 = 0; r0 < 15; ++r0) {
    for (int d = 0; d < D; ++d) row[d] = uqref::bf16_value(qb[r0 * D + d]);
    uqref::wht256_fp32(row.data(), want.data());
    for (int d = 0; d < D; ++d)
      ASSERT_EQ(std::memcmp(&got[r0 * D + d], &want[d], 4), 0) << "row " << r0 << " dim " << d;
  }
}

TEST(CliRotateQ, TakesTwoDimensionalBf16BitsAndRejectsOtherShapes) {
  TempDir dir;
  const std::vector<std::uint16_t> qb = bf16_bits(random_values(7 * D, 8));
  save_u16(dir.file("q.npy"), {7, D}, qb);
  CliResult r = run({"rotate-q", "--q", dir.file("q.npy"), "--out", dir.file("rot.npy")});
  ASSERT_EQ(r.status, 0) << r.err;
  const std::vector<float> got = load_as<float>(dir.file("rot.npy"), 'f', 4);
  ASSERT_EQ(npy::read(dir.file("rot.npy")).shape, (std::vector<std::int64_t>{7, D}));
  std::vector<float> row(D), want(D);
  for (int i = 0; i < 7; ++i) {
    for (int d = 0; d < D; ++d) row[d] = uqref::bf16_value(qb[i * D + d]);
    uqref::wht256_fp32(row.data(), want.data());
    EXPECT_EQ(std::memcmp(&got[i * D], want.data(), D * 4), 0) << "row " << i;
  }
  save_u16(dir.file("q4.npy"), {1, 1, 7, D}, std::vector<std::uint16_t>(7 * D, 0x3f80));
  r = run({"rotate-q", "--q", dir.file("q4.npy"), "--out", dir.file("bad.npy")});
  expect_one_line_error(r, "rotate-q", 2);
  EXPECT_NE(r.err.find("found a 4-d array (1, 1, 7, 256) uint16"), std::string::npos) << r.err;
  save_f32(dir.file("q255.npy"), {2, 255}, std::vector<float>(510, 1.0f));
  r = run({"rotate-q", "--q", dir.file("q255.npy"), "--out", dir.file("bad.npy")});
  expect_one_line_error(r, "rotate-q", 2);
  EXPECT_NE(r.err.find("expected shape [N, 256], found (2, 255) float32"), std::string::npos) << r.err;
  EXPECT_FALSE(exists(dir.file("bad.npy")));
}

// ------------------------------------------------------------------ decode
// A cache written by the reference writer (independent of write-kv), 4 sequences of
// awkward lengths over scattered blocks, 2 KV heads x QG 6.
struct DecodeCase {
  static constexpr int B = 4, Hk = 2, QG = 6, Hq = Hk * QG, BS = 16, NB = 25, MB = 20, SB = 272;
  std::vector<std::int32_t> lens = {1, 300, 0, 17};
  std::vector<std::int32_t> tables = shuffled_block_tables(lens, NB, BS, MB, 12);
  std::vector<std::uint8_t> cache = reference_filled_cache(NB, BS, Hk, SB, 13, 14);
  std::vector<float> q = random_values(std::size_t(B) * Hq * D, 11, 0.7f);

  DecodeCase() {
    // Sequence 3's unused entries are -1 (never read).
    for (int j = (lens[3] + BS - 1) / BS; j < MB; ++j) tables[3 * MB + j] = -1;
  }
  void save(const TempDir& dir) const {
    save_f32(dir.file("q.npy"), {B, Hq, D}, q);
    save_u8(dir.file("cache.npy"), {NB, BS, Hk, SB}, cache);
    std::vector<std::int64_t> t64(tables.begin(), tables.end());
    save_i64(dir.file("bt.npy"), {B, MB}, t64);  // int64: converted to int32
    save_i32(dir.file("sl.npy"), {B}, lens);
  }
  std::vector<std::string> args(const TempDir& dir, const std::string& out = "out.npy") const {
    return {"decode", "--q", dir.file("q.npy"), "--cache", dir.file("cache.npy"), "--block-tables", dir.file("bt.npy"),
            "--seq-lens", dir.file("sl.npy"), "--qg", "6", "--out", dir.file(out)};
  }
  uqref::DecodeResult reference(const std::vector<std::uint16_t>& qbits, bool rotated, double scale = 1.0 / 16.0) const {
    uqref::DecodeInputs in = uqtest::reference_decode_inputs(qbits.data(), Hq, QG, cache.data(), NB, BS, Hk, SB,
                                                             tables.data(), MB, lens.data(), B, scale);
    in.q_rotated = rotated;
    return uqref::uq_decode(in);
  }
};

// Largest |got - ref| / bound over all elements, the bound of decode_tolerance.hpp
// for P partitions (infinite where the bound is 0 but the error is not).
double worst_error_ratio(const std::vector<float>& got, const uqref::DecodeResult& ref, int partitions,
                         std::size_t* worst_index = nullptr) {
  uq::cli::DecodeErrorModel m;
  m.partitions = partitions;
  m.tokens_per_partition = 256.0 * uq::tile_groups_per_partition(DecodeCase::MB, DecodeCase::BS, partitions);
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double bound = uq::cli::decode_error_bound(ref.vmax[i], ref.score_abs[i / D], m);
    const double err = std::fabs(got[i] - ref.out[i]);
    const double ratio = err == 0 ? 0.0 : (bound > 0 && !std::isnan(err) ? err / bound : INFINITY);
    if (ratio > worst) {
      worst = ratio;
      if (worst_index) *worst_index = i;
    }
  }
  return worst;
}

double expect_within_bound(const std::vector<float>& got, const uqref::DecodeResult& ref, int partitions) {
  std::size_t i = 0;
  const double worst = worst_error_ratio(got, ref, partitions, &i);
  EXPECT_LE(worst, 1.0) << "element " << i << ": got " << got[i] << ", reference " << ref.out[i];
  return worst;
}

TEST(CliDecode, MatchesTheReferenceWithinTheDerivedBound) {
  TempDir dir;
  const DecodeCase c;
  c.save(dir);
  save_f32(dir.file("out.npy"), {1}, {NAN});  // poison: must be replaced
  const CliResult r = run(c.args(dir));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("status ok"), std::string::npos) << r.out;
  const npy::Array out = npy::read(dir.file("out.npy"));
  ASSERT_EQ(out.shape, (std::vector<std::int64_t>{4, 12, 256}));
  const std::vector<float> got = load_as<float>(dir.file("out.npy"), 'f', 4);
  const uqref::DecodeResult ref = c.reference(bf16_bits(c.q), false);
  const uq::PartitionChoice p = uq::choose_partitions(DecodeCase::B, DecodeCase::MB, DecodeCase::BS);
  const double worst = expect_within_bound(got, ref, p.partitions);
  EXPECT_GT(worst, 0.0) << "a result identical to float64 would mean the bound was never exercised";
  // The bound is tight enough to catch a plausible bug: a softmax scale 3% off.
  const uqref::DecodeResult ref_off = c.reference(bf16_bits(c.q), false, 1.03 / 16.0);
  EXPECT_GT(worst_error_ratio(got, ref_off, p.partitions), 1.0);
  for (std::size_t i = 0; i < got.size(); ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, &got[i], 4);
    ASSERT_EQ(bits & 0xffffu, 0u) << "float32 output holds bf16 values exactly";
  }
  // Sequence 0 (one token): out = its v̂ exactly; sequence 2 (empty): exactly 0.
  for (int h = 0; h < DecodeCase::Hq; ++h) {
    double vhat[D];
    const int block = c.tables[0];
    uqref::uq_dequant_v(&c.cache[((std::size_t(block) * DecodeCase::BS + 0) * DecodeCase::Hk + h / DecodeCase::QG) * DecodeCase::SB], vhat);
    for (int d = 0; d < D; ++d) {
      ASSERT_EQ(got[(0 * DecodeCase::Hq + h) * D + d], vhat[d]) << "head " << h;
      ASSERT_EQ(got[(2 * DecodeCase::Hq + h) * D + d], 0.0f);
    }
  }
}

TEST(CliDecode, OptionsPartitionsOutDtypeRotatedQueryAndBackend) {
  TempDir dir;
  const DecodeCase c;
  c.save(dir);
  CliResult r =
      run(with_options(c.args(dir, "p3.npy"), {"--partitions", "3", "--out-dtype", "bf16", "--backend", "generic"}));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("3 partitions"), std::string::npos) << r.out;
  const std::vector<std::uint16_t> bits = load_as<std::uint16_t>(dir.file("p3.npy"), 'u', 2);
  std::vector<float> as_float(bits.size());
  for (std::size_t i = 0; i < bits.size(); ++i) as_float[i] = uqref::bf16_value(bits[i]);
  const uqref::DecodeResult ref = c.reference(bf16_bits(c.q), false);
  expect_within_bound(as_float, ref, 3);

  // --q-rotated with bf16(WHT(q)) from the reference, against the reference's
  // q_rotated meaning.
  std::vector<float> qrot(c.q.size()), row(D);
  const std::vector<std::uint16_t> qb = bf16_bits(c.q);
  for (std::size_t r0 = 0; r0 < qb.size() / D; ++r0) {
    for (int d = 0; d < D; ++d) row[d] = uqref::bf16_value(qb[r0 * D + d]);
    uqref::wht256_fp32(row.data(), &qrot[r0 * D]);
  }
  const std::vector<std::uint16_t> qrot_bits = bf16_bits(qrot);
  save_u16(dir.file("q.npy"), {DecodeCase::B, DecodeCase::Hq, D}, qrot_bits);
  r = run(with_options(c.args(dir, "rot.npy"), {"--q-rotated", "--scale=0.0625"}));
  ASSERT_EQ(r.status, 0) << r.err;
  const uq::PartitionChoice p = uq::choose_partitions(DecodeCase::B, DecodeCase::MB, DecodeCase::BS);
  expect_within_bound(load_as<float>(dir.file("rot.npy"), 'f', 4), c.reference(qrot_bits, true), p.partitions);

  // A serial build has no native kernel: asking for one is an error, not a fallback.
  r = run(with_options(c.args(dir, "native.npy"), {"--backend", "native"}));
  expect_native_ran_or_refused(r, "decode", dir.file("native.npy"));
}

TEST(CliDecode, LseIsWrittenAndMatchesTheReference) {
  TempDir dir;
  const DecodeCase c;
  c.save(dir);
  for (const char* partitions : {"0", "1"}) {  // the default split, and one kernel without reducer
    // The generic path, whose lse tolerance this is (the sm90 FP8 QK has its own bound,
    // tests/test_sm90_decode.cpp); the option's plumbing is the same on every path.
    const std::vector<std::string> args =
        with_options(c.args(dir), {"--lse", dir.file("lse.npy"), "--partitions", partitions, "--backend", "generic"});
    save_f32(dir.file("lse.npy"), {1}, {NAN});  // poison: must be replaced
    const CliResult r = run(args);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find(std::string("; lse ") + dir.file("lse.npy") + " (4, 12) float32"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(std::string(partitions) == "1" ? "1 kernel;" : "2 kernels;"), std::string::npos) << r.out;
    const npy::Array lse = npy::read(dir.file("lse.npy"));
    ASSERT_EQ(lse.shape, (std::vector<std::int64_t>{DecodeCase::B, DecodeCase::Hq}));
    const std::vector<float> got = load_as<float>(dir.file("lse.npy"), 'f', 4);
    const uqref::DecodeResult ref = c.reference(bf16_bits(c.q), false);
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (ref.attended[i] == 0) {
        EXPECT_EQ(got[i], -INFINITY) << "row " << i << ": a sequence without tokens";
        continue;
      }
      EXPECT_LE(std::fabs(got[i] - ref.lse[i]), uqtest::lse_tolerance(ref.lse[i], ref.score_abs[i], ref.attended[i]))
          << "row " << i << ": got " << got[i] << ", reference " << ref.lse[i];
    }
  }
  std::vector<std::string> same = c.args(dir);
  same.push_back("--lse");
  same.push_back(dir.file("out.npy"));
  expect_one_line_error(run(same), "decode", 2);
}

TEST(CliDecode, NonFiniteQueryFailsOrGivesNanRowsWithNoCheck) {
  TempDir dir;
  DecodeCase c;
  c.q[(1 * DecodeCase::Hq + 7) * D + 100] = NAN;       // sequence 1, head 7
  c.q[(2 * DecodeCase::Hq + 0) * D + 3] = INFINITY;    // sequence 2 (no tokens), head 0
  c.save(dir);
  const CliResult r = run_rejected_then_unchecked("decode", c.args(dir), "nonfinite_inputs=2", dir.file("out.npy"),
                                                  {"--lse", dir.file("lse.npy")});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("warning: the device masked bad data (nonfinite_inputs=2)"), std::string::npos) << r.err;
  const std::vector<float> out = load_as<float>(dir.file("out.npy"), 'f', 4);
  const std::vector<float> lse = load_as<float>(dir.file("lse.npy"), 'f', 4);
  for (int b = 0; b < DecodeCase::B; ++b)
    for (int h = 0; h < DecodeCase::Hq; ++h) {
      const bool bad = (b == 1 && h == 7) || (b == 2 && h == 0);
      const std::size_t row = static_cast<std::size_t>(b) * DecodeCase::Hq + h;
      EXPECT_EQ(std::isnan(lse[row]), bad) << "seq " << b << " head " << h << ": lse " << lse[row];
      for (int d = 0; d < D; ++d) ASSERT_EQ(std::isnan(out[row * D + d]), bad) << "seq " << b << " head " << h << " dim " << d;
    }
}

TEST(CliDecode, BadBlockIdsAndSeqLensFailOrAreMaskedWithNoCheck) {
  TempDir dir;
  DecodeCase c;
  c.lens[3] = -5;
  c.save(dir);
  CliResult r = run_rejected_then_unchecked("decode", c.args(dir), "negative_seq_lens=1", dir.file("out.npy"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("warning: the device masked bad data (negative_seq_lens=1)"), std::string::npos) << r.err;
  const std::vector<float> got = load_as<float>(dir.file("out.npy"), 'f', 4);
  expect_within_bound(got, c.reference(bf16_bits(c.q), false), uq::choose_partitions(DecodeCase::B, DecodeCase::MB, DecodeCase::BS).partitions);
  for (int i = 0; i < DecodeCase::Hq * D; ++i) ASSERT_EQ(got[3 * DecodeCase::Hq * D + i], 0.0f);

  DecodeCase bad_block;
  bad_block.tables[1 * DecodeCase::MB + 4] = DecodeCase::NB;  // a needed block of sequence 1, out of range
  bad_block.save(dir);
  r = run(bad_block.args(dir, "out2.npy"));
  expect_one_line_error(r, "decode", 2);
  EXPECT_NE(r.err.find("bad_block_ids=1"), std::string::npos) << r.err;
}

TEST(CliDecode, RejectsMalformedInputsNamingTheFile) {
  TempDir dir;
  const DecodeCase c;
  const std::string q = dir.file("q.npy"), cache = dir.file("cache.npy"), bt = dir.file("bt.npy"),
                    sl = dir.file("sl.npy");
  auto expect_error = [&](const std::string& words, int status = 2, std::vector<std::string> args = {}) {
    if (args.empty()) args = c.args(dir);
    const CliResult r = run(args);
    expect_one_line_error(r, "decode", status);
    EXPECT_NE(r.err.find(words), std::string::npos) << r.err;
    EXPECT_FALSE(exists(dir.file("out.npy")));
    c.save(dir);  // restore the valid inputs
  };
  c.save(dir);
  save_f32(q, {DecodeCase::B, DecodeCase::Hq, 128}, std::vector<float>(DecodeCase::B * DecodeCase::Hq * 128, 1.0f));
  expect_error(q + ": expected shape [B, Hq, 256], found (4, 12, 128) float32");
  save_f32(q, {DecodeCase::B, 8, D}, std::vector<float>(DecodeCase::B * 8 * D, 1.0f));
  expect_error(q + ": expected Hq = Hk x qg = 2 x 6 = 12 query heads");
  std::vector<std::string> qg8 = c.args(dir);
  qg8[10] = "8";
  expect_error(q + ": expected Hq = Hk x qg = 2 x 8 = 16", 2, qg8);
  save_i32(bt, {3, DecodeCase::MB}, std::vector<std::int32_t>(3 * DecodeCase::MB, 0));
  expect_error(bt + ": expected shape [B, max_blocks] with B = 4 (from " + q + "), found (3, 20) int32");
  save_i64(sl, {DecodeCase::B}, {1, 2, std::int64_t(1) << 40, 4});
  expect_error(sl + ": expected values in the int32 range, found 1099511627776 at flat index 2");
  save_f32(cache, {DecodeCase::NB, DecodeCase::BS, DecodeCase::Hk, DecodeCase::SB}, std::vector<float>(std::size_t(DecodeCase::NB) * DecodeCase::BS * DecodeCase::Hk * DecodeCase::SB, 0.0f));
  expect_error(cache + ": expected uint8, found float32");
  save_u8(cache, {DecodeCase::NB, DecodeCase::BS, DecodeCase::Hk, 270}, std::vector<std::uint8_t>(std::size_t(DecodeCase::NB) * DecodeCase::BS * DecodeCase::Hk * 270, 0));
  expect_error("slot_bytes >= 272 and a multiple of 4");
  const std::string full = read_bytes(cache);
  write_bytes(cache, full.substr(0, full.size() - 1000));
  expect_error(cache + ": expected 217600 data bytes for shape (25, 16, 2, 272) uint8, found 216600 (truncated file)");
  write_bytes(q, numpy_fixtures::f32_big_endian);
  expect_error(q + ": expected little-endian data ('<'), found big-endian dtype '>f4'");
  std::remove(sl.c_str());
  expect_error(sl + ": cannot open: No such file or directory", 1);
}

}  // namespace
