// Caches larger than 2^31 bytes: an engine's KV cache is tens of GB, so every byte offset into
// a cache must be computed in 64 bits. Each test allocates (without initialising) a cache just
// over 2 GiB, writes tokens with the library's writer into the blocks that straddle and lie
// above the 2^31-byte line, reads them back through decode / score on whatever path the device
// takes (Auto), and compares against the float64 reference run on a compact host copy of just
// those blocks. Only the written blocks are ever touched, so the tests stay fast.
#include "support/decode_case.hpp"
#include "support/reference_inputs.hpp"
#include "support/test_util.hpp"
#include "uq/uq.hpp"
#include "uqref.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace {

using namespace uqtest;

constexpr std::int64_t kLine = std::int64_t{1} << 31;  // the byte offset 32-bit code would wrap at

// Decode: block_size 256, 2 KV heads: 139264 bytes per block, so block 15420 straddles the
// 2^31 line and blocks 15421.. lie wholly above it.
TEST(LargeCaches, DecodeThroughBlocksAbove2GiB) {
  constexpr int kBlock = 256, kHk = 2, kQg = 6, kSlot = 272, kMaxBlocks = 4;
  constexpr std::int64_t kBlockBytes = std::int64_t{kBlock} * kHk * kSlot;
  constexpr std::int64_t kFirst = kLine / kBlockBytes;  // 15420: the straddling block
  constexpr int kUsed = 8;
  constexpr std::int64_t kNumBlocks = kFirst + kUsed;
  static_assert(kFirst * kBlockBytes < kLine && (kFirst + 1) * kBlockBytes > kLine, "block kFirst straddles 2^31");
  ASSERT_GT(kNumBlocks * kBlockBytes, kLine);

  // Two sequences over the 8 blocks, in scattered order; their lengths leave partial blocks.
  const std::vector<std::int32_t> lens = {1000, 777};
  const std::vector<std::int32_t> tables = {
      static_cast<std::int32_t>(kFirst + 7), static_cast<std::int32_t>(kFirst + 0),
      static_cast<std::int32_t>(kFirst + 5), static_cast<std::int32_t>(kFirst + 2),
      static_cast<std::int32_t>(kFirst + 1), static_cast<std::int32_t>(kFirst + 6),
      static_cast<std::int32_t>(kFirst + 3), static_cast<std::int32_t>(kFirst + 4)};
  const std::int64_t T = lens[0] + lens[1];

  RowGenerator kgen(901), vgen(902), qgen(903, 256, 0);
  std::vector<uq::bf16> k(static_cast<std::size_t>(T) * kHk * 256), v(k.size());
  std::vector<std::uint16_t> kbits(k.size()), vbits(k.size());
  for (std::size_t r = 0; r < k.size() / 256; ++r) {
    kgen.fill(&kbits[r * 256], 1.0f);
    vgen.fill(&vbits[r * 256], 1.0f);
  }
  for (std::size_t i = 0; i < k.size(); ++i) {
    k[i].bits = kbits[i];
    v[i].bits = vbits[i];
  }
  std::vector<std::int64_t> slots, compact_slots;
  for (int b = 0; b < 2; ++b)
    for (int t = 0; t < lens[static_cast<std::size_t>(b)]; ++t) {
      const std::int64_t block = tables[static_cast<std::size_t>(b * kMaxBlocks + t / kBlock)];
      slots.push_back(block * kBlock + t % kBlock);
      compact_slots.push_back((block - kFirst) * kBlock + t % kBlock);
    }

  Kokkos::View<std::uint8_t****, Kokkos::LayoutRight, Mem> cache(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "large_kv_cache"), kNumBlocks, kBlock, kHk, kSlot);
  uq::write_kv(to_device(k, "k", T, kHk, 256), to_device(v, "v", T, kHk, 256), to_device(slots, "slots", T), cache);

  // The written blocks, copied back: bit-exact against the reference writer on a compact cache.
  auto used = Kokkos::subview(cache, std::make_pair(kFirst, kNumBlocks), Kokkos::ALL, Kokkos::ALL, Kokkos::ALL);
  const std::vector<std::uint8_t> got_blocks = to_host(used);
  // Unwritten slots of the compact reference keep whatever the device cache holds there
  // (uninitialised memory): only written slots are compared.
  std::vector<std::uint8_t> compact = got_blocks;
  const uqref::WriteCounts wc = uqref::uq_write_kv(kbits.data(), vbits.data(), compact_slots.data(), T, kHk,
                                                   compact.data(), kUsed, kBlock, kSlot);
  EXPECT_EQ(wc.bad_slots, 0u);
  EXPECT_EQ(wc.nonfinite_rows, 0u);
  for (std::int64_t s : compact_slots)
    for (int h = 0; h < kHk; ++h) {
      const std::size_t off = static_cast<std::size_t>((s * kHk + h) * kSlot);
      for (int byte = 0; byte < 272; ++byte)
        ASSERT_EQ(got_blocks[off + byte], compact[off + byte]) << "slot " << s << " head " << h << " byte " << byte;
    }

  // Decode through the blocks above the line, checked against the reference.
  std::vector<uq::bf16> q(static_cast<std::size_t>(2) * kHk * kQg * 256);
  std::vector<std::uint16_t> qbits(q.size());
  for (std::size_t r = 0; r < q.size() / 256; ++r) qgen.fill(&qbits[r * 256], 1.0f);
  for (std::size_t i = 0; i < q.size(); ++i) q[i].bits = qbits[i];
  Kokkos::View<uq::bf16***, Kokkos::LayoutRight, Mem> out("out", 2, kHk * kQg, 256);
  Kokkos::deep_copy(out, uq::bf16{kPoisonBf16});
  uq::decode(to_device(q, "q", 2, kHk * kQg, 256), cache, to_device(tables, "tables", 2, kMaxBlocks),
             to_device(lens, "lens", 2), out);

  std::vector<std::int32_t> compact_tables(tables);
  for (auto& id : compact_tables) id -= static_cast<std::int32_t>(kFirst);
  const uqref::DecodeResult ref = uqref::uq_decode(
      uqtest::reference_decode_inputs(qbits.data(), static_cast<std::int64_t>(kHk) * kQg, kQg, compact.data(), kUsed,
                                      kBlock, kHk, kSlot, compact_tables.data(), kMaxBlocks, lens.data(), 2, 1.0 / 16.0));
  const auto got = to_host(out);
  int reported = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const std::size_t row = i / 256;
    const double g = uq::codec::bf16_to_float(got[i]);
    // The same derived bound as every decode test (tests/support/decode_case.hpp).
    const double tol = decode_tolerance(ref.out[i], ref.vmax[i], ref.score_abs[row], ref.attended[row]);
    if (!(std::fabs(g - ref.out[i]) <= tol) && reported++ < 5)
      ADD_FAILURE() << "element " << i << ": got " << g << ", reference " << ref.out[i] << ", tol " << tol;
  }
}

