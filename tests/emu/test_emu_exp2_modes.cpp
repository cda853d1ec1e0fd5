// The emulated v_exp_f32's two modes (arch/emu/emulator.hpp, Exp2Mode): correctly rounded
// (the default), and perturbed by exactly one ulp, up or down by a fixed hash of x — what the
// decode tests run with to show their tolerances cover a ~1 ulp hardware exp2.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "emu/emulator.hpp"
#include "gfx950/isa.hpp"

namespace {

using uq::emu::Exp2Mode;

// Restores the process's mode (it may come from UQ_EMU_EXP2) after each test.
class EmuExp2Modes : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = uq::emu::exp2_mode(); }
  void TearDown() override { uq::emu::set_exp2_mode(saved_); }
  Exp2Mode saved_ = Exp2Mode::CorrectlyRounded;
};

float exact_exp2(float x) {  // the float nearest 2^x (double exp2 is far more accurate than 1/2 ulp of float)
  return static_cast<float>(std::exp2(static_cast<double>(x)));
}

std::int64_t ulps_between(float a, float b) {
  std::int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  return static_cast<std::int64_t>(ib) - ia;  // both positive floats: bit patterns are ordered
}

TEST_F(EmuExp2Modes, CorrectlyRoundedIsTheNearestFloat) {
  uq::emu::set_exp2_mode(Exp2Mode::CorrectlyRounded);
  for (int i = -2000; i <= 2000; ++i) {
    const float x = static_cast<float>(i) * 0.0613f;
    EXPECT_EQ(uq::gfx950::fast_exp2(x), exact_exp2(x)) << x;
  }
}

TEST_F(EmuExp2Modes, PerturbedMovesEveryFiniteResultByExactlyOneUlpBothWays) {
  uq::emu::set_exp2_mode(Exp2Mode::PerturbedUlp);
  int up = 0, down = 0;
  for (int i = -4000; i <= 4000; ++i) {
    const float x = static_cast<float>(i) * 0.0307f;  // 2^-122.8 .. 2^122.8: normal results
    const float got = uq::gfx950::fast_exp2(x), want = exact_exp2(x);
    const std::int64_t d = ulps_between(want, got);
    ASSERT_TRUE(d == 1 || d == -1) << x << ": " << got << " vs " << want;
    (d > 0 ? up : down) += 1;
    EXPECT_EQ(uq::gfx950::fast_exp2(x), got) << x << ": deterministic";
  }
  // a hash, not a bias: both directions, in roughly equal numbers (8001 draws)
  EXPECT_GT(up, 3600);
  EXPECT_GT(down, 3600);
}

TEST_F(EmuExp2Modes, PerturbedKeepsZerosInfinitiesNanAndTheFlush) {
  uq::emu::set_exp2_mode(Exp2Mode::PerturbedUlp);
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(uq::gfx950::fast_exp2(-inf), 0.0f);
  EXPECT_EQ(uq::gfx950::fast_exp2(-127.0f), 0.0f);  // below the smallest normal: +0 (no denormals)
  EXPECT_EQ(uq::gfx950::fast_exp2(128.0f), inf);
  EXPECT_TRUE(std::isnan(uq::gfx950::fast_exp2(std::nanf(""))));
  // the smallest normal result moves down into the denormals, which flush: +0 or 2^-126 + 1 ulp
  const float r = uq::gfx950::fast_exp2(-126.0f);
  EXPECT_TRUE(r == 0.0f || r == std::nextafter(0x1p-126f, 1.0f)) << r;
}

}  // namespace
