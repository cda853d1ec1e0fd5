// The 64-bit global atomic add of isa.hpp (atomic_add_u64, global_atomic_add_x2 on gfx950)
// in the emulator: every lane's addition lands once, the returned values are the previous
// contents (a chain in some order), workgroups accumulate, misaligned addresses fault.
#include "emu_test_support.hpp"

#include <algorithm>

namespace emu_test {
namespace {

TEST(EmuAtomic, EveryLaneAddsOnceAndGetsThePreviousValue) {
  alignas(8) unsigned long long counter[3] = {0, 1000, 0};
  std::vector<unsigned long long> old(64);
  run_one_wave([&] {
    const std::uint32_t l = lane_id();
    old[l] = atomic_add_u64(&counter[1], static_cast<unsigned long long>(l) + 1);
  });
  EXPECT_EQ(counter[1], 1000ull + 64 * 65 / 2);
  EXPECT_EQ(counter[0], 0ull);  // neighbours untouched
  EXPECT_EQ(counter[2], 0ull);
  // Sorted by the value each lane saw, old + own addition is the next lane's old value.
  std::vector<std::pair<unsigned long long, unsigned long long>> seen;
  for (std::uint32_t l = 0; l < 64; ++l) seen.push_back({old[l], l + 1ull});
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen.front().first, 1000ull);
  for (std::size_t i = 0; i + 1 < seen.size(); ++i) EXPECT_EQ(seen[i].first + seen[i].second, seen[i + 1].first);
}

TEST(EmuAtomic, WorkgroupsAccumulateAndCarryPast32Bits) {
  alignas(8) unsigned long long counter = 0xFFFFFFF0ull;
  uq::emu::LaunchConfig config;
  config.grid = {3, 2, 1};
  config.waves_per_workgroup = 2;
  uq::emu::launch(config, [&] {
    if (thread_id() % 5 == 0) atomic_add_u64(&counter, 1ull << 20);  // divergent: a per-lane operation
  });
  const unsigned long long adders = 6 * ((128 + 4) / 5);  // thread ids 0, 5, ..., 125 per workgroup
  EXPECT_EQ(counter, 0xFFFFFFF0ull + adders * (1ull << 20));
}

TEST(EmuAtomic, MisalignedAddressFaults) {
  alignas(8) unsigned char bytes[24] = {};
  uq::emu::LaunchConfig config;
  const std::string what = fault_of(config, [&] {
    atomic_add_u64(reinterpret_cast<unsigned long long*>(bytes + 4), 1ull);
  });
  EXPECT_NE(what.find("misaligned atomic"), std::string::npos) << what;
  EXPECT_NE(what.find("test_emu_atomic.cpp"), std::string::npos) << what;
}

}  // namespace
}  // namespace emu_test
