// The emulated gfx950 decode path's own tests, beyond the shared decode cases stamped in
// test_emu_decode.cpp (emu_decode_path.hpp describes the path and its two checks): gathered q
// layouts, unattended cache bytes poisoned, padded cache blocks and a strided output, zero scale
// groups; bad data (spec §6) masked and counted like the generic path; revision 2's split-K
// (P = 1 writing out itself, a table narrower than the plan's, non-finite queries); the
// launcher's argument checks.
#include "emu_decode_path.hpp"

#include "gfx950/decode_emulated.hpp"
#include "gfx950/launch_decode.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace {

using namespace uqtest;

TEST(EmuDecode, GatheredQueryLayouts) {
  // q rows that are not dim-contiguous, or only 2-byte aligned: the kernel's 16-bit loads.
  for (int raw : {0, 1}) {
    DecodeCase c;
    c.qg = 8;
    c.num_kv_heads = 2;
    c.q_rotated = raw == 0;
    c.seq_lens = {40, 270};
    c.seed = 500 + raw;
    Variant gathered;
    gathered.q_dim_stride = 3;
    check_both(c, gathered);
    Variant odd;
    odd.odd_q_head_stride = true;
    check_both(c, odd);
  }
}

TEST(EmuDecode, UnattendedCacheBytesNeverReachTheResult) {
  // Every byte no token attends (the tail of each sequence's last block, unused blocks)
  // becomes 0xFF: E8M0 255 is NaN for the MFMA and the convert, so a masked token whose K or
  // V entered a product would make the output NaN.
  for (int bs : {16, 64, 256}) {
    DecodeCase c;
    c.qg = 6;
    c.block_size = bs;
    c.seq_lens = {1, 15, 17, 100, 257};
    c.seed = 900 + bs;
    Variant v;
    v.poison_unattended = true;
    check_both(c, v);
  }
}

TEST(EmuDecode, PaddedCacheBlocksAndStridedOutput) {
  DecodeCase c;
  c.qg = 16;
  c.block_size = 32;
  c.num_kv_heads = 2;
  c.seq_lens = {70, 5, 300};
  Variant v;
  v.block_padding = 4 * 37;  // block stride not a multiple of 16
  v.strided_out = true;
  check_both(c, v);
}

TEST(EmuDecode, PartitionsOfMoreThan64TilesReloadTheirBlockIds) {
  // The kernel loads the block-table entries of 64 tiles at once (decode_tile.hpp) and the
  // next 64 when a partition goes on: 2100 tokens in one partition are 132 tiles (two reloads),
  // in two partitions 80 and 52; block size 16 gives every tile a table entry of its own.
  for (int P : {1, 2}) {
    DecodeCase c;
    c.qg = 6;
    c.block_size = 16;
    c.seq_lens = {2100, 1025, 64, 1100};
    c.partitions = P;
    c.seed = 1300 + P;
    check_both(c);
  }
}

TEST(EmuDecode, ZeroScaleGroupsAreZeroWhateverTheirCodes) {
  // Sequence 0's V scale bytes all become 0 while its (nonzero) codes stay: spec §1 makes the
  // groups exactly zero, so its output is exactly +0 (the convert alone would give
  // FP4 x 2^-127, not 0). The reference knows only the unmodified cache, so the case is
  // compared with the generic path alone; sequence 1 (untouched) must still match it.
  DecodeCase c;
  c.qg = 8;
  c.seq_lens = {90, 40};
  Variant v;
  v.zero_v_scales_of_seq0 = true;
  const BothPaths both = run_both_unchecked(c, v);
  const std::size_t row = 8 * 256;
  for (std::size_t i = 0; i < row; ++i) {
    ASSERT_EQ(both.emulated.out[i], 0u) << "element " << i;
    ASSERT_EQ(both.generic.out[i], 0u) << "element " << i;
  }
  // Sequence 1 attends only its own, unmodified blocks: the reference still holds for it.
  const uqref::DecodeResult ref = reference_decode(c, build_decode_data(c));
  for (std::size_t i = row; i < 2 * row; ++i) {
    const double e = bf16_value(both.emulated.out[i]), g = bf16_value(both.generic.out[i]);
    const GenericTolerance t = generic_tolerance(g, ref.vmax[i], ref.score_abs[i / 256], ref.attended[i / 256]);
    ASSERT_LE(std::fabs(e - g), t.smooth + t.flips) << "element " << i;
    ASSERT_LE(std::fabs(e - ref.out[i]), decode_tolerance(ref.out[i], ref.vmax[i], ref.score_abs[i / 256],
                                                          ref.attended[i / 256]))
        << "element " << i;
  }
}

