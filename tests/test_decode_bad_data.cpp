// Device-side data errors in decode (spec ultraquant.md §6): bad block ids, negative
// and too-long seq_lens are masked exactly as the reference masks them, counted once
// each, and reported by a checked call; nothing is read out of bounds (the ASan suite
// runs this file too). A query row holding a NaN or an infinity gives an all-NaN output row
// and a NaN lse, never a silent zero, and counts once per (sequence, query head).
#include "support/decode_case.hpp"

#include <gtest/gtest.h>

namespace {

using namespace uqtest;

// Decodes through an unchecked plan (bad data masked, not thrown), leaving its counters in status.
DecodeRunner unchecked_plan_runner(uq::Status& status) {
  return [&status](auto q, auto cache, auto tables, auto lens, auto out) {
    uq::DecodeConfig cfg;
    cfg.check = false;
    uq::DecodePlan<Exec> plan(Exec(), uq::decode_shape_of(q, cache, tables, cfg), cfg);
    plan.run(q, cache, tables, lens, out);
    status = plan.status();
  };
}

TEST(DecodeBadData, MaskedCountedAndMatchingReference) {
  DecodeCase c;
  c.qg = 6;
  c.block_size = 32;
  c.seq_lens = {190, 64, 100, 50};
  c.max_blocks_per_seq = 8;
  // needed blocks made bad: seq 0 blocks 1 and 6 (6 starts at token 192 >= 190: not needed,
  // not counted), seq 2 block 0 (its first tile)
  c.bad_blocks = {{0, 1}, {0, 6}, {2, 0}};
  // seq 1 passes a negative length, seq 3 one longer than its table allows
  c.raw_seq_len_overrides = {{1, -5}, {3, 8 * 32 + 40}};
  uq::Status st;
  check_decode(c, unchecked_plan_runner(st));
  EXPECT_EQ(st[uq::Counter::bad_block_ids], 2u);
  EXPECT_EQ(st[uq::Counter::negative_seq_lens], 1u);
  EXPECT_EQ(st[uq::Counter::long_seq_lens], 1u);
  EXPECT_EQ(st[uq::Counter::bad_slots], 0u);
}

TEST(DecodeBadData, CheckedCallThrowsNamingTheCounters) {
  DecodeCase c;
  c.seq_lens = {100, 70};
  c.bad_blocks = {{1, 0}};
  c.raw_seq_len_overrides = {{0, -1}};
  const DecodeData d = build_decode_data(c);
  const DeviceDecodeInputs in = decode_inputs_on_device(c, d);
  DeviceView<uq::bf16***> out("out", d.num_seqs, d.hq, 256);
  expect_error([&] { uq::decode(in.q, in.cache, in.tables, in.lens, out); },
               {"uq::decode", "block_tables/seq_lens", "bad_block_ids=1", "negative_seq_lens=1"});

  // Counters of an unchecked plan accumulate until reset.
  uq::DecodeConfig cfg;
  cfg.check = false;
  uq::DecodePlan<Exec> plan(Exec(), uq::decode_shape_of(in.q, in.cache, in.tables, cfg), cfg);
  plan.run(in.q, in.cache, in.tables, in.lens, out);
  plan.run(in.q, in.cache, in.tables, in.lens, out);
  EXPECT_EQ(plan.status()[uq::Counter::bad_block_ids], 2u);
  plan.reset_status();
  EXPECT_TRUE(plan.status().ok());
}

TEST(DecodeBadData, EveryBlockBadGivesZeros) {
  DecodeCase c;
  c.block_size = 16;
  c.seq_lens = {40};
  c.bad_blocks = {{0, 0}, {0, 1}, {0, 2}};
  uq::Status st;
  check_decode(c, unchecked_plan_runner(st));
  EXPECT_EQ(st[uq::Counter::bad_block_ids], 3u);
}

// ---------------------------------------------------------------- non-finite queries

constexpr std::uint16_t kNan = 0x7FC0, kSignalingNan = 0x7F81, kPlusInf = 0x7F80, kMinusInf = 0xFF80;

// Six non-finite (sequence, query head) rows over two KV heads: one NaN, one +inf; one in a
// sequence without tokens (-inf); a row with two bad elements (counted once); a signaling NaN
// in the last dim; and one in a sequence whose every block is bad.
DecodeCase nonfinite_case(bool rotated) {
  DecodeCase c;
  c.qg = 6;
  c.num_kv_heads = 2;
  c.block_size = 32;
  c.q_rotated = rotated;
  c.seq_lens = {300, 0, 40, 1000, 20};
  c.bad_blocks = {{4, 0}};
  c.q_overrides = {{0, 1, 5, kNan},       {0, 7, 255, kPlusInf},  {1, 3, 0, kMinusInf}, {2, 0, 1, kNan},
                   {2, 0, 2, kPlusInf},   {3, 11, 255, kSignalingNan}, {4, 6, 100, kNan}};
  return c;
}

TEST(DecodeBadData, NonFiniteQueryGivesNanRowsAndIsCountedOnce) {
  for (bool rotated : {false, true})  // pre-rotated: E4M3 would saturate an infinity to 448
    for (int partitions : {0, 1, 7}) {
      DecodeCase c = nonfinite_case(rotated);
      c.partitions = partitions;
      uq::Status st;
      check_decode_lse(c, [&](auto q, auto cache, auto tables, auto lens, auto out, auto lse) {
        uq::DecodeConfig cfg;
        cfg.check = false;
        cfg.q_rotated = rotated;
        cfg.partitions = partitions;
        uq::DecodePlan<Exec> plan(Exec(), uq::decode_shape_of(q, cache, tables, cfg), cfg);
        plan.run(q, cache, tables, lens, out, lse);
        st = plan.status();
      });
      EXPECT_EQ(st[uq::Counter::nonfinite_inputs], 6u) << "P " << partitions << (rotated ? " rotated" : " raw");
      EXPECT_EQ(st[uq::Counter::bad_block_ids], 1u);
    }
}

TEST(DecodeBadData, NonFiniteQueryThrowsWithCheckOn) {
  const DecodeCase c = nonfinite_case(false);
  const DecodeData d = build_decode_data(c);
  const DeviceDecodeInputs in = decode_inputs_on_device(c, d);
  DeviceView<uq::bf16***> out("out", d.num_seqs, d.hq, 256);
  expect_error([&] { uq::decode(in.q, in.cache, in.tables, in.lens, out); },
               {"uq::decode", "q/block_tables/seq_lens", "nonfinite_inputs=6", "bad_block_ids=1"});
  DeviceView<float**> lse("lse", d.num_seqs, d.hq);
  expect_error([&] { uq::decode(in.q, in.cache, in.tables, in.lens, out, lse); }, {"nonfinite_inputs=6"});
}

}  // namespace
