// The plan of an in-place cache update (src/cli/cache_update.hpp): which bytes of the
// file are read and written back, where they go in the compact cache the library's
// writer runs on, and how each token's slot is renumbered. The end-to-end results
// (bytes equal to the reference writer on the whole cache, memory bounded) are in
// test_cli_resource_bounds.cpp and test_cli_commands.cpp / test_cli_index.cpp.
#include "cli/cache_update.hpp"

#include <gtest/gtest.h>

namespace {

using uq::cli::CacheLayout;
using uq::cli::compact_slots;
using uq::cli::CompactSlots;
using uq::cli::SlotTransfer;

std::vector<std::vector<std::uint64_t>> as_rows(const std::vector<SlotTransfer>& t) {
  std::vector<std::vector<std::uint64_t>> rows;
  for (const SlotTransfer& x : t) rows.push_back({x.file_offset, x.compact_offset, x.bytes});
  return rows;
}

TEST(CliCacheUpdate, UltraQuantSlotsAreRowsOfAllHeadsMergedWhenAdjacent) {
  const CacheLayout layout = CacheLayout::ultraquant(2, 276);  // 552 bytes per slot
  // capacity 1000: 999999 is a bad slot, -1 a skipped token, 5 written twice.
  const CompactSlots p = compact_slots({5, -1, 6, 100, 5, 999999}, 1000, layout);
  EXPECT_EQ(p.distinct_slots, 3);
  EXPECT_EQ(p.compact_capacity, 16) << "one block of 16 slots";
  EXPECT_EQ(p.compact_bytes, 16u * 552u);
  EXPECT_EQ(p.token_slots, (std::vector<std::int64_t>{0, -1, 1, 2, 0, 16}))
      << "a bad slot stays out of range of the compact cache, so the writer still counts it";
  EXPECT_EQ(as_rows(p.transfers),
            (std::vector<std::vector<std::uint64_t>>{{5 * 552, 0, 2 * 552}, {100 * 552, 2 * 552, 552}}));
}

TEST(CliCacheUpdate, IndexSlotsAreCodesAndScalesOfTheirPage) {
  // Slot 127 ends page 0; 128 and 129 start page 1. In the compact cache they are
  // positions 0, 1, 2 of one page.
  const CompactSlots p = compact_slots({129, 127, 128}, 3 * 128, CacheLayout::index());
  EXPECT_EQ(p.distinct_slots, 3);
  EXPECT_EQ(p.compact_capacity, 128);
  EXPECT_EQ(p.compact_bytes, 9216u);
  EXPECT_EQ(p.token_slots, (std::vector<std::int64_t>{2, 0, 1}));
  EXPECT_EQ(as_rows(p.transfers), (std::vector<std::vector<std::uint64_t>>{
                                      {127 * 64, 0, 64},                  // codes of 127
                                      {8192 + 127 * 8, 8192, 8},          // its scales
                                      {9216, 64, 128},                    // codes of 128, 129
                                      {9216 + 8192, 8192 + 8, 16}}));     // their scales
}

TEST(CliCacheUpdate, NoValidSlotMeansAnEmptyCompactCache) {
  const CompactSlots p = compact_slots({-1, 64, -7}, 64, CacheLayout::ultraquant(1, 272));
  EXPECT_EQ(p.distinct_slots, 0);
  EXPECT_EQ(p.compact_capacity, 0);
  EXPECT_EQ(p.compact_bytes, 0u);
  EXPECT_TRUE(p.transfers.empty());
  EXPECT_EQ(p.token_slots, (std::vector<std::int64_t>{-1, 0, -7})) << "64 is bad: slot 0 of no slots";
}

}  // namespace