// ---------------------------------------------------------------- bad data (spec §6)

TEST(EmuDecodeBadData, MaskedAndCountedExactlyLikeTheGenericPath) {
  DecodeCase c;
  c.qg = 6;
  c.block_size = 32;
  c.seq_lens = {190, 64, 100, 50, 300};
  c.max_blocks_per_seq = 10;
  // needed blocks made bad: seq 0 blocks 1 and 6 (6 starts at token 192 >= 190: not
  // needed, not counted), seq 2 block 0 (its first tile), seq 4 blocks 2 and 3 (a whole
  // tile-group's worth of tiles of one partition)
  c.bad_blocks = {{0, 1}, {0, 6}, {2, 0}, {4, 2}, {4, 3}};
  // seq 1 passes a negative length, seq 3 one longer than its table allows
  c.raw_seq_len_overrides = {{1, -5}, {3, 10 * 32 + 40}};
  const BothPaths both = check_both(c);
  EXPECT_EQ(both.emulated.status[uq::Counter::bad_block_ids], 4u);
  EXPECT_EQ(both.emulated.status[uq::Counter::negative_seq_lens], 1u);
  EXPECT_EQ(both.emulated.status[uq::Counter::long_seq_lens], 1u);
  EXPECT_EQ(both.emulated.status[uq::Counter::bad_slots], 0u);
  EXPECT_EQ(both.emulated.status[uq::Counter::nonfinite_inputs], 0u);
}

TEST(EmuDecodeBadData, SeveralHeadsCountOnce) {
  DecodeCase c;
  c.qg = 16;
  c.num_kv_heads = 3;
  c.block_size = 16;
  c.seq_lens = {60, 33};
  c.partitions = 3;
  c.bad_blocks = {{0, 0}, {0, 3}, {1, 2}};
  c.raw_seq_len_overrides = {{1, -1}};  // sequence 1 attends nothing: its bad block is not needed
  const BothPaths both = check_both(c);
  EXPECT_EQ(both.emulated.status[uq::Counter::bad_block_ids], 2u);
  EXPECT_EQ(both.emulated.status[uq::Counter::negative_seq_lens], 1u);
}

TEST(EmuDecodeBadData, EveryBlockBadGivesZeros) {
  DecodeCase c;
  c.block_size = 16;
  c.seq_lens = {40};
  c.bad_blocks = {{0, 0}, {0, 1}, {0, 2}};
  Variant v;
  v.poison_unattended = true;
  const BothPaths both = check_both(c, v);
  EXPECT_EQ(both.emulated.status[uq::Counter::bad_block_ids], 3u);
  for (std::uint16_t bits : both.emulated.out) ASSERT_EQ(bits, 0u);
}

// ---------------------------------------------------------------- revision 2

std::vector<std::uint32_t> bits_of(const std::vector<float>& v) {
  std::vector<std::uint32_t> b(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) std::memcpy(&b[i], &v[i], 4);
  return b;
}

