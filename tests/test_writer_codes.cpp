// The writers' multiply-add code search (uq/impl/writer_codes.hpp) against the
// definitional comparisons of the spec (ultraquant::fp4_code_ties_down,
// nvfp4::e2m1_code_nearest_even): every float within 2^15 ulps of each threshold and of
// zero, both signs, plus random and extreme values; and the fused-multiply-add quotient
// of the index writer against IEEE division for every E4M3 scale.
#include "uq/impl/writer_codes.hpp"
#include "uq/nvfp4.hpp"
#include "uq/ultraquant.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace {

using uq::codec::bits_float;
using uq::codec::float_bits;

// Every float whose bits are within `radius` of those of +-x (x > 0), and of +-0.
template <class F>
void around(float x, std::uint32_t radius, F&& f) {
  const std::uint32_t b = float_bits(x);
  for (std::uint32_t d = 0; d <= 2 * radius; ++d) {
    const std::uint32_t u = b - radius + d;
    f(bits_float(u));
    f(bits_float(u | 0x80000000u));
  }
}

constexpr std::uint32_t kRadius = 1u << 15;

TEST(WriterCodes, UltraQuantSearchMatchesMidpointCount) {
  long checked = 0, wrong = 0;
  auto check = [&](float y2) {
    ++checked;
    // y2 / 2 is exact unless y2 is subnormal, where both sides give code 0.
    const unsigned want = uq::ultraquant::fp4_code_ties_down(y2 * 0.5f);
    const unsigned got = uq::impl::codes::uq_code_of_twice_y(y2);
    if (got != want && ++wrong <= 10)
      ADD_FAILURE() << "y2 = " << y2 << " (bits 0x" << std::hex << float_bits(y2) << std::dec << "): got " << got
                    << ", spec " << want;
  };
  for (float t : {0.5f, 1.5f, 2.5f, 3.5f, 5.0f, 7.0f, 10.0f}) around(t, kRadius, check);
  for (std::uint32_t u = 0; u <= kRadius; ++u) check(bits_float(u)), check(bits_float(u | 0x80000000u));
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uni(-20.0f, 20.0f);
  for (int i = 0; i < 1 << 20; ++i) check(uni(rng));
  for (float y2 : {18.5f, 1e10f, 3.4e38f, 1e-30f, std::numeric_limits<float>::denorm_min()}) check(y2), check(-y2);
  EXPECT_EQ(wrong, 0) << "of " << checked;
}

TEST(WriterCodes, Nvfp4SearchMatchesNearestEven) {
  long checked = 0, wrong = 0;
  auto check = [&](float y) {
    ++checked;
    const unsigned want = uq::nvfp4::e2m1_code_nearest_even(y);
    const unsigned got = uq::impl::codes::nv_code(y);
    if (got != want && ++wrong <= 10)
      ADD_FAILURE() << "y = " << y << " (bits 0x" << std::hex << float_bits(y) << std::dec << "): got " << got
                    << ", spec " << want;
  };
  for (float t : {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f}) around(t, kRadius, check);
  for (std::uint32_t u = 0; u <= kRadius; ++u) check(bits_float(u)), check(bits_float(u | 0x80000000u));
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> uni(-8.0f, 8.0f);
  for (int i = 0; i < 1 << 20; ++i) check(uni(rng));
  const float inf = std::numeric_limits<float>::infinity();
  for (float y : {6.0f, 7.5f, 1e10f, 3.4e38f, inf, 1e-30f}) check(y), check(-y);
  EXPECT_EQ(wrong, 0) << "of " << checked;
}

// quotient_fma is what the device index writer uses for fl32(x / s): for every positive
// finite E4M3 scale s, x on and around every code boundary times s, and random x.
TEST(WriterCodes, FmaQuotientIsCorrectlyRounded) {
  long checked = 0, wrong = 0;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  for (unsigned byte = 1; byte < 0x7f; ++byte) {
    const float s = uq::codec::e4m3_to_float(static_cast<std::uint8_t>(byte));
    const float r = 1.0f / s;
    auto check = [&](float x) {
      ++checked;
      const float want = x / s;
      const float got = uq::impl::codes::quotient_fma(x, s, r);
      if (float_bits(got) != float_bits(want) && ++wrong <= 10)
        ADD_FAILURE() << "x = " << x << ", s = " << s << ": got " << got << ", x / s = " << want;
    };
    for (float m : {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 6.0f}) around(m * s, 1u << 10, check);
    for (int i = 0; i < 4096; ++i) check(uni(rng) * 6.5f * s);
  }
  EXPECT_EQ(wrong, 0) << "of " << checked;
}

}  // namespace