// Index scorer: 9216-byte pages, so page 233016 straddles the 2^31 line.
TEST(LargeCaches, ScoreThroughPagesAbove2GiB) {
  constexpr std::int64_t kPageBytes = 9216;
  constexpr std::int64_t kFirst = kLine / kPageBytes;  // 233016
  constexpr int kUsed = 8, kQl = 2, kHeads = 2, kMaxBlocks = 6;
  constexpr std::int64_t kNumBlocks = kFirst + kUsed;
  static_assert(kFirst * kPageBytes < kLine && (kFirst + 1) * kPageBytes > kLine, "page kFirst straddles 2^31");

  const std::vector<std::int32_t> lens = {700, 250};  // 6 and 2 blocks
  const std::vector<std::int32_t> tables = {
      static_cast<std::int32_t>(kFirst + 3), static_cast<std::int32_t>(kFirst + 0),
      static_cast<std::int32_t>(kFirst + 7), static_cast<std::int32_t>(kFirst + 5),
      static_cast<std::int32_t>(kFirst + 1), static_cast<std::int32_t>(kFirst + 6),
      static_cast<std::int32_t>(kFirst + 2), static_cast<std::int32_t>(kFirst + 4),
      static_cast<std::int32_t>(kFirst + 2), static_cast<std::int32_t>(kFirst + 2),
      static_cast<std::int32_t>(kFirst + 2), static_cast<std::int32_t>(kFirst + 2)};
  const std::int64_t T = lens[0] + lens[1];
  std::mt19937_64 rng(904);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> keys(static_cast<std::size_t>(T) * 128);
  for (auto& x : keys) x = n(rng);
  std::vector<std::int64_t> slots, compact_slots;
  for (int r = 0; r < 2; ++r)
    for (int t = 0; t < lens[static_cast<std::size_t>(r)]; ++t) {
      const std::int64_t page = tables[static_cast<std::size_t>(r * kMaxBlocks + t / 128)];
      slots.push_back(page * 128 + t % 128);
      compact_slots.push_back((page - kFirst) * 128 + t % 128);
    }

  Kokkos::View<std::uint8_t**, Kokkos::LayoutRight, Mem> cache(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "large_index_cache"), kNumBlocks, kPageBytes);
  ASSERT_GT(static_cast<std::int64_t>(cache.size()), kLine);
  uq::write_index_keys(to_device(keys, "keys", T, 128), to_device(slots, "slots", T), cache);
  auto used = Kokkos::subview(cache, std::make_pair(kFirst, kNumBlocks), Kokkos::ALL);
  std::vector<std::uint8_t> compact = to_host(used);
  const std::vector<std::uint8_t> got_pages = compact;
  const uqref::WriteCounts wc = uqref::nv_write_index_keys(keys.data(), compact_slots.data(), T, compact.data(), kUsed);
  EXPECT_EQ(wc.bad_slots + wc.nonfinite_rows, 0u);
  EXPECT_EQ(got_pages, compact) << "the index writer's pages above 2^31 differ from the reference writer's";

  // E4M3 query bytes: any finite code (0x7f and 0xff are NaN).
  std::vector<std::uint8_t> q(static_cast<std::size_t>(2 * kQl) * kHeads * 128);
  for (auto& b : q) {
    b = static_cast<std::uint8_t>(rng() % 256);
    if ((b & 0x7f) == 0x7f) b = 0x38;
  }
  Kokkos::View<float***, Kokkos::LayoutRight, Mem> scores("scores", kHeads, 2 * kQl, kMaxBlocks);
  Kokkos::deep_copy(scores, std::numeric_limits<float>::quiet_NaN());
  uq::ScoreConfig cfg;
  cfg.query_len = kQl;
  cfg.init_blocks = 1;
  cfg.local_blocks = 1;
  uq::score(to_device(q, "q", 2 * kQl, kHeads, 128), cache, to_device(tables, "tables", 2, kMaxBlocks),
            to_device(lens, "lens", 2), scores, cfg);

  std::vector<std::int32_t> compact_tables(tables);
  for (auto& id : compact_tables) id -= static_cast<std::int32_t>(kFirst);
  const uqref::ScoreInputs in =
      uqtest::reference_score_inputs(q.data(), static_cast<std::int64_t>(kHeads) * 128, 128, kHeads, compact.data(),
                                     kUsed, compact_tables.data(), kMaxBlocks, lens.data(), 2, kQl, 1, 1);
  std::vector<float> want(static_cast<std::size_t>(kHeads) * 2 * kQl * kMaxBlocks,
                          std::numeric_limits<float>::quiet_NaN());
  uqref::nv_score(in, want.data(), kMaxBlocks);
  const auto got = to_host(scores);
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i]) || std::isinf(want[i]) || std::fabs(want[i]) >= 1e29f) {
      // untouched (NaN), -inf and the sentinels are exact
      EXPECT_TRUE(std::isnan(want[i]) ? std::isnan(got[i]) : got[i] == want[i])
          << "entry " << i << ": got " << got[i] << ", reference " << want[i];
    } else {
      // spec nvfp4-index.md §4: finite scores within 1e-4 + 1e-4 |ref| (summation order is free)
      EXPECT_NEAR(got[i], want[i], 1e-4 + 1e-4 * std::fabs(want[i])) << "entry " << i;
    }
  }
}

}  // namespace
