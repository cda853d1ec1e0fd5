// What the uq program may allocate is bounded by what its inputs justify:
// tiny inputs asking for huge outputs either get them without holding them in memory
// (peak resident memory of the real program, measured by wait4) or a clear exit-2
// error naming the size; and an update of an existing cache costs what the tokens
// written touch, not the cache's size (same measurement), while giving the bytes the
// reference writer gives on the whole cache.
#include "cli/cli_test_support.hpp"
#include "cli/program_runner.hpp"
#include "cli/reference_cache.hpp"

#include "uqref.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

using namespace cli_test;
namespace npy = uq::cli::npy;

namespace {

constexpr int D = 256;
constexpr long kMiB = 1024;  // ru_maxrss is in KiB

// The program's peak RSS doing nothing but starting (Kokkos, the sanitizer runtime in
// the ASan suite): the allowance of each test is on top of this.
long baseline_rss_kib() {
  TempDir dir;
  const ChildResult r = run_uq(dir, {"--version"});
  EXPECT_TRUE(r.exited && r.status == 0) << r.err;
  EXPECT_GT(r.max_rss_kib, 0);
  return r.max_rss_kib;
}

void expect_rss_within(const ChildResult& r, long allowance_kib, const std::string& what) {
  static const long baseline = baseline_rss_kib();
  EXPECT_LE(r.max_rss_kib, baseline + allowance_kib)
      << what << ": peak RSS " << r.max_rss_kib / kMiB << " MiB, start-up alone " << baseline / kMiB << " MiB";
}

void expect_exit2_naming(const ChildResult& r, const std::string& cmd, const std::string& words) {
  ASSERT_TRUE(r.exited) << "ended by signal " << r.signal;
  EXPECT_EQ(r.status, 2) << r.err;
  const std::string line = last_line(r.err);
  EXPECT_EQ(line.rfind("uq " + cmd + ": ", 0), 0u) << r.err;
  EXPECT_NE(line.find(words), std::string::npos) << r.err;
}

std::vector<std::uint8_t> random_bytes(std::size_t n, std::uint64_t seed) {
  std::vector<std::uint8_t> b(n);
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i < n; i += 8) {
    const std::uint64_t x = rng();
    for (std::size_t j = 0; j < 8 && i + j < n; ++j) b[i + j] = static_cast<std::uint8_t>(x >> (8 * j));
  }
  return b;
}

// ------------------------------------------------------------------ new caches
TEST(CliResourceBounds, ANewCacheForEmptyKeysIsNotHeldInMemory) {
  // K and V of 0 tokens but 1024 KV heads: a header of 128 bytes each. The cache they ask
  // for (1 block x 256 positions x 1024 heads x 272 bytes = 68 MiB) is created as a file
  // of zeros; nothing needs it in memory, let alone three times.
  TempDir dir;
  save_f32(dir.file("k.npy"), {0, 1024, D}, {});
  save_f32(dir.file("v.npy"), {0, 1024, D}, {});
  save_i64(dir.file("slots.npy"), {0}, {});
  const ChildResult r = run_uq(dir, {"write-kv", "--k", dir.file("k.npy"), "--v", dir.file("v.npy"), "--slots",
                                     dir.file("slots.npy"), "--cache", dir.file("cache.npy"), "--num-blocks", "1",
                                     "--block-size", "256"});
  ASSERT_TRUE(r.exited && r.status == 0) << r.err;
  expect_rss_within(r, 16 * kMiB, "write-kv creating a 68 MiB cache for 0 tokens");
  // Its header, its size, and zeros where the data starts and ends (read in place: the
  // test keeps its own memory small too).
  const uq::cli::npy::DataFile file(dir.file("cache.npy"));
  EXPECT_EQ(file.header().shape, (std::vector<std::int64_t>{1, 256, 1024, 272}));
  struct stat st;
  ASSERT_EQ(::stat(dir.file("cache.npy").c_str(), &st), 0);
  EXPECT_EQ(static_cast<std::uint64_t>(st.st_size), file.header().data_offset + 256ull * 1024 * 272);
  std::vector<unsigned char> first(4096, 0xff), last(4096, 0xff);
  file.read(0, first.data(), first.size());
  file.read(file.header().data_bytes - last.size(), last.data(), last.size());
  EXPECT_TRUE(std::all_of(first.begin(), first.end(), [](unsigned char b) { return b == 0; }));
  EXPECT_TRUE(std::all_of(last.begin(), last.end(), [](unsigned char b) { return b == 0; }));
}