TEST(EmuDecodeSplitK, OnePartitionWritesOutItselfBitIdenticalToTheTwoStages) {
  DecodeCase c;
  c.qg = 8;
  c.num_kv_heads = 2;
  c.block_size = 32;
  c.seq_lens = {0, 1, 100, 255, 256, 700};
  c.partitions = 1;
  const BothPaths direct = check_both(c);  // dense out: 8-byte stores
  Variant staged;
  staged.two_stages = true;
  const BothPaths two = check_both(c, staged);
  ASSERT_EQ(direct.emulated.out, two.emulated.out);
  ASSERT_EQ(bits_of(direct.emulated.lse), bits_of(two.emulated.lse));
  Variant strided;  // dim stride 2: 2-byte stores
  strided.strided_out = true;
  const BothPaths s = check_both(c, strided);
  ASSERT_EQ(s.emulated.out, direct.emulated.out);
  ASSERT_EQ(bits_of(s.emulated.lse), bits_of(direct.emulated.lse));
}

TEST(EmuDecodeSplitK, OnePartitionEqualsManyWhenOneHoldsAllTokens) {
  // Every sequence fits the first tile-group: with P = 4 partition 0 holds all tokens, the
  // reducer combines one partition and must return it unchanged.
  for (int qg : {6, 16}) {
    DecodeCase c;
    c.qg = qg;
    c.block_size = 16;
    c.seq_lens = {0, 1, 17, 200, 256};
    c.max_blocks_per_seq = 40;
    c.seed = 60 + qg;
    c.partitions = 1;
    const BothPaths one = check_both(c);
    c.partitions = 4;
    const BothPaths four = check_both(c);
    ASSERT_EQ(one.emulated.out, four.emulated.out) << "qg " << qg;
    ASSERT_EQ(bits_of(one.emulated.lse), bits_of(four.emulated.lse)) << "qg " << qg;
  }
}

TEST(EmuDecodeSplitK, NarrowerTableThanThePlan) {
  DecodeCase c;
  c.qg = 6;
  c.block_size = 16;
  c.seq_lens = {300, 17, 0, 160};
  c.max_blocks_per_seq = 20;
  c.raw_seq_len_overrides = {{3, 20 * 16 + 50}};  // clamped to the live table's 320 tokens
  Variant v;
  v.plan_extra_blocks = 500;  // the plan's grid: 8320 tokens
  const BothPaths both = check_both(c, v);
  EXPECT_EQ(both.partitions, uq::choose_partitions(4, 520, 16).partitions);
  EXPECT_EQ(both.emulated.status[uq::Counter::long_seq_lens], 1u);
}

// Six non-finite (sequence, query head) rows over two KV heads, as in tests/test_decode_bad_data.cpp.
DecodeCase nonfinite_case(bool rotated, int partitions) {
  constexpr std::uint16_t kNan = 0x7FC0, kSignalingNan = 0x7F81, kPlusInf = 0x7F80, kMinusInf = 0xFF80;
  DecodeCase c;
  c.qg = 6;
  c.num_kv_heads = 2;
  c.block_size = 32;
  c.q_rotated = rotated;
  c.partitions = partitions;
  c.seq_lens = {300, 0, 40, 1000, 20};
  c.bad_blocks = {{4, 0}};
  c.q_overrides = {{0, 1, 5, kNan},     {0, 7, 255, kPlusInf},       {1, 3, 0, kMinusInf}, {2, 0, 1, kNan},
                   {2, 0, 2, kPlusInf}, {3, 11, 255, kSignalingNan}, {4, 6, 100, kNan}};
  return c;
}

TEST(EmuDecodeBadData, NonFiniteQueryGivesNanRowsCountedOnce) {
  for (bool rotated : {false, true})
    for (int partitions : {0, 1, 7}) {
      const BothPaths both = check_both(nonfinite_case(rotated, partitions));
      EXPECT_EQ(both.emulated.status[uq::Counter::nonfinite_inputs], 6u)
          << "P " << partitions << (rotated ? " rotated" : " raw");
      EXPECT_EQ(both.emulated.status[uq::Counter::bad_block_ids], 1u);
    }
}

