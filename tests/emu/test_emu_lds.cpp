// LDS in the emulator: allocation, bounds and alignment, per-workgroup poison, the race
// detector, and ds_read_b64_tr_b16 (spec §3).
#include "emu_test_support.hpp"

namespace emu_test {
namespace {

struct TagA {};
struct TagB {};

TEST(EmuLds, AllocationsAreStableAlignedAndDistinct) {
  std::vector<std::uint32_t> first(64), again(64), other(64);
  run_one_wave([&] {
    first[lane_id()] = lds_allocate<17, TagA>();
    other[lane_id()] = lds_allocate<100, TagB>();
    again[lane_id()] = lds_allocate<17, TagA>();
  });
  for (std::uint32_t l = 0; l < 64; ++l) {
    EXPECT_EQ(first[l], first[0]);
    EXPECT_EQ(again[l], first[0]);
    EXPECT_EQ(other[l], other[0]);
  }
  EXPECT_EQ(first[0] % 16, 0u);
  EXPECT_EQ(other[0] % 16, 0u);
  // Disjoint: [first, first + 17) and [other, other + 100).
  EXPECT_TRUE(first[0] + 17 <= other[0] || other[0] + 100 <= first[0]);
}

TEST(EmuLds, StoresAndLoadsOfEveryWidth) {
  std::vector<std::uint32_t> ok(64, 0);
  run_one_wave([&] {
    const std::uint32_t lds = lds_allocate<64 * 32>();
    const std::uint32_t l = lane_id();
    const std::uint32_t base = lds + 32 * l;
    lds_store<u32x4>(base, u32x4{l, l + 1, l + 2, l + 3});
    lds_store<u32x2>(base + 16, u32x2{l * 5, l * 7});
    lds_store<std::uint16_t>(base + 24, static_cast<std::uint16_t>(0xBEEF ^ l));
    lds_store<std::uint8_t>(base + 26, static_cast<std::uint8_t>(l));
    lds_store<float>(base + 28, 1.5f * l);
    const u32x4 q = lds_load<u32x4>(base);
    const u32x2 d = lds_load<u32x2>(base + 16);
    const bool good = q[0] == l && q[3] == l + 3 && d[0] == l * 5 && d[1] == l * 7 &&
                      lds_load<std::uint16_t>(base + 24) == (0xBEEF ^ l) &&
                      lds_load<std::uint8_t>(base + 26) == l &&
                      lds_load<float>(base + 28) == 1.5f * l &&
                      lds_load<std::uint32_t>(base + 4) == l + 1;  // a dword of the vector
    ok[l] = good ? 1 : 0;
  });
  for (std::uint32_t l = 0; l < 64; ++l) EXPECT_EQ(ok[l], 1u) << l;
}

TEST(EmuLds, OutOfBoundsAccessFaults) {
  int line = 0;
  const std::string message = fault_of(uq::emu::LaunchConfig{}, [&] {
    const std::uint32_t lds = lds_allocate<255>();
    line = __LINE__ + 1;
    (void)lds_load<std::uint16_t>(lds + 254 + (lane_id() == 33 ? 0u : 0u));  // 254..255: 1 byte past
  });
  EXPECT_NE(message.find("LDS out of bounds"), std::string::npos) << message;
  EXPECT_NE(message.find("lane 0 of wave 0"), std::string::npos) << message;
  EXPECT_NE(message.find(":" + std::to_string(line)), std::string::npos) << message;
  EXPECT_NE(message.find("255 bytes"), std::string::npos) << message;
  // The last byte itself is fine.
  EXPECT_EQ(fault_of(uq::emu::LaunchConfig{}, [&] {
              const std::uint32_t lds = lds_allocate<255>();
              (void)lds_load<std::uint8_t>(lds + 254);
            }),
            "");
}

TEST(EmuLds, MisalignedAccessFaults) {
  const std::string message = fault_of(uq::emu::LaunchConfig{}, [&] {
    const std::uint32_t lds = lds_allocate<1024>();
    lds_store<u32x4>(lds + 16 * lane_id() + (lane_id() == 7 ? 8u : 0u), u32x4{1, 2, 3, 4});
  });
  EXPECT_NE(message.find("misaligned LDS access: lane 7"), std::string::npos) << message;
  EXPECT_NE(message.find("aligned to 16"), std::string::npos) << message;
}

TEST(EmuLds, MoreThan160KiBFaults) {
  const std::string message = fault_of(uq::emu::LaunchConfig{}, [&] {
    (void)lds_allocate<100000, TagA>();
    (void)lds_allocate<70000, TagB>();
  });
  EXPECT_NE(message.find("exceeds the 163840 bytes"), std::string::npos) << message;
  // Exactly the limit is fine.
  EXPECT_EQ(fault_of(uq::emu::LaunchConfig{}, [&] { (void)lds_allocate<163840>(); }), "");
}

TEST(EmuLds, EveryWorkgroupStartsFromPoison) {
  // Workgroup 0 writes; workgroup 1 must not see it (poison 0xFF instead).
  uq::emu::LaunchConfig config;
  config.grid = {2, 1, 1};
  std::vector<std::uint32_t> seen(128, 0);
  uq::emu::launch(config, [&] {
    const std::uint32_t lds = lds_allocate<256>();
    const std::uint32_t wg = workgroup_id_x();
    seen[64 * wg + lane_id()] = lds_load<std::uint32_t>(lds + 4 * lane_id());
    barrier();
    lds_store(lds + 4 * lane_id(), 0x12345678u);
  });
  for (std::uint32_t i = 0; i < 128; ++i) EXPECT_EQ(seen[i], 0xFFFFFFFFu) << i;
  config.lds_poison = 0x00;
  uq::emu::launch(config, [&] {
    const std::uint32_t lds = lds_allocate<256>();
    seen[64 * workgroup_id_x() + lane_id()] = lds_load<std::uint32_t>(lds + 4 * lane_id());
  });
  for (std::uint32_t i = 0; i < 128; ++i) EXPECT_EQ(seen[i], 0u) << i;
}

// ---------------------------------------------------------------- race detector
TEST(EmuLds, ReadingAnotherLanesWriteWithoutSyncIsARace) {
  int line_w = 0, line_r = 0;
  const std::string message = fault_of(uq::emu::LaunchConfig{}, [&] {
    const std::uint32_t lds = lds_allocate<256>();
    line_w = __LINE__ + 1;
    lds_store(lds + 4 * lane_id(), lane_id());
    line_r = __LINE__ + 1;
    (void)lds_load<std::uint32_t>(lds + 4 * (lane_id() ^ 1));
  });
  // Lane 0 reads lane 1's slot before lane 1 has run: that read is unordered with lane 1's
  // later write (a write-after-read race from lane 1's side).
  EXPECT_NE(message.find("LDS race"), std::string::npos) << message;
  EXPECT_NE(message.find(":" + std::to_string(line_w)), std::string::npos) << message;
  EXPECT_NE(message.find(":" + std::to_string(line_r)), std::string::npos) << message;
}

TEST(EmuLds, ReadAfterAnotherLanesWriteIsARace) {
  // Lane 1 writes at a point lane 0 reaches later: lane 0 ran first and read before.
  const std::string message = fault_of(uq::emu::LaunchConfig{}, [&] {
    const std::uint32_t lds = lds_allocate<256>();
    lds_store(lds + 4 * lane_id(), 0u);
    wave_barrier();
    if (lane_id() == 1) lds_store(lds, 7u);
    (void)lds_load<std::uint32_t>(lds);  // lane 0 reads before lane 1's write, 2.. after
  });
  EXPECT_NE(message.find("LDS race"), std::string::npos) << message;
  EXPECT_NE(message.find("lane 1 of wave 0"), std::string::npos) << message;
}

TEST(EmuLds, WaveBarrierOrSwizzleOrdersAWave) {
  std::vector<std::uint32_t> got(64, kPoison);
  run_one_wave([&] {
    const std::uint32_t lds = lds_allocate<512>();
    lds_store(lds + 4 * lane_id(), lane_id() * 3);
    wave_barrier();
    got[lane_id()] = lds_load<std::uint32_t>(lds + 4 * (63 - lane_id()));
    (void)ds_swizzle<swizzle_swap(1)>(0u);  // any cross-lane operation orders too
    lds_store(lds + 4 * lane_id(), 1000u);  // overwrite what lane 63 - l read
  });
  for (std::uint32_t l = 0; l < 64; ++l) EXPECT_EQ(got[l], (63 - l) * 3);
}

TEST(EmuLds, WavesNeedABarrierNotAWaveBarrier) {
  uq::emu::LaunchConfig config;
  config.waves_per_workgroup = 2;
  const std::string message = fault_of(config, [&] {
    const std::uint32_t lds = lds_allocate<512>();
    lds_store(lds + 4 * thread_id(), thread_id());
    wave_barrier();
    (void)lds_load<std::uint32_t>(lds + 4 * (thread_id() ^ 64));
  });
  EXPECT_NE(message.find("LDS race"), std::string::npos) << message;
  EXPECT_NE(message.find("wave 1"), std::string::npos) << message;
}

TEST(EmuLds, RewritingIdenticalBytesIsNotARace) {
  // Every lane writes the same value to the same word (a common "all lanes publish the
  // uniform value" pattern); then reads it after a barrier.
  std::vector<std::uint32_t> got(64, kPoison);
  run_one_wave([&] {
    const std::uint32_t lds = lds_allocate<16>();
    lds_store(lds, 0xC0FFEEu);
    barrier();
    got[lane_id()] = lds_load<std::uint32_t>(lds);
  });
  for (std::uint32_t l = 0; l < 64; ++l) EXPECT_EQ(got[l], 0xC0FFEEu);
}

TEST(EmuLds, RaceDetectionCanBeSwitchedOff) {
  uq::emu::LaunchConfig config;
  config.detect_lds_races = false;
  EXPECT_EQ(fault_of(config, [&] {
              const std::uint32_t lds = lds_allocate<256>();
              lds_store(lds + 4 * lane_id(), lane_id());
              (void)lds_load<std::uint32_t>(lds + 4 * (lane_id() ^ 1));
            }),
            "");
}

// ---------------------------------------------------------------- ds_read_b64_tr_b16
TEST(EmuLds, TransposeReadFollowsTheLaneFormula) {
  // Lane l points at 8 bytes holding the tags (l, e) for e = 0..3, at a scrambled address;
  // result element j of lane 16G + d must be W[16G + 4j + (d >> 2)][d & 3] (spec §3.2).
  std::vector<std::uint16_t> got(64 * 4, 0);
  const auto slot = [](std::uint32_t l) { return (l * 37 + 11) % 64; };  // a permutation
  run_one_wave([&] {
    const std::uint32_t lds = lds_allocate<64 * 8>();
    const std::uint32_t l = lane_id();
    const std::uint32_t addr = lds + 8 * slot(l);
    lds_store(addr, u32x2{(l << 10 | 0) | (l << 10 | 1) << 16, (l << 10 | 2) | (l << 10 | 3) << 16});
    barrier();
    const i16x4 r = ds_read_b64_tr_b16(addr);
    for (int j = 0; j < 4; ++j) got[4 * l + j] = static_cast<std::uint16_t>(r[j]);
  });
  for (std::uint32_t lane = 0; lane < 64; ++lane) {
    const std::uint32_t group = lane / 16, d = lane % 16;
    for (std::uint32_t j = 0; j < 4; ++j) {
      const std::uint32_t src = 16 * group + 4 * j + d / 4, e = d % 4;
      EXPECT_EQ(got[4 * lane + j], (src << 10) | e) << "lane " << lane << " element " << j;
    }
  }
}

TEST(EmuLds, TransposeReadRecipeGivesTheBf16MfmaBOperand) {
  // Spec §3.3: with a row-major 16-bit B[16][16] tile in LDS, lane 16G + t addressing
  // element (k = 4G + t/4, n = 4(t%4)) receives B[4g + j][r] -- i.e. element j of lane l is
  // B[4(l>>4) + j][l & 15], the 16x16x16 MFMA B layout.
  std::vector<std::uint16_t> got(64 * 4, 0);
  run_one_wave([&] {
    const std::uint32_t lds = lds_allocate<16 * 16 * 2>();
    const std::uint32_t l = lane_id();
    for (std::uint32_t i = 0; i < 4; ++i) {  // lane l writes 4 elements of row l/4
      const std::uint32_t k = l / 4, n = 4 * (l % 4) + i;
      lds_store<std::uint16_t>(lds + 2 * (16 * k + n), static_cast<std::uint16_t>(100 * k + n));
    }
    barrier();
    const std::uint32_t G = l / 16, t = l % 16;
    const i16x4 r = ds_read_b64_tr_b16(lds + 2 * (16 * (4 * G + t / 4) + 4 * (t % 4)));
    for (int j = 0; j < 4; ++j) got[4 * l + j] = static_cast<std::uint16_t>(r[j]);
  });
  for (std::uint32_t l = 0; l < 64; ++l) {
    for (std::uint32_t j = 0; j < 4; ++j) {
      EXPECT_EQ(got[4 * l + j], 100 * (4 * (l / 16) + j) + l % 16) << "lane " << l << " j " << j;
    }
  }
}

TEST(EmuLds, TransposeReadChecksAlignmentAndBounds) {
  std::string message = fault_of(uq::emu::LaunchConfig{}, [&] {
    const std::uint32_t lds = lds_allocate<1024>();
    (void)ds_read_b64_tr_b16(lds + 8 * lane_id() + (lane_id() == 40 ? 4u : 0u));
  });
  EXPECT_NE(message.find("misaligned LDS access: lane 40"), std::string::npos) << message;
  message = fault_of(uq::emu::LaunchConfig{}, [&] {
    const std::uint32_t lds = lds_allocate<504>();
    (void)ds_read_b64_tr_b16(lds + 8 * lane_id());  // lane 63 reads bytes 504..511
  });
  EXPECT_NE(message.find("LDS out of bounds: lane 63"), std::string::npos) << message;
}

}  // namespace
}  // namespace emu_test