TEST(CliResourceBounds, ACacheLargerThanTheDiskIsRefusedNamingItsSize) {
  TempDir dir;
  save_f32(dir.file("k.npy"), {1, 1, D}, random_values(D, 1));
  save_f32(dir.file("v.npy"), {1, 1, D}, random_values(D, 2));
  save_i64(dir.file("slots.npy"), {1}, {0});
  // 2^40 blocks of 256 x 272 bytes: 64 PiB.
  ChildResult r = run_uq(dir, {"write-kv", "--k", dir.file("k.npy"), "--v", dir.file("v.npy"), "--slots",
                               dir.file("slots.npy"), "--cache", dir.file("cache.npy"), "--num-blocks",
                               "1099511627776", "--block-size", "256"});
  // The size named is the file's: its header and 2^40 x 256 x 272 data bytes.
  const std::vector<std::int64_t> shape = {std::int64_t(1) << 40, 256, 1, 272};
  const std::uint64_t bytes = npy::encode_header(npy::uint8(), shape).size() + (std::uint64_t(17) << 52);
  expect_exit2_naming(r, "write-kv", dir.file("cache.npy") + ": expected an output that fits in the ");
  EXPECT_NE(r.err.find("found 68.0 PiB (" + std::to_string(bytes) +
                       " bytes) for a new cache of shape (1099511627776, 256, 1, 272) uint8"),
            std::string::npos)
      << r.err;
  save_f32(dir.file("ik.npy"), {1, 128}, random_values(128, 3));
  r = run_uq(dir, {"write-index", "--k", dir.file("ik.npy"), "--slots", dir.file("slots.npy"), "--cache",
                   dir.file("icache.npy"), "--num-blocks", "1099511627776"});
  const std::uint64_t index_bytes =
      npy::encode_header(npy::uint8(), {std::int64_t(1) << 40, 9216}).size() + 10133099161583616ull;
  expect_exit2_naming(r, "write-index", "found 9.0 PiB (" + std::to_string(index_bytes) +
                                            " bytes) for a new cache of shape (1099511627776, 9216) uint8");
  expect_rss_within(r, 16 * kMiB, "write-index refusing a 9 PiB cache");
  std::vector<std::string> names = dir.list();
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"ik.npy", "k.npy", "slots.npy", "v.npy"})) << "nothing created";
}

// ------------------------------------------------------------------ select --k
struct SelectCase {
  explicit SelectCase(const TempDir& dir) {
    // 1 index head, 2 requests of query length 1, 3 blocks.
    save_f32(dir.file("scores.npy"), {1, 2, 3}, {0.5f, -1.0f, 2.0f, 1.0f, 3.0f, -2.0f});
    save_i32(dir.file("sl.npy"), {2}, {300, 200});
  }
  std::vector<std::string> args(const TempDir& dir, const std::string& out, std::int64_t k) const {
    return {"select", "--scores", dir.file("scores.npy"), "--seq-lens", dir.file("sl.npy"), "--query-len", "1",
            "--out", dir.file(out), "--k", std::to_string(k)};
  }
};

TEST(CliResourceBounds, SelectPadsALargeKAsItWritesNotInMemory) {
  TempDir dir;
  const SelectCase c(dir);
  constexpr std::int64_t k = std::int64_t(1) << 23;  // 2 rows x 8 Mi x 4 bytes = 64 MiB of output
  ChildResult r = run_uq(dir, c.args(dir, "small.npy", 3));
  ASSERT_TRUE(r.exited && r.status == 0) << r.err;
  r = run_uq(dir, c.args(dir, "large.npy", k));
  ASSERT_TRUE(r.exited && r.status == 0) << r.err;
  expect_rss_within(r, 16 * kMiB, "select --k 2^23 on 3 blocks");
  const std::vector<std::int32_t> small = load_as<std::int32_t>(dir.file("small.npy"), 'i', 4);
  const npy::Array large = npy::read(dir.file("large.npy"));
  ASSERT_EQ(large.shape, (std::vector<std::int64_t>{1, 2, k}));
  ASSERT_EQ(small.size(), 6u);
  // Request 0 sees 3 blocks (300 tokens), request 1 two (200): -1 pads the rest.
  EXPECT_EQ(small, (std::vector<std::int32_t>{2, 0, 1, 1, 0, -1}));
  std::vector<std::int32_t> row(static_cast<std::size_t>(k));
  for (int i = 0; i < 2; ++i) {
    std::memcpy(row.data(), large.data.data() + std::size_t(i) * k * 4, row.size() * 4);
    for (int j = 0; j < 3; ++j) EXPECT_EQ(row[j], small[i * 3 + j]) << "row " << i << " column " << j;
    EXPECT_TRUE(std::all_of(row.begin() + 3, row.end(), [](std::int32_t x) { return x == -1; })) << "row " << i;
  }
}

