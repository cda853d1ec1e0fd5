// Cross-lane operations in the emulator: ds_swizzle modes and their encoders (spec §4),
// xor shuffles, bpermute, readfirstlane / readlane, ballot.
#include <utility>

#include "emu_test_support.hpp"

namespace emu_test {
namespace {

// The LLVM assembler's macro encodings quoted in spec §4.3.
static_assert(swizzle_quad_perm(0, 1, 2, 3) == 0x80E4, "QUAD_PERM identity");
static_assert(swizzle_quad_perm(3, 2, 1, 0) == 0x801B, "QUAD_PERM reverse");
static_assert(swizzle_swap(16) == 0x401F, "SWAP 16");
static_assert(swizzle_swap(1) == 0x041F, "SWAP 1");
static_assert(swizzle_reverse(32) == 0x7C1F, "REVERSE 32");
static_assert(swizzle_reverse(4) == 0x0C1F, "REVERSE 4");
static_assert(swizzle_broadcast(8, 3) == 0x0078, "BROADCAST 8 3");
static_assert(swizzle_bitmask(0x04, 0, 0) == 0x0004, "BITMASK_PERM 00p00");
static_assert(swizzle_bitmask(0x06, 0x08, 0x02) == 0x0906, "BITMASK_PERM 01pi0");
static_assert(swizzle_rotate(false, 3) == 0xC060, "ROTATE left 3");
static_assert(swizzle_fft(5) == 0xE005, "FFT 5");

// Runs ds_swizzle<Pattern> on lane-tagged values; returns each lane's source lane.
template <std::uint16_t Pattern>
std::vector<std::uint32_t> swizzle_sources() {
  std::vector<std::uint32_t> got(64, kPoison);
  run_one_wave([&] {
    const float tag = 1000.0f + static_cast<float>(lane_id());  // a float goes through too
    got[lane_id()] = static_cast<std::uint32_t>(ds_swizzle<Pattern>(tag) - 1000.0f);
  });
  return got;
}

TEST(EmuCrossLane, SwizzleSwapReverseBroadcast) {
  const auto swap16 = swizzle_sources<swizzle_swap(16)>();
  const auto swap1 = swizzle_sources<swizzle_swap(1)>();
  const auto rev32 = swizzle_sources<swizzle_reverse(32)>();
  const auto rev4 = swizzle_sources<swizzle_reverse(4)>();
  const auto bcast = swizzle_sources<swizzle_broadcast(8, 3)>();
  for (std::uint32_t i = 0; i < 64; ++i) {
    EXPECT_EQ(swap16[i], i ^ 16) << i;
    EXPECT_EQ(swap1[i], i ^ 1) << i;
    // Reverse within each 32-lane half / each group of 4.
    EXPECT_EQ(rev32[i], (i & 32) + (31 - (i & 31))) << i;
    EXPECT_EQ(rev4[i], (i & ~3u) + (3 - (i & 3))) << i;
    EXPECT_EQ(bcast[i], (i & ~7u) + 3) << i;  // lane 3 of each group of 8
  }
}

TEST(EmuCrossLane, SwizzleBitmaskModeIsPerHalf) {
  // "01pi0": bit 4 forced 0, bit 3 forced 1, bit 2 kept, bit 1 inverted, bit 0 forced 0;
  // bit 5 (the half) always kept.
  const auto got = swizzle_sources<swizzle_bitmask(0x06, 0x08, 0x02)>();
  for (std::uint32_t i = 0; i < 64; ++i) {
    const std::uint32_t expected = (i & 32) | 8 | (i & 4) | (~i & 2);
    EXPECT_EQ(got[i], expected) << i;
  }
}

TEST(EmuCrossLane, SwizzleQuadPerm) {
  const auto rev = swizzle_sources<swizzle_quad_perm(3, 2, 1, 0)>();
  const auto mix = swizzle_sources<swizzle_quad_perm(2, 2, 0, 1)>();
  const std::uint32_t mix_map[4] = {2, 2, 0, 1};
  for (std::uint32_t i = 0; i < 64; ++i) {
    EXPECT_EQ(rev[i], (i & ~3u) + 3 - (i & 3)) << i;
    EXPECT_EQ(mix[i], (i & ~3u) + mix_map[i & 3]) << i;
  }
}

TEST(EmuCrossLane, SwizzleRotateWrapsWithinHalves) {
  // ISA example: rotate left by 1, thread 31 receives thread 0's value. Wrapping within the
  // 32-lane half is the spec's working hypothesis (UNCONFIRMED).
  const auto left1 = swizzle_sources<swizzle_rotate(false, 1)>();
  const auto right3 = swizzle_sources<swizzle_rotate(true, 3)>();
  EXPECT_EQ(left1[31], 0u);
  EXPECT_EQ(left1[63], 32u);
  for (std::uint32_t i = 0; i < 64; ++i) {
    EXPECT_EQ(left1[i], (i & 32) + ((i + 1) & 31)) << i;
    EXPECT_EQ(right3[i], (i & 32) + ((i + 29) & 31)) << i;
  }
}

TEST(EmuCrossLane, SwizzleFftModeFollowsTheSpecFormula) {
  // j = (bitreverse5(i & 31) >> popcount(mask)) | (i & mask) | (i & 32), spec §4.2.
  const auto got = swizzle_sources<swizzle_fft(0x05)>();
  for (std::uint32_t i = 0; i < 64; ++i) {
    std::uint32_t reversed = 0;
    for (int b = 0; b < 5; ++b) reversed |= ((i >> b) & 1u) << (4 - b);
    EXPECT_EQ(got[i], (reversed >> 2) | (i & 5) | (i & 32)) << i;
  }
}

template <int... Masks>
void check_xor_masks(std::integer_sequence<int, Masks...>) {
  // One launch, every mask 1..63 (each its own template instance, like on the GPU).
  std::vector<std::uint32_t> got(64 * 64, kPoison);
  run_one_wave([&] {
    const std::uint32_t l = lane_id();
    ((got[64 * (Masks + 1) + l] = shfl_xor<Masks + 1>(l * 3 + 1)), ...);
  });
  for (std::uint32_t m = 1; m < 64; ++m) {
    for (std::uint32_t l = 0; l < 64; ++l) {
      ASSERT_EQ(got[64 * m + l], (l ^ m) * 3 + 1) << "mask " << m << " lane " << l;
    }
  }
}

TEST(EmuCrossLane, ShuffleXorEveryMask) { check_xor_masks(std::make_integer_sequence<int, 63>{}); }

TEST(EmuCrossLane, ShuffleXorOfFloatsKeepsBits) {
  std::vector<float> got(64, 0.0f);
  run_one_wave([&] {
    const float x = lane_id() == 5 ? -0.0f : f32_from_bits(0x7FC00000u | lane_id());
    got[lane_id()] = shfl_xor<32>(shfl_xor<16>(x));
  });
  for (std::uint32_t l = 0; l < 64; ++l) {
    const std::uint32_t src = l ^ 48;
    EXPECT_EQ(bits_of(got[l]), src == 5 ? 0x80000000u : (0x7FC00000u | src)) << l;
  }
}

TEST(EmuCrossLane, BpermuteReadsAnyLane) {
  std::vector<std::uint32_t> src(64), got(64, kPoison);
  for (std::uint32_t l = 0; l < 64; ++l) src[l] = (l * 29 + 7) % 97;  // includes > 63
  run_one_wave([&] { got[lane_id()] = shfl(lane_id() + 500, src[lane_id()]); });
  for (std::uint32_t l = 0; l < 64; ++l) EXPECT_EQ(got[l], (src[l] & 63) + 500) << l;
}

TEST(EmuCrossLane, ReadfirstlaneReadlaneBallot) {
  std::vector<std::uint32_t> first(64), fifth(64);
  std::vector<std::uint64_t> votes(64);
  std::vector<float> f(64);
  run_one_wave([&] {
    const std::uint32_t l = lane_id();
    first[l] = readfirstlane(l + 11);
    fifth[l] = readlane(l * l, 37);
    f[l] = readlane(0.25f * static_cast<float>(l), 63);
    votes[l] = ballot(l % 5 == 2 || l == 63);
  });
  std::uint64_t expected = 0;
  for (std::uint32_t l = 0; l < 64; ++l) {
    if (l % 5 == 2 || l == 63) expected |= std::uint64_t{1} << l;
  }
  for (std::uint32_t l = 0; l < 64; ++l) {
    EXPECT_EQ(first[l], 11u);
    EXPECT_EQ(fifth[l], 37u * 37u);
    EXPECT_EQ(f[l], 15.75f);
    EXPECT_EQ(votes[l], expected);
  }
}

}  // namespace
}  // namespace emu_test
