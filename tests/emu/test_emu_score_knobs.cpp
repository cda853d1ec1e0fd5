// The gfx950 scorer's knob choice (arch/gfx950/score_knobs.hpp): a pure function of (batch,
// max blocks, QL, H, CU count). These tests pin the properties the kernel and the launcher
// rely on for every shape of a sweep, and a few chosen values.
#include "gfx950/score_knobs.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace {

using uq::gfx950::ScoreKnobs;
using uq::gfx950::choose_score_knobs;
using uq::gfx950::score_chunks;
namespace sc = uq::gfx950::scorer;

std::string shape(int batch, int mb, int ql, int h, int cus) {
  return "batch " + std::to_string(batch) + ", max_blocks " + std::to_string(mb) + ", QL " + std::to_string(ql) +
         ", H " + std::to_string(h) + ", CUs " + std::to_string(cus);
}

// For every shape of the sweep: chunks fit LDS, are as few as the LDS allows and none is
// empty, per-wave mode exactly when a
// chunk has fewer requests than waves, buffered only in shared mode with units of 4..16,
// every workgroup's first unit exists (no workgroup without work when max_blocks > 0), and
// the grid is near the target of 2 workgroups per CU without exceeding it needlessly.
TEST(EmuScoreKnobs, PropertiesOverASweep) {
  int checked = 0;
  for (int batch : {1, 2, 3, 4, 5, 8, 15, 17, 63, 64, 65, 129, 257, 1025})
    for (int mb : {1, 2, 7, 16, 64, 127, 1000, 8192})
      for (int ql : {1, 2, 4, 8, 16, 32})
        for (int h : {1, 2, 4}) {
          if (ql * h > 32) continue;
          for (int cus : {0, 4, 80, 256}) {
            const ScoreKnobs k = choose_score_knobs(batch, mb, ql, h, cus);
            const std::string what = shape(batch, mb, ql, h, cus);
            const int cmax = sc::chunk_max(sc::padded_columns(ql * h));
            ASSERT_GE(k.chunk, 1) << what;
            ASSERT_LE(k.chunk, cmax) << what;
            const int chunks = score_chunks(batch, k);
            ASSERT_GE(static_cast<std::int64_t>(chunks) * k.chunk, batch) << what;
            ASSERT_LT(static_cast<std::int64_t>(chunks - 1) * k.chunk, batch) << what << ": an empty chunk";
            ASSERT_EQ(chunks, (batch + cmax - 1) / cmax) << what << ": the fewest chunks the LDS allows";
            ASSERT_EQ(k.per_wave, k.chunk < sc::kWaves) << what;
            ASSERT_GE(k.splits, 1) << what;
            ASSERT_GE(k.unit, 1) << what;
            if (k.buffered) {
              ASSERT_FALSE(k.per_wave) << what;
              ASSERT_GE(k.unit, 4) << what;
              ASSERT_LE(k.unit, sc::kUnitMax) << what;
            } else {
              ASSERT_EQ(k.unit, 1) << what;
            }
            const std::int64_t slots = k.per_wave ? sc::kWaves : 1;
            // the last workgroup's first unit starts below max_blocks
            ASSERT_LT((static_cast<std::int64_t>(k.splits) - 1) * slots * k.unit, mb) << what;
            const std::int64_t target = 2 * (cus > 0 ? cus : 256);
            const std::int64_t grid = static_cast<std::int64_t>(chunks) * k.splits;
            ASSERT_LE(grid, std::max<std::int64_t>(target + chunks, chunks)) << what;
            ++checked;
          }
        }
  EXPECT_GT(checked, 5000);
}

// The knobs depend on nothing else: the same arguments give the same knobs (graph-stable).
TEST(EmuScoreKnobs, IsAPureFunctionAndConstexpr) {
  constexpr ScoreKnobs a = choose_score_knobs(32, 1024, 8, 4, 256);
  static_assert(a.chunk == 8 && a.splits >= 1, "usable in constant expressions");
  const ScoreKnobs b = choose_score_knobs(32, 1024, 8, 4, 256);
  EXPECT_EQ(a.chunk, b.chunk);
  EXPECT_EQ(a.splits, b.splits);
  EXPECT_EQ(a.per_wave, b.per_wave);
  EXPECT_EQ(a.unit, b.unit);
  EXPECT_EQ(a.buffered, b.buffered);
}

// Chosen values (256 CUs: a target of 512 workgroups).
TEST(EmuScoreKnobs, ChosenValues) {
  // One request, 128K tokens, S4H1: per-wave, one position per wave, 250 workgroups.
  ScoreKnobs k = choose_score_knobs(1, 1000, 4, 1, 256);
  EXPECT_EQ(k.chunk, 1);
  EXPECT_TRUE(k.per_wave);
  EXPECT_FALSE(k.buffered);
  EXPECT_EQ(k.splits, 250);
  // 128 requests, S4H1: 2 chunks of 64, shared positions, 256 workgroups per chunk.
  k = choose_score_knobs(128, 1000, 4, 1, 256);
  EXPECT_EQ(k.chunk, 64);
  EXPECT_FALSE(k.per_wave);
  EXPECT_FALSE(k.buffered);  // 2000 / 512 = 3 positions per workgroup: below 4
  EXPECT_EQ(k.splits, 256);
  // 32 requests, 128K tokens, S8H4 (32 columns): 4 chunks of 8, buffered units of 8 blocks.
  k = choose_score_knobs(32, 1024, 8, 4, 256);
  EXPECT_EQ(k.chunk, 8);
  EXPECT_FALSE(k.per_wave);
  EXPECT_TRUE(k.buffered);
  EXPECT_EQ(k.unit, 8);
  EXPECT_EQ(k.splits, 128);
  // 65 requests of 1 column: 2 chunks of 33.
  k = choose_score_knobs(65, 10, 1, 1, 256);
  EXPECT_EQ(k.chunk, 33);
  EXPECT_EQ(score_chunks(65, k), 2);
  EXPECT_EQ(k.splits, 10);
  // Short context: max_blocks limits the splits.
  k = choose_score_knobs(4, 3, 1, 1, 256);
  EXPECT_EQ(k.chunk, 4);
  EXPECT_FALSE(k.per_wave);
  EXPECT_EQ(k.splits, 3);
  // Unknown CU count: MI355X's 256.
  EXPECT_EQ(choose_score_knobs(1, 1000, 4, 1, 0).splits, 250);
  // Nothing to do still gives valid knobs.
  k = choose_score_knobs(0, 0, 1, 1, 256);
  EXPECT_EQ(k.chunk, 1);
  EXPECT_EQ(k.splits, 1);
  EXPECT_EQ(score_chunks(0, k), 0);
}

}  // namespace