TEST(CliResourceBounds, SelectRefusesAnOutputLargerThanTheDiskBeforeAnyWork) {
  // Scores of shape (1, 2^31 - 1, 0): a header and no data. With --k 2^20 the output
  // would be 8 PiB of padding.
  TempDir dir;
  save_f32(dir.file("scores.npy"), {1, 2147483647, 0}, {});
  save_i32(dir.file("sl.npy"), {1}, {0});
  const ChildResult r = run_uq(dir, {"select", "--scores", dir.file("scores.npy"), "--seq-lens", dir.file("sl.npy"),
                                     "--query-len", "2147483647", "--out", dir.file("idx.npy"), "--k", "1048576"});
  // The size named is the data's (the check is made before the header exists).
  expect_exit2_naming(r, "select", "found 8.0 PiB (9007199250546688 bytes) for an output of shape (1, 2147483647, "
                                   "1048576) int32");
  EXPECT_FALSE(exists(dir.file("idx.npy")));
}

// ------------------------------------------------------------------ in-place updates
TEST(CliResourceBounds, WriteKvUpdatesALargeCacheTouchingOnlyTheSlotsWritten) {
  TempDir dir;
  constexpr int NB = 360, BS = 256, Hk = 2, SB = 276, T = 6;  // a 48.5 MiB cache
  const std::vector<float> k = random_values(std::size_t(T) * Hk * D, 5), v = random_values(std::size_t(T) * Hk * D, 6);
  // Scattered slots: one skipped, two adjacent, the cache's first and last slots.
  const std::vector<std::int64_t> slots = {NB * BS - 1, 0, 1, 777, -1, 31337};
  save_f32(dir.file("k.npy"), {T, Hk, D}, k);
  save_f32(dir.file("v.npy"), {T, Hk, D}, v);
  save_i64(dir.file("slots.npy"), {T}, slots);
  std::vector<std::uint8_t> cache = random_bytes(std::size_t(NB) * BS * Hk * SB, 7);
  save_u8(dir.file("cache.npy"), {NB, BS, Hk, SB}, cache);
  const ChildResult r = run_uq(dir, {"write-kv", "--k", dir.file("k.npy"), "--v", dir.file("v.npy"), "--slots",
                                     dir.file("slots.npy"), "--cache", dir.file("cache.npy")});
  ASSERT_TRUE(r.exited && r.status == 0) << r.err;
  EXPECT_NE(r.out.find("updated"), std::string::npos) << r.out;
  expect_rss_within(r, 16 * kMiB, "write-kv of 6 tokens into a 48 MiB cache");
  const std::vector<std::uint16_t> kb = bf16_bits(k), vb = bf16_bits(v);
  const uqref::WriteCounts counts = uqref::uq_write_kv(kb.data(), vb.data(), slots.data(), T, Hk, cache.data(), NB, BS, SB);
  ASSERT_EQ(counts.bad_slots + counts.nonfinite_rows, 0u);
  EXPECT_TRUE(load_as<std::uint8_t>(dir.file("cache.npy"), 'u', 1) == cache) << "differs from uqref on the whole cache";
}

TEST(CliResourceBounds, WriteIndexUpdatesALargeCacheTouchingOnlyTheSlotsWritten) {
  TempDir dir;
  constexpr int NB = 5400, T = 7;  // a 47.5 MiB index cache
  const std::vector<float> keys = random_values(std::size_t(T) * 128, 8);
  const std::vector<std::int64_t> slots = {5, 6, 127, 128, -3, NB * 128 - 1, 400000};
  save_f32(dir.file("k.npy"), {T, 128}, keys);
  save_i64(dir.file("slots.npy"), {T}, slots);
  std::vector<std::uint8_t> cache = random_bytes(std::size_t(NB) * 9216, 9);
  save_u8(dir.file("icache.npy"), {NB, 9216}, cache);
  const ChildResult r = run_uq(dir, {"write-index", "--k", dir.file("k.npy"), "--slots", dir.file("slots.npy"),
                                     "--cache", dir.file("icache.npy")});
  ASSERT_TRUE(r.exited && r.status == 0) << r.err;
  expect_rss_within(r, 16 * kMiB, "write-index of 7 tokens into a 47 MiB cache");
  const uqref::WriteCounts counts = uqref::nv_write_index_keys(keys.data(), slots.data(), T, cache.data(), NB);
  ASSERT_EQ(counts.bad_slots + counts.nonfinite_rows, 0u);
  EXPECT_TRUE(load_as<std::uint8_t>(dir.file("icache.npy"), 'u', 1) == cache) << "differs from uqref on the whole cache";
}

}  // namespace
