// Arrays with no data but huge extents (a .npy header of ~128 bytes can declare
// 2^62 heads when another extent is 0) and empty arrays through every conversion:
// each gives one clear line and exit 2, or an empty result, never an overflowed
// product, a truncated cast or a null pointer passed to memcpy (the ASan/UBSan suite
// aborts on each of those, with -fno-sanitize-recover).
#include "cli/cli_test_support.hpp"

#include "cli/inputs.hpp"

#include <gtest/gtest.h>

using namespace cli_test;
namespace npy = uq::cli::npy;

namespace {

constexpr int D = 256;

npy::Array empty_array(const npy::DType& dtype, std::vector<std::int64_t> shape) {
  npy::Array a;
  a.dtype = dtype;
  a.shape = std::move(shape);
  return a;  // data is an empty vector: data() may be null
}

TEST(CliExtremeExtents, EveryConversionTakesAnEmptyArray) {
  EXPECT_TRUE(uq::cli::to_e4m3(empty_array(npy::uint8(), {0, 4, 128}), "q").empty());
  EXPECT_TRUE(uq::cli::to_e4m3(empty_array(npy::float32(), {0, 4, 128}), "q").empty());
  EXPECT_TRUE(uq::cli::to_bf16(empty_array(npy::float32(), {0}), "k").empty());
  EXPECT_TRUE(uq::cli::to_bf16(empty_array(npy::uint16(), {5, 0}), "k").empty());
  EXPECT_TRUE(uq::cli::to_int32(empty_array(npy::int64(), {0}), "sl").empty());
  EXPECT_TRUE(uq::cli::to_int64(empty_array(npy::int32(), {0}), "sl").empty());
  EXPECT_TRUE(uq::cli::to_float32(empty_array(npy::float32(), {0, 0}), "s").empty());
}

TEST(CliExtremeExtents, ScoreTakesAnEmptyQueryInUint8) {
  // uint8 queries go through to_e4m3's byte copy: with no request there is nothing to copy.
  TempDir dir;
  save_u8(dir.file("q.npy"), {0, 1, 128}, {});
  save_u8(dir.file("ic.npy"), {1, 9216}, std::vector<std::uint8_t>(9216, 0));
  save_i32(dir.file("bt.npy"), {0, 4}, {});
  save_i32(dir.file("sl.npy"), {0}, {});
  const CliResult r = run({"score", "--q", dir.file("q.npy"), "--cache", dir.file("ic.npy"), "--block-tables",
                           dir.file("bt.npy"), "--seq-lens", dir.file("sl.npy"), "--query-len", "1", "--init-blocks",
                           "0", "--local-blocks", "0", "--out", dir.file("s.npy")});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(npy::read(dir.file("s.npy")).shape, (std::vector<std::int64_t>{1, 0, 4}));
}

// decode on a cache declaring `hk` KV heads and no blocks, q declaring `hq` heads and no
// sequences: both files are headers only.
CliResult decode_with_empty_arrays(const TempDir& dir, std::int64_t hk, std::int64_t hq, std::int64_t qg) {
  save_u8(dir.file("cache.npy"), {0, 16, hk, 272}, {});
  save_f32(dir.file("q.npy"), {0, hq, D}, {});
  save_i32(dir.file("bt.npy"), {0, 1}, {});
  save_i32(dir.file("sl.npy"), {0}, {});
  return run({"decode", "--q", dir.file("q.npy"), "--cache", dir.file("cache.npy"), "--block-tables",
              dir.file("bt.npy"), "--seq-lens", dir.file("sl.npy"), "--qg", std::to_string(qg), "--out",
              dir.file("out.npy")});
}

TEST(CliExtremeExtents, DecodeBoundsTheKvHeadCountOfACache) {
  TempDir dir;
  // 2^59 heads x qg 16 overflows 64 bits; the check names the cache and its bound.
  CliResult r = decode_with_empty_arrays(dir, std::int64_t(1) << 59, 12, 16);
  expect_one_line_error(r, "decode", 2);
  EXPECT_NE(r.err.find(dir.file("cache.npy") + ": expected a cache [num_blocks, block_size, Hk, slot_bytes] with 1 <= "
                                               "Hk <= 2^31 - 1, found shape (0, 16, 576460752303423488, 272)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("= -"), std::string::npos) << r.err;
  // 2^31 heads with a q of 6 x 2^31 heads: consistent, but not a head count the library
  // takes (an int): refused the same way, not cast to -2^31.
  r = decode_with_empty_arrays(dir, std::int64_t(1) << 31, std::int64_t(6) << 31, 6);
  expect_one_line_error(r, "decode", 2);
  EXPECT_NE(r.err.find("with 1 <= Hk <= 2^31 - 1, found shape (0, 16, 2147483648, 272)"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("-2147483648"), std::string::npos) << r.err;
  // Within the bound, a q that does not match prints the true product.
  r = decode_with_empty_arrays(dir, 2147483647, 12, 16);
  expect_one_line_error(r, "decode", 2);
  EXPECT_NE(r.err.find("expected Hq = Hk x qg = 2147483647 x 16 = 34359738352 query heads"), std::string::npos)
      << r.err;
  EXPECT_FALSE(exists(dir.file("out.npy")));
}

TEST(CliExtremeExtents, WriteKvBoundsTheKvHeadCountOfANewCache) {
  TempDir dir;
  save_f32(dir.file("k.npy"), {0, std::int64_t(1) << 31, D}, {});
  save_f32(dir.file("v.npy"), {0, std::int64_t(1) << 31, D}, {});
  save_i64(dir.file("slots.npy"), {0}, {});
  const CliResult r = run({"write-kv", "--k", dir.file("k.npy"), "--v", dir.file("v.npy"), "--slots",
                           dir.file("slots.npy"), "--cache", dir.file("cache.npy"), "--num-blocks", "1",
                           "--block-size", "16"});
  expect_one_line_error(r, "write-kv", 2);
  EXPECT_NE(r.err.find(dir.file("k.npy") + ": expected shape [T, Hk, 256] with 1 <= Hk <= 2^31 - 1"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(exists(dir.file("cache.npy")));
}

}  // namespace
