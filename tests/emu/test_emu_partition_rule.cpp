// The gfx950 partition rule (arch/gfx950/partition_rule.hpp): the headline shapes' choices, the
// spec's coverage constraint and bounds, and the rule's optimum against a brute force over
// every TGPP for a sweep of plan shapes.
#include "gfx950/partition_rule.hpp"

#include <gtest/gtest.h>

#include <cstdint>

namespace {

using uq::gfx950::gfx950_partition_rule;
using uq::gfx950::PartitionRuleChoice;

constexpr std::int64_t kCus = 256;  // MI355X

// Usable at compile time (a plan may size its workspace from it).
static_assert(gfx950_partition_rule(16, 1, 2048, 64, kCus).partitions == 128, "16 x 131k: one round of 8 a CU");

TEST(gfx950PartitionRule, HeadlineShapes) {
  // 4 x 75k (1172 blocks of 64: 293 tile-groups), one KV head: 1172 workgroups, under one round
  const PartitionRuleChoice a = gfx950_partition_rule(4, 1, 1172, 64, kCus);
  EXPECT_EQ(a.partitions, 293);
  EXPECT_EQ(a.tgpp, 1);
  // 16 x 131k: 2048 workgroups of 4 tile-groups = one round of 8 a CU (the spec's P 256 / TGPP 2
  // is two rounds, P 512 four)
  const PartitionRuleChoice b = gfx950_partition_rule(16, 1, 2048, 64, kCus);
  EXPECT_EQ(b.partitions, 128);
  EXPECT_EQ(b.tgpp, 4);
  // 1 x 131k: one tile-group a workgroup
  const PartitionRuleChoice c = gfx950_partition_rule(1, 1, 2048, 64, kCus);
  EXPECT_EQ(c.partitions, 512);
  EXPECT_EQ(c.tgpp, 1);
  // a table of one tile-group: two partitions (P = 1 stays an override)
  const PartitionRuleChoice d = gfx950_partition_rule(3, 2, 4, 64, kCus);
  EXPECT_EQ(d.partitions, 2);
  EXPECT_EQ(d.tgpp, 1);
}

// rounds x TGPP of a choice, as the rule's comment defines it
std::int64_t cost_of(std::int64_t rows, std::int64_t slots, std::int64_t p, std::int64_t t) {
  return (rows * p + slots - 1) / slots * t;
}

TEST(gfx950PartitionRule, OptimalAmongEveryTgppAndWithinTheSpecsBounds) {
  int checked = 0;
  for (std::int64_t seqs : {1, 2, 3, 8, 16, 33, 64, 256})
    for (std::int64_t heads : {1, 2, 4, 8})
      for (std::int64_t blocks : {1, 3, 64, 1000, 1172, 2048, 4097, 16384, 65536})
        for (std::int64_t bs : {16, 64, 256})
          for (std::int64_t cus : {80, 256}) {
            const PartitionRuleChoice r = gfx950_partition_rule(seqs, heads, blocks, bs, cus);
            const std::int64_t width = blocks * bs, groups = (width + 255) / 256;
            ASSERT_GE(r.partitions, 2);
            ASSERT_LE(r.partitions, 4096);
            ASSERT_GE(r.tgpp, 1);
            // the spec's coverage: P * TGPP * 256 >= max_blocks_per_seq * block_size
            ASSERT_GE(static_cast<std::int64_t>(r.partitions) * r.tgpp * 256, width);
            // no smaller cost for any TGPP, and no fewer partitions at the same cost
            const std::int64_t rows = seqs * heads, slots = cus * uq::gfx950::kDecodeWorkgroupsPerCu;
            const std::int64_t got = cost_of(rows, slots, r.partitions, r.tgpp);
            for (std::int64_t t = 1; t <= groups; ++t) {
              std::int64_t p = (groups + t - 1) / t;
              if (p > 4096) continue;
              if (p < 2) p = 2;
              const std::int64_t c = cost_of(rows, slots, p, t);
              ASSERT_TRUE(c > got || (c == got && p >= r.partitions))
                  << seqs << " x " << blocks << " x " << bs << ", Hk " << heads << ", " << cus << " CUs: TGPP " << t
                  << " (P " << p << ") costs " << c << ", the rule's P " << r.partitions << " / TGPP " << r.tgpp
                  << " costs " << got;
            }
            ++checked;
          }
  EXPECT_EQ(checked, 8 * 4 * 9 * 3 * 2);
}

}  // namespace