// ---------------------------------------------------------------- launcher arguments

uq::gfx950::DecodePartitionsLaunch valid_launch(std::vector<std::uint8_t>& cache) {
  uq::gfx950::DecodePartitionsLaunch l;
  cache.assign(2 * 16 * 272 + 4, 0);
  l.cache = cache.data();
  l.num_blocks = 2;
  l.block_stride = 16 * 272;
  l.block_size = 16;
  l.num_kv_heads = 1;
  l.slot_bytes = 272;
  l.max_blocks_per_seq = 32;  // 512 tokens
  l.num_seqs = 1;
  l.qg = 8;
  l.partitions = 2;
  l.tgpp = 1;
  l.q_stride_seq = 8 * 256;
  l.q_stride_head = 256;
  return l;
}

std::string error_of(const uq::gfx950::DecodePartitionsLaunch& l) {
  try {
    uq::gfx950::emulate_decode_partitions(l);
  } catch (const uq::Error& e) {
    return e.what();
  }
  return "";
}

TEST(EmuDecodeLaunch, RejectsWhatTheKernelCannotAddress) {
  std::vector<std::uint8_t> cache;
  {
    auto l = valid_launch(cache);
    l.num_seqs = 0;  // nothing to launch: no error, no work
    EXPECT_EQ(error_of(l), "");
  }
  const auto expect = [&](auto change, const std::string& fragment) {
    auto l = valid_launch(cache);
    l.num_seqs = 0;
    change(l);
    const std::string what = error_of(l);
    EXPECT_NE(what.find("uq::gfx950::launch_decode_partitions"), std::string::npos) << what;
    EXPECT_NE(what.find(fragment), std::string::npos) << "'" << what << "' lacks '" << fragment << "'";
  };
  using L = uq::gfx950::DecodePartitionsLaunch;
  expect([](L& l) { l.qg = 4; }, "argument 'qg': expected 6, 8 or 16, got 4");
  expect([](L& l) { l.block_size = 48; }, "argument 'block_size'");
  expect([](L& l) { l.tgpp = 0; }, "argument 'tgpp'");
  expect([](L& l) { l.partitions = 1; }, "argument 'partitions * tgpp': expected * 256 >= max_blocks_per_seq * block_size = 512, got 1 * 1");
  expect([](L& l) { l.slot_bytes = 274; }, "argument 'slot_bytes'");
  expect([](L& l) { l.block_stride = 16 * 272 + 2; }, "4-byte aligned base and block stride");
  expect([](L& l) { l.cache += 2; }, "4-byte aligned base and block stride");
  expect([](L& l) { l.block_stride = 100; }, "argument 'block_stride'");
  expect([](L& l) { l.q_stride_head = std::int64_t{1} << 30; }, "argument 'q': expected the qg rows of one KV head within 2^31 bytes");
  expect([](L& l) { l.num_kv_heads = 70000; }, "argument 'num_kv_heads'");
  static std::uint16_t out[256];
  static float lse[8];
  expect([](L& l) { l.out = out; }, "argument 'out': expected set only with partitions == 1 (no reducer)");
  expect([](L& l) { l.lse = lse; }, "argument 'lse': expected set only with out (partitions == 1)");
  expect(
      [](L& l) {
        l.partitions = 1;
        l.tgpp = 2;
        l.out = out;
        l.out_stride_head = std::int64_t{1} << 30;
      },
      "argument 'out': expected the qg rows of one KV head within 2^31 bytes");
}

TEST(EmuDecodeLaunch, EmptyBatchLaunchesNothing) {
  DecodeCase c;
  c.seq_lens = {};
  c.max_blocks_per_seq = 4;
  const BothPaths both = run_both(c, {});
  EXPECT_TRUE(both.emulated.out.empty());
  EXPECT_TRUE(both.emulated.status.ok());
}

}  // namespace
