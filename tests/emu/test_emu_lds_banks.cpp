// The emulator's LDS bank-conflict profile (arch/emu/lds_banks.cpp): the cost model on
// patterns whose cycles follow from the bank rule by hand, and the gathering of a wave's 64
// addresses per access site (the instances of one site, lanes predicated off, a transpose read).
#include "emu_test_support.hpp"

namespace emu_test {
namespace {

using uq::emu::lds_bank_cost;

constexpr std::uint64_t kAll = ~std::uint64_t{0};

std::uint32_t (&addresses(std::uint32_t (&a)[64], std::uint32_t stride, std::uint32_t base = 0))[64] {
  for (std::uint32_t l = 0; l < 64; ++l) a[l] = base + stride * l;
  return a;
}

TEST(EmuLdsBanks, ConsecutiveDwordsAreOnePhaseOfOneCycleOn64Banks) {
  std::uint32_t a[64];
  const auto c64 = lds_bank_cost(addresses(a, 4), kAll, 4, 64);
  EXPECT_EQ(c64.phases, 1u);
  EXPECT_EQ(c64.cycles, 1u);
  // 32 banks: two half-wave phases of one cycle
  const auto c32 = lds_bank_cost(a, kAll, 4, 32);
  EXPECT_EQ(c32.phases, 2u);
  EXPECT_EQ(c32.cycles, 2u);
}

TEST(EmuLdsBanks, OneBankForAllLanesSerialisesThemUnlessTheyShareTheDword) {
  std::uint32_t a[64];
  const auto same_bank = lds_bank_cost(addresses(a, 256), kAll, 4, 64);  // 256 B = 64 banks apart
  EXPECT_EQ(same_bank.cycles, 64u);
  EXPECT_EQ(same_bank.worst, 64u);
  const auto broadcast = lds_bank_cost(addresses(a, 0, 128), kAll, 4, 64);
  EXPECT_EQ(broadcast.cycles, 1u);
  // half the lanes switched off: 32 distinct dwords in one bank
  const auto half = lds_bank_cost(addresses(a, 256), 0x5555555555555555ull, 4, 64);
  EXPECT_EQ(half.cycles, 32u);
}

TEST(EmuLdsBanks, SixteenByteAccessesAreServedSixteenLanesAPhase) {
  std::uint32_t a[64];
  const auto c = lds_bank_cost(addresses(a, 16), kAll, 16, 64);
  EXPECT_EQ(c.phases, 4u);
  EXPECT_EQ(c.cycles, 4u);
  // a 32-byte stride puts lanes l and l + 8 of a phase on the same 4 banks
  const auto strided = lds_bank_cost(addresses(a, 32), kAll, 16, 64);
  EXPECT_EQ(strided.phases, 4u);
  EXPECT_EQ(strided.cycles, 8u);
}

// The decode kernel's transposed V read (decode_kernel.hpp, accumulate_pv): lane l reads 8
// bytes at row l >> 2, byte 8 (l & 3). A phase of 32 lanes holds rows 0..7 (16..23 ...), each
// 8 dwords wide from bank 4r (528-byte rows: 132 dwords = 4 mod 64), so rows r and r + 1
// overlap on 4 banks: 2 cycles. With 544-byte rows (8 mod 64) the 8 rows tile the 64 banks.
TEST(EmuLdsBanks, TransposedVReadIsTwoWayAt528ByteRowsAndFreeAt544) {
  std::uint32_t a[64];
  for (std::uint32_t row_bytes : {528u, 544u}) {
    for (std::uint32_t l = 0; l < 64; ++l) a[l] = (l >> 2) * row_bytes + 8 * (l & 3);
    const auto c = lds_bank_cost(a, kAll, 8, 64);
    EXPECT_EQ(c.phases, 2u);
    EXPECT_EQ(c.cycles, row_bytes == 528 ? 4u : 2u) << row_bytes;
  }
}

TEST(EmuLdsBanks, ProfileGathersEachSitesInstancesFromEveryLane) {
  uq::emu::reset_lds_bank_profile();
  uq::emu::LaunchConfig config;
  config.profile_lds_banks = true;
  int store_line = 0, load_line = 0, tr_line = 0;
  uq::emu::launch(config, [&] {
    const std::uint32_t lds = lds_allocate<64 * 256>();
    const std::uint32_t l = lane_id();
    for (int i = 0; i < 3; ++i) {
      // 3 instances: one bank for all lanes (stride 256 B), odd lanes only
      store_line = __LINE__ + 1;
      if (l & 1) lds_store<std::uint32_t>(lds + 256 * l + 4 * static_cast<std::uint32_t>(i), l);
    }
    barrier();
    load_line = __LINE__ + 1;
    (void)lds_load<u32x4>(lds + 16 * l);  // conflict-free
    tr_line = __LINE__ + 1;
    (void)ds_read_b64_tr_b16(lds + (l >> 2) * 528 + 8 * (l & 3));
  });
  const auto profile = uq::emu::lds_bank_profile();
  ASSERT_EQ(profile.size(), 3u);
  const auto& st = profile[0];
  EXPECT_EQ(st.line, store_line);
  EXPECT_STREQ(st.op, "ds_write");
  EXPECT_EQ(st.bytes, 4u);
  EXPECT_EQ(st.instances, 3u);
  EXPECT_EQ(st.phases64, 3u);
  EXPECT_EQ(st.cycles64, 3u * 32u);  // 32 active lanes in one bank
  EXPECT_EQ(st.max_degree64, 32u);
  EXPECT_EQ(profile[1].line, load_line);
  EXPECT_EQ(profile[1].instances, 1u);
  EXPECT_EQ(profile[1].cycles64, profile[1].phases64);
  EXPECT_EQ(profile[2].line, tr_line);
  EXPECT_STREQ(profile[2].op, "ds_read_tr");
  EXPECT_EQ(profile[2].cycles64, 2u * profile[2].phases64);
  uq::emu::reset_lds_bank_profile();
  EXPECT_TRUE(uq::emu::lds_bank_profile().empty());
}

TEST(EmuLdsBanks, NothingIsRecordedWithoutTheFlag) {
  uq::emu::reset_lds_bank_profile();
  run_one_wave([&] {
    const std::uint32_t lds = lds_allocate<256>();
    lds_store<std::uint32_t>(lds + 4 * (lane_id() & 63), 1u);
  });
  EXPECT_TRUE(uq::emu::lds_bank_profile().empty());
}

}  // namespace
}  // namespace emu_test
