// The float64 reference (reference/) against independent facts: format definitions,
// the spec's worked examples and golden tables (nvfp4-index-sources.md §4.2, §5.6), cases
// computed by hand in the comments, and mathematical properties (WHT involution, softmax
// of equal scores, permutation invariance). Everything here is exact unless a tolerance
// is stated with its derivation.
#include <gtest/gtest.h>

#include <algorithm>
#include <bitset>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "support/reference_bf16.hpp"
#include "support/reference_inputs.hpp"
#include "uqref.hpp"

namespace {

using std::int32_t;
using std::int64_t;
using std::uint16_t;
using std::uint8_t;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr float kInfF = std::numeric_limits<float>::infinity();
constexpr double kU32 = 1.0 / (1 << 24);  // fp32 unit roundoff 2^-24

float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

std::uint32_t to_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

using uqtest::bf;
using uqtest::random_bf16;

// Random finite bf16 bit patterns with magnitudes in [2^-8, 2^8): cheap to draw in bulk.
std::vector<uint16_t> random_bf16_bits(std::mt19937& rng, std::size_t n) {
  std::vector<uint16_t> v(n);
  for (auto& x : v) {
    const std::uint32_t u = rng();
    const std::uint32_t exponent = 119 + (u >> 8) % 16;  // 2^-8 .. 2^7
    x = static_cast<uint16_t>(((u & 1u) << 15) | (exponent << 7) | ((u >> 1) & 0x7Fu));
  }
  return v;
}

// Dense double Hadamard transform: (Hx)_i = sum_j (-1)^popcount(i&j) x_j / 16.
std::vector<double> dense_hadamard(const float* x) {
  std::vector<double> y(256, 0.0);
  for (int i = 0; i < 256; ++i)
    for (int j = 0; j < 256; ++j) y[i] += ((std::bitset<8>(i & j).count() % 2) ? -1.0 : 1.0) * x[j];
  for (double& v : y) v /= 16.0;
  return y;
}

// =============================================================================== formats

TEST(ReferenceFormats, Bf16Values) {
  EXPECT_EQ(uqref::bf16_value(0x3F80), 1.0f);
  EXPECT_EQ(uqref::bf16_value(0x4049), 3.140625f);  // 1.5703125 * 2
  EXPECT_EQ(uqref::bf16_value(0xC0A0), -5.0f);
  EXPECT_EQ(uqref::bf16_value(0x0080), std::ldexp(1.0f, -126));  // min normal
  EXPECT_EQ(uqref::bf16_value(0x0001), std::ldexp(1.0f, -133));  // min subnormal
  EXPECT_EQ(uqref::bf16_value(0x7F7F), std::ldexp(255.0f, 120));  // (2 - 2^-7) * 2^127
  EXPECT_EQ(uqref::bf16_value(0x7F80), kInfF);
  EXPECT_EQ(uqref::bf16_value(0xFF80), -kInfF);
  EXPECT_TRUE(std::isnan(uqref::bf16_value(0x7FC0)));
  EXPECT_TRUE(std::isnan(uqref::bf16_value(0x7F81)));
  EXPECT_TRUE(std::signbit(uqref::bf16_value(0xFFC0)));
  EXPECT_EQ(uqref::bf16_value(0x8000), 0.0f);
  EXPECT_TRUE(std::signbit(uqref::bf16_value(0x8000)));
}

TEST(ReferenceFormats, Bf16RoundingCases) {
  EXPECT_EQ(bf(1.0f), 0x3F80);
  EXPECT_EQ(bf(3.14159265f), 0x4049);                 // 3.140625 is nearer than 3.15625
  EXPECT_EQ(bf(from_bits(0x3F808000)), 0x3F80);       // tie, kept bit even: down
  EXPECT_EQ(bf(from_bits(0x3F818000)), 0x3F82);       // tie, kept bit odd: up to even
  EXPECT_EQ(bf(from_bits(0x3F808001)), 0x3F81);       // above the tie: up
  EXPECT_EQ(bf(from_bits(0x3F817FFF)), 0x3F81);       // below the tie: down
  EXPECT_EQ(bf(from_bits(0x3FFF8000)), 0x4000);       // carry into the exponent
  EXPECT_EQ(bf(from_bits(0x7F7F8000)), 0x7F80);       // tie above max finite: infinity
  EXPECT_EQ(bf(from_bits(0x7F7F7FFF)), 0x7F7F);
  EXPECT_EQ(bf(from_bits(0x00008000)), 0x0000);       // subnormal tie to even (0)
  EXPECT_EQ(bf(from_bits(0x00018000)), 0x0002);       // subnormal tie to even (2)
  EXPECT_EQ(bf(from_bits(0x007F8000)), 0x0080);       // largest subnormal rounds to min normal
  EXPECT_EQ(bf(from_bits(0x80000001)), 0x8000);       // tiny negative: -0
  EXPECT_EQ(bf(-0.0f), 0x8000);
  EXPECT_EQ(bf(kInfF), 0x7F80);
  EXPECT_EQ(bf(-kInfF), 0xFF80);
  EXPECT_EQ(bf(std::numeric_limits<float>::quiet_NaN()), 0x7FC0);
  EXPECT_EQ(bf(-std::numeric_limits<float>::quiet_NaN()), 0xFFC0);
  EXPECT_EQ(bf(from_bits(0x7F800001)), 0x7FC0);  // signalling NaN stays NaN, made quiet
}

TEST(ReferenceFormats, E2m1Values) {
  const double mags[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  for (unsigned c = 0; c < 8; ++c) {
    EXPECT_EQ(uqref::e2m1_value(c), mags[c]);
    EXPECT_EQ(uqref::e2m1_value(c | 8u), -mags[c]);
  }
  EXPECT_TRUE(std::signbit(uqref::e2m1_value(8)));  // code 8 is -0
}

TEST(ReferenceFormats, Ue8m0Values) {
  EXPECT_EQ(uqref::ue8m0_value(127), 1.0);
  EXPECT_EQ(uqref::ue8m0_value(128), 2.0);
  EXPECT_EQ(uqref::ue8m0_value(124), 0.125);
  EXPECT_EQ(uqref::ue8m0_value(1), std::ldexp(1.0, -126));
  EXPECT_EQ(uqref::ue8m0_value(254), std::ldexp(1.0, 127));
  EXPECT_EQ(uqref::ue8m0_value(0), 0.0);           // zero-group marker
  EXPECT_TRUE(std::isnan(uqref::ue8m0_value(255)));  // never written
}

TEST(ReferenceFormats, E4m3Values) {
  EXPECT_EQ(uqref::e4m3_value(0x00), 0.0);
  EXPECT_EQ(uqref::e4m3_value(0x01), std::ldexp(1.0, -9));  // min subnormal
  EXPECT_EQ(uqref::e4m3_value(0x07), 7 * std::ldexp(1.0, -9));
  EXPECT_EQ(uqref::e4m3_value(0x08), std::ldexp(1.0, -6));  // min normal
  EXPECT_EQ(uqref::e4m3_value(0x38), 1.0);
  EXPECT_EQ(uqref::e4m3_value(0x39), 1.125);
  EXPECT_EQ(uqref::e4m3_value(0x4E), 7.0);
  EXPECT_EQ(uqref::e4m3_value(0x7E), 448.0);
  EXPECT_EQ(uqref::e4m3_value(0xB8), -1.0);
  EXPECT_EQ(uqref::e4m3_value(0xFE), -448.0);
  EXPECT_TRUE(std::signbit(uqref::e4m3_value(0x80)));
  int nans = 0;
  for (int b = 0; b < 256; ++b) nans += std::isnan(uqref::e4m3_value(static_cast<uint8_t>(b))) ? 1 : 0;
  EXPECT_EQ(nans, 2);
  EXPECT_TRUE(std::isnan(uqref::e4m3_value(0x7F)));
  EXPECT_TRUE(std::isnan(uqref::e4m3_value(0xFF)));
  // Finite magnitudes strictly increase with the code (the reference's rounding relies on it).
  for (int b = 0; b < 0x7E; ++b)
    EXPECT_LT(uqref::e4m3_value(static_cast<uint8_t>(b)), uqref::e4m3_value(static_cast<uint8_t>(b + 1)));
}

TEST(ReferenceFormats, E4m3RoundingCases) {
  auto r = [](double x) { return unsigned{uqref::e4m3_round(x)}; };
  EXPECT_EQ(r(1.0), 0x38u);
  EXPECT_EQ(r(6.75), 0x4Eu);    // tie between 6.5 (0x4D) and 7 (0x4E): even code
  EXPECT_EQ(r(1.6875), 0x3Eu);  // tie between 1.625 (0x3D) and 1.75 (0x3E): even code
  EXPECT_EQ(r(1.0625), 0x38u);  // tie between 1 (0x38) and 1.125 (0x39): even code
  EXPECT_EQ(r(0.3), 0x2Au);     // nearest is 0.3125 = 1.25 * 2^-2
  EXPECT_EQ(r(std::ldexp(1.0, -10)), 0x00u);      // tie between 0 and 2^-9: 0
  EXPECT_EQ(r(3 * std::ldexp(1.0, -10)), 0x02u);  // tie between 2^-9 and 2^-8: code 2
  EXPECT_EQ(r(std::ldexp(1.0, -10) * 1.0001), 0x01u);
  EXPECT_EQ(r(440.0), 0x7Eu);   // above the 416/448 midpoint 432
  EXPECT_EQ(r(432.0), 0x7Eu);   // tie 416 (0x7D) / 448 (0x7E): even code
  EXPECT_EQ(r(424.0), 0x7Du);
  EXPECT_EQ(r(464.0), 0x7Eu);   // saturation, not the 480 an unbounded format would give
  EXPECT_EQ(r(480.0), 0x7Eu);
  EXPECT_EQ(r(1e30), 0x7Eu);
  EXPECT_EQ(r(kInf), 0x7Eu);
  EXPECT_EQ(r(-kInf), 0xFEu);
  EXPECT_EQ(r(-1.0), 0xB8u);
  EXPECT_EQ(r(-0.0), 0x80u);
  EXPECT_EQ(r(-1e-10), 0x80u);
  EXPECT_EQ(r(std::numeric_limits<double>::quiet_NaN()), 0x7Fu);
  EXPECT_EQ(r(-std::numeric_limits<double>::quiet_NaN()), 0xFFu);
}

// =============================================================================== WHT

TEST(ReferenceWht, UnitVectorsGivePopcountParitySigns) {
  for (int j = 0; j < 256; ++j) {
    float x[256] = {}, y[256];
    x[j] = 1.0f;
    uqref::wht256_fp32(x, y);
    for (int i = 0; i < 256; ++i) {
      const float expect = (std::bitset<8>(i & j).count() % 2) ? -0.0625f : 0.0625f;
      ASSERT_EQ(y[i], expect) << "j=" << j << " i=" << i;
    }
  }
}

TEST(ReferenceWht, SmallIntegersAreExact) {
  // |x| <= 1000, so every partial sum is an integer below 2^24: no rounding at all.
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> dist(-1000, 1000);
  float x[256], y[256];
  for (float& v : x) v = static_cast<float>(dist(rng));
  uqref::wht256_fp32(x, y);
  const std::vector<double> exact = dense_hadamard(x);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(static_cast<double>(y[i]), exact[i]) << i;
}

// Every output is a sum of the 256 inputs along a binary tree of depth 8 (one rounding per
// level), so |fl(WHT x)_i - (Hx)_i| <= gamma_8 * ||x||_1 / 16 with gamma_8 = 8u / (1 - 8u).
TEST(ReferenceWht, MatchesDenseTransformWithinFp32Bound) {
  std::mt19937 rng(11);
  const double gamma8 = 8 * kU32 / (1 - 8 * kU32);
  for (double sigma : {1e-3, 1.0, 1e6}) {
    std::normal_distribution<double> dist(0.0, sigma);
    float x[256], y[256];
    double norm1 = 0;
    for (float& v : x) {
      v = static_cast<float>(dist(rng));
      norm1 += std::fabs(v);
    }
    uqref::wht256_fp32(x, y);
    const std::vector<double> exact = dense_hadamard(x);
    double worst = 0;
    for (int i = 0; i < 256; ++i) worst = std::max(worst, std::fabs(y[i] - exact[i]));
    EXPECT_LE(worst, gamma8 * norm1 / 16) << sigma;
    EXPECT_GT(worst, 0.0) << "random data should show some fp32 rounding";
  }
}

// H is its own inverse. With y = fl(WHT x) = Hx + e1 and z = fl(WHT y) = Hy + e2:
// z - x = H e1 + e2, |(H e1)_i| <= ||e1||_1 / 16 <= 256 * gamma_8 ||x||_1 / 256, and
// |e2_i| <= gamma_8 ||y||_1 / 16: |z_i - x_i| <= gamma_8 (||x||_1 + ||y||_1 / 16).
TEST(ReferenceWht, IsAnInvolutionWithinFp32Bound) {
  std::mt19937 rng(13);
  const double gamma8 = 8 * kU32 / (1 - 8 * kU32);
  std::normal_distribution<double> dist(0.0, 3.0);
  float x[256], y[256], z[256];
  for (float& v : x) v = static_cast<float>(dist(rng));
  uqref::wht256_fp32(x, y);
  uqref::wht256_fp32(y, z);
  double nx = 0, ny = 0;
  for (int i = 0; i < 256; ++i) {
    nx += std::fabs(x[i]);
    ny += std::fabs(y[i]);
  }
  const double bound = gamma8 * (nx + ny / 16);
  for (int i = 0; i < 256; ++i) EXPECT_NEAR(z[i], x[i], bound) << i;
}

// The spec fixes the butterfly order (stride 1 first). x = (1, 2^-24, 0, 2^-24, 0...):
// in the spec's order out[0]*16 = fl(fl(1 + 2^-24) + fl(0 + 2^-24)) = fl(1 + 2^-24) = 1
// (both sums are ties that go to the even 1.0). With the strides reversed (128 first) the
// last stage would add (x0 + x2) + (x1 + x3) = 1 + 2^-23, which is representable.
TEST(ReferenceWht, SpecOrderPinnedByARoundingCase) {
  float x[256] = {}, y[256];
  x[0] = 1.0f;
  x[1] = std::ldexp(1.0f, -24);
  x[3] = std::ldexp(1.0f, -24);
  uqref::wht256_fp32(x, y);
  EXPECT_EQ(y[0], 0.0625f);
  EXPECT_NE(y[0], (1.0f + std::ldexp(1.0f, -23)) * 0.0625f);
}

// =============================================================================== UQ writer

TEST(ReferenceUqWriter, GroupExponentAtHalfOctaveBoundaries) {
  // fl32 neighbours of sqrt(2): 0x3FB504F3 = 1.41421353816986 (square 1.99999993 < 2) and
  // 0x3FB504F4 = 1.41421365737915 (square 2.00000027 > 2). Scaling by 2^k (exponent field)
  // keeps them on either side of 2^(k+1/2).
  for (int k = -125; k <= 126; ++k) {
    const std::uint32_t shift = static_cast<std::uint32_t>(k) << 23;
    EXPECT_EQ(uqref::uq_group_exponent(from_bits(0x3FB504F3u + shift)), k) << k;
    EXPECT_EQ(uqref::uq_group_exponent(from_bits(0x3FB504F4u + shift)), k + 1) << k;
  }
  EXPECT_EQ(uqref::uq_group_exponent(1.0f), 0);
  EXPECT_EQ(uqref::uq_group_exponent(2.0f), 1);
  EXPECT_EQ(uqref::uq_group_exponent(0.5f), -1);
  EXPECT_EQ(uqref::uq_group_exponent(0.156f), -3);  // 2^-3.5 = 0.088 <= 0.156 < 2^-2.5 = 0.177
  // Subnormal s: 2^-126.5 = 2^22.5 * 2^-149 with 2^22.5 = 5931641.6, so 5931641 * 2^-149
  // has e = -127 (flushed by the writer) and 5931642 * 2^-149 has e = -126 (kept).
  EXPECT_EQ(uqref::uq_group_exponent(std::ldexp(5931641.0f, -149)), -127);
  EXPECT_EQ(uqref::uq_group_exponent(std::ldexp(5931642.0f, -149)), -126);
  EXPECT_EQ(uqref::uq_group_exponent(std::numeric_limits<float>::denorm_min()), -149);
  EXPECT_EQ(uqref::uq_group_exponent(std::numeric_limits<float>::max()), 128);
}

TEST(ReferenceUqWriter, Fp4CodeTiesGoToTheLowerLevel) {
  struct Case {
    double y;
    unsigned code;
  };
  const Case cases[] = {
      {0.0, 0x0},    {-0.0, 0x0},  {0.1, 0x0},    {-0.1, 0x0},  {0.25, 0x0},  {-0.25, 0x9},
      {0.5, 0x1},    {0.75, 0x1},  {-0.75, 0xA},  {1.0, 0x2},   {1.25, 0x2},  {-1.25, 0xB},
      {1.5, 0x3},    {1.75, 0x3},  {-1.75, 0xC},  {2.0, 0x4},   {2.5, 0x4},   {-2.5, 0xD},
      {3.0, 0x5},    {3.5, 0x5},   {-3.5, 0xE},   {4.0, 0x6},   {5.0, 0x6},   {-5.0, 0xF},
      {5.0001, 0x7}, {6.0, 0x7},   {9.0, 0x7},    {-4.999, 0xE}, {-6.0, 0xF}, {-9.0, 0xF},
      {0.2500001, 0x1}, {-0.2499999, 0x0}};
  for (const Case& c : cases) EXPECT_EQ(uqref::uq_fp4_code(c.y), c.code) << c.y;
}

struct QuantizedRow {
  uint8_t codes[128];
  uint8_t scales[8];
  bool nonfinite;
  unsigned code(int i) const { return (i % 2 == 0) ? (codes[i / 2] & 0xFu) : (codes[i / 2] >> 4); }
};

QuantizedRow quantize(const std::vector<uint16_t>& row, bool rotate) {
  QuantizedRow q;
  std::memset(q.codes, 0xA5, sizeof q.codes);
  std::memset(q.scales, 0xA5, sizeof q.scales);
  q.nonfinite = uqref::uq_quantize_row(row.data(), rotate, q.codes, q.scales);
  return q;
}

// One unrotated (V) row, one hand-computed case per group. In groups 0, 2 and 5 the absmax
// is 8: s = fl32(8 * 0.156f) = 1.248, e = 0 (2^-0.5 <= 1.248 < 2^0.5), byte 127, y = x.
TEST(ReferenceUqWriter, HandComputedGroups) {
  std::vector<uint16_t> row(256, bf(0.0f));
  auto put = [&](int g, std::vector<float> vals) {
    for (std::size_t i = 0; i < vals.size(); ++i) row[32 * g + i] = bf(vals[i]);
  };
  // Group 0: every midpoint goes to the lower level.
  put(0, {8, 0.25f, -0.25f, 0.75f, -0.75f, 1.25f, -1.25f, 1.75f, -1.75f, 2.5f, -2.5f, 3.5f, -3.5f, 5, -5, 6, -6, 7, -7});
  const unsigned g0[] = {7, 0, 9, 1, 0xA, 2, 0xB, 3, 0xC, 4, 0xD, 5, 0xE, 6, 0xF, 7, 0xF, 7, 0xF};
  // Group 1: all zero -> byte 0.
  // Group 2: |y| > 5 saturates to 6; 4.96875 (< 5) goes to 4. 5.03125 is a bf16 (4 + 33/32).
  put(2, {8, 5.03125f, -5.03125f, 4.96875f, -4.96875f});
  const unsigned g2[] = {7, 7, 0xF, 6, 0xE};
  // Group 3: A = 1.1328125 * 2^-124: s = fl32(A * 0.156f) = 5929697 * 2^-149 < 2^-126.5
  // (= 5931641.6 * 2^-149): e = -127 < -126, flushed.
  put(3, {std::ldexp(1.1328125f, -124), std::ldexp(-1.0f, -124)});
  // Group 4: A = 1.140625 * 2^-124: s = 5970592 * 2^-149 >= 2^-126.5: e = -126, byte 1,
  // y = A / 2^-126 = 4.5625 -> 4 (code 6); -2^-124 / 2^-126 = -4 -> code 0xE.
  put(4, {std::ldexp(1.140625f, -124), std::ldexp(-1.0f, -124)});
  // Group 5: -0, +0 and a small negative all give code 0, never 8.
  put(5, {8, -0.0f, 0.0f, -0.1f});
  // Groups 6 and 7 straddle a half octave: s = fl32(9.0625 * 0.156f) = 1.41375 < sqrt(2):
  // e = 0, y = 9.0625 -> saturates to 6; s = fl32(9.125 * 0.156f) = 1.4235 >= sqrt(2):
  // e = 1, y = 4.5625 -> 4.
  put(6, {9.0625f, 1.0f});
  put(7, {9.125f, 1.0f});

  const QuantizedRow q = quantize(row, false);
  EXPECT_FALSE(q.nonfinite);
  const unsigned expect_scales[8] = {127, 0, 127, 0, 1, 127, 127, 128};
  for (int g = 0; g < 8; ++g) EXPECT_EQ(unsigned{q.scales[g]}, expect_scales[g]) << "group " << g;
  std::vector<unsigned> expect(256, 0);
  for (int i = 0; i < 19; ++i) expect[i] = g0[i];
  for (int i = 0; i < 5; ++i) expect[64 + i] = g2[i];
  expect[128] = 6;
  expect[129] = 0xE;
  expect[192] = 7;  // group 6: 9.0625 -> 6 ...
  expect[193] = 2;  //          ... 1.0 -> 1 (code 2)
  expect[224] = 6;  // group 7: 4.5625 -> 4 ...
  expect[225] = 1;  //          ... 0.5 -> 0.5 (code 1)
  expect[160] = 7;  // group 5: the 8
  for (int i = 0; i < 256; ++i) EXPECT_EQ(q.code(i), expect[i]) << "element " << i;

  // Dequantised: FP4(code) * 2^(b - 127), 0 in zero groups.
  uint8_t slot[272];
  std::memset(slot, 0, sizeof slot);
  std::memcpy(slot + 136, q.codes, 128);
  std::memcpy(slot + 264, q.scales, 8);
  double v[256];
  uqref::uq_dequant_v(slot, v);
  EXPECT_EQ(v[0], 6.0);
  EXPECT_EQ(v[2], -0.5);
  EXPECT_EQ(v[128], 4.0 * std::ldexp(1.0, -126));
  EXPECT_EQ(v[192], 6.0);
  EXPECT_EQ(v[224], 8.0);
  EXPECT_EQ(v[225], 1.0);
  for (int i = 96; i < 128; ++i) EXPECT_EQ(v[i], 0.0);
}

TEST(ReferenceUqWriter, AllZeroRowGivesZeroBytes) {
  for (bool rotate : {false, true}) {
    std::vector<uint16_t> row(256, bf(0.0f));
    for (int i = 0; i < 256; i += 3) row[i] = bf(-0.0f);
    const QuantizedRow q = quantize(row, rotate);
    EXPECT_FALSE(q.nonfinite);
    for (uint8_t b : q.codes) EXPECT_EQ(b, 0);
    for (uint8_t b : q.scales) EXPECT_EQ(b, 0);
  }
}

// K row 16 * e_0: the rotation gives 1.0 everywhere (16 * 1/16). A = 1, s = 0.156,
// e = -3, y = 8 -> saturates to 6 (code 7), byte 124; k̂ = 6 * 2^-3 = 0.75 everywhere.
TEST(ReferenceUqWriter, RotatedImpulse) {
  std::vector<uint16_t> row(256, bf(0.0f));
  row[0] = bf(16.0f);
  const QuantizedRow q = quantize(row, true);
  EXPECT_FALSE(q.nonfinite);
  for (uint8_t b : q.codes) EXPECT_EQ(b, 0x77);
  for (uint8_t b : q.scales) EXPECT_EQ(b, 124);
  uint8_t slot[272] = {};
  std::memcpy(slot, q.codes, 128);
  std::memcpy(slot + 128, q.scales, 8);
  double k[256];
  uqref::uq_dequant_k(slot, k);
  for (double x : k) EXPECT_EQ(x, 0.75);
}

// K row of constant c/16: the rotation gives c * e_0 exactly (all other sums cancel to 0).
// c = 6: A = 6, s = 0.936, e = 0, y = 6 (code 7), byte 127; c = 3: s = 0.468, e = -1,
// y = 6, byte 126. Groups 1..7 are zero (byte 0).
TEST(ReferenceUqWriter, RotatedConstantRow) {
  for (float c : {6.0f, 3.0f}) {
    const std::vector<uint16_t> row(256, bf(c / 16));
    const QuantizedRow q = quantize(row, true);
    EXPECT_EQ(unsigned{q.scales[0]}, c == 6.0f ? 127u : 126u);
    for (int g = 1; g < 8; ++g) EXPECT_EQ(q.scales[g], 0);
    EXPECT_EQ(q.codes[0], 0x07);
    for (int j = 1; j < 128; ++j) EXPECT_EQ(q.codes[j], 0);
    uint8_t slot[272] = {};
    std::memcpy(slot, q.codes, 128);
    std::memcpy(slot + 128, q.scales, 8);
    double k[256];
    uqref::uq_dequant_k(slot, k);
    EXPECT_EQ(k[0], c);
    for (int i = 1; i < 256; ++i) EXPECT_EQ(k[i], 0.0);
  }
}

TEST(ReferenceUqWriter, NonFiniteGroupsAreZero) {
  std::mt19937 rng(3);
  std::vector<uint16_t> row = random_bf16(rng, 256, 1.0);
  const QuantizedRow clean = quantize(row, false);
  EXPECT_FALSE(clean.nonfinite);
  row[3 * 32 + 5] = bf(kInfF);
  row[5 * 32 + 31] = bf(std::numeric_limits<float>::quiet_NaN());
  const QuantizedRow v = quantize(row, false);
  EXPECT_TRUE(v.nonfinite);
  for (int g = 0; g < 8; ++g) {
    const bool bad = (g == 3 || g == 5);
    EXPECT_EQ(v.scales[g], bad ? 0 : clean.scales[g]) << g;
    EXPECT_NE(clean.scales[g], 0) << g;
    for (int j = 16 * g; j < 16 * g + 16; ++j) EXPECT_EQ(v.codes[j], bad ? 0 : clean.codes[j]) << j;
  }
  // Rotated: one infinity reaches every output, so every K group is zero.
  const QuantizedRow k = quantize(row, true);
  EXPECT_TRUE(k.nonfinite);
  for (uint8_t b : k.scales) EXPECT_EQ(b, 0);
  for (uint8_t b : k.codes) EXPECT_EQ(b, 0);
  // A finite row whose rotation overflows fp32 (256 * 3.39e38 / 16 is not a float).
  const std::vector<uint16_t> huge(256, 0x7F7F);
  const QuantizedRow o = quantize(huge, true);
  EXPECT_TRUE(o.nonfinite);
  EXPECT_EQ(o.scales[0], 0);
  EXPECT_FALSE(quantize(huge, false).nonfinite);  // unrotated it is a normal group
  // s = fl32(3.3895e38 * 0.156f) = 5.29e37 = 2^125.31: e = 125, byte 252.
  EXPECT_EQ(unsigned{quantize(huge, false).scales[0]}, 252u);
}

TEST(ReferenceUqWriter, WriteKvLayoutSkipsAndCounts) {
  const int Hk = 2, bs = 16, slot_bytes = 276;
  const int64_t num_blocks = 3;
  const int64_t T = 5;
  std::mt19937 rng(5);
  std::vector<uint16_t> k = random_bf16(rng, T * Hk * 256, 1.0);
  std::vector<uint16_t> v = random_bf16(rng, T * Hk * 256, 0.5);
  const int64_t slots[T] = {17, -1, num_blocks * bs, 0, 47};  // token 2 is out of range
  k[(1 * Hk + 0) * 256 + 9] = bf(std::numeric_limits<float>::quiet_NaN());  // skipped token: not counted
  v[(2 * Hk + 1) * 256 + 9] = bf(kInfF);                                  // bad slot: not counted
  v[(4 * Hk + 1) * 256 + 200] = bf(-kInfF);                               // counted: 1 row
  std::vector<uint8_t> cache(static_cast<std::size_t>(num_blocks * bs * Hk * slot_bytes), 0xA5);
  const uqref::WriteCounts counts =
      uqref::uq_write_kv(k.data(), v.data(), slots, T, Hk, cache.data(), num_blocks, bs, slot_bytes);
  EXPECT_EQ(counts.bad_slots, 1u);
  EXPECT_EQ(counts.nonfinite_rows, 1u);

  std::vector<uint8_t> expect(cache.size(), 0xA5);
  for (int64_t t : {0, 3, 4}) {
    for (int h = 0; h < Hk; ++h) {
      uint8_t* dst = expect.data() + (slots[t] * Hk + h) * slot_bytes;
      uqref::uq_quantize_row(&k[(t * Hk + h) * 256], true, dst, dst + 128);
      uqref::uq_quantize_row(&v[(t * Hk + h) * 256], false, dst + 136, dst + 264);
    }
  }
  EXPECT_EQ(cache, expect);
  // The written slots really changed (random data gives non-zero scales).
  EXPECT_NE(cache[static_cast<std::size_t>((17 * Hk + 1) * slot_bytes + 128)], 0xA5);
  EXPECT_EQ(cache[static_cast<std::size_t>((17 * Hk + 1) * slot_bytes + 272)], 0xA5);  // padding
}

TEST(ReferenceUqWriter, QueryRounding) {
  // Raw q = 16 e_0: the rotation gives 1.0 everywhere, e4m3(1) = 1.
  std::vector<uint16_t> q(256, bf(0.0f));
  q[0] = bf(16.0f);
  double q8[256];
  uqref::uq_query_q8(q.data(), false, q8);
  for (double x : q8) EXPECT_EQ(x, 1.0);
  // Already rotated: only the E4M3 rounding, saturating at 448.
  q[0] = bf(1000.0f);
  q[1] = bf(-1000.0f);
  q[2] = bf(0.3f);  // bf16 0.30078125 -> e4m3 0.3125
  q[3] = bf(std::ldexp(1.0f, -10));  // tie -> 0
  q[4] = bf(6.75f);                  // tie -> 7
  uqref::uq_query_q8(q.data(), true, q8);
  EXPECT_EQ(q8[0], 448.0);
  EXPECT_EQ(q8[1], -448.0);
  EXPECT_EQ(q8[2], 0.3125);
  EXPECT_EQ(q8[3], 0.0);
  EXPECT_EQ(q8[4], 7.0);
  for (int i = 5; i < 256; ++i) EXPECT_EQ(q8[i], 0.0);
}

// =============================================================================== UQ decode

// A dense UltraQuant cache and block tables built with the reference writer.
struct UqSetup {
  int Hk, qg, bs, slot_bytes, max_blocks;
  int64_t num_blocks;
  std::vector<uint8_t> cache;
  std::vector<int32_t> tables;  // [B][max_blocks]
  std::vector<int32_t> lens;
  std::vector<uint16_t> q;      // [B][Hk*qg][256]

  UqSetup(int Hk_, int qg_, int bs_, int64_t num_blocks_, int max_blocks_, int B)
      : Hk(Hk_), qg(qg_), bs(bs_), slot_bytes(272), max_blocks(max_blocks_), num_blocks(num_blocks_),
        cache(static_cast<std::size_t>(num_blocks_ * bs_ * Hk_ * 272), 0),
        tables(static_cast<std::size_t>(B) * max_blocks_, 0), lens(B, 0),
        q(static_cast<std::size_t>(B) * Hk_ * qg_ * 256, 0) {}

  // Writes L tokens of sequence b (rows k, v: [L][Hk][256]) through its block table.
  void write(int b, const std::vector<uint16_t>& k, const std::vector<uint16_t>& v, int64_t L) {
    std::vector<int64_t> slots(static_cast<std::size_t>(L));
    for (int64_t t = 0; t < L; ++t)
      slots[t] = static_cast<int64_t>(tables[static_cast<std::size_t>(b) * max_blocks + t / bs]) * bs + t % bs;
    const uqref::WriteCounts c =
        uqref::uq_write_kv(k.data(), v.data(), slots.data(), L, Hk, cache.data(), num_blocks, bs, slot_bytes);
    ASSERT_EQ(c.bad_slots, 0u);
    ASSERT_EQ(c.nonfinite_rows, 0u);
  }

  const uint8_t* slot(int b, int64_t t, int h) const {
    const int64_t blk = tables[static_cast<std::size_t>(b) * max_blocks + t / bs];
    return cache.data() + ((blk * bs + t % bs) * Hk + h) * slot_bytes;
  }

  uqref::DecodeResult decode(double scale, bool q_rotated = false) const {
    uqref::DecodeInputs in =
        uqtest::reference_decode_inputs(q.data(), static_cast<int64_t>(Hk) * qg, qg, cache.data(), num_blocks, bs, Hk,
                                        slot_bytes, tables.data(), max_blocks, lens.data(),
                                        static_cast<int>(lens.size()), scale);
    in.q_rotated = q_rotated;
    return uqref::uq_decode(in);
  }
};

TEST(ReferenceUqDecode, SingleTokenGivesItsV) {
  std::mt19937 rng(21);
  const int Hk = 2, qg = 6, bs = 16, B = 2;
  UqSetup s(Hk, qg, bs, /*num_blocks=*/4, /*max_blocks=*/2, B);
  s.tables = {3, 0, 1, 2};
  s.lens = {1, 1};
  s.q = random_bf16(rng, s.q.size(), 1.0);
  for (int b = 0; b < B; ++b) s.write(b, random_bf16(rng, Hk * 256, 1.0), random_bf16(rng, Hk * 256, 1.0), 1);
  const uqref::DecodeResult r = s.decode(1.0 / 16);
  for (int b = 0; b < B; ++b)
    for (int hq = 0; hq < Hk * qg; ++hq) {
      double v[256];
      uqref::uq_dequant_v(s.slot(b, 0, hq / qg), v);
      const std::size_t row = static_cast<std::size_t>(b) * Hk * qg + hq;
      EXPECT_EQ(r.attended[row], 1);
      for (int d = 0; d < 256; ++d) {
        ASSERT_EQ(r.out[row * 256 + d], v[d]) << b << " " << hq << " " << d;  // weight exactly 1
        ASSERT_EQ(r.vmax[row * 256 + d], std::fabs(v[d]));
      }
    }
}

// Identical keys give equal scores, so out = mean of v̂. The reference sums n <= 100003
// terms of magnitude <= vmax in double and divides by n: |error| <= (n + 1) 2^-53 vmax,
// below 2e-11 vmax.
TEST(ReferenceUqDecode, EqualScoresGiveTheMeanOfV) {
  std::mt19937 rng(22);
  const int Hk = 1, qg = 8, bs = 16;
  for (int64_t L : {15, 17, 255, 257, 100003}) {
    const int max_blocks = static_cast<int>((L + bs - 1) / bs);
    UqSetup s(Hk, qg, bs, max_blocks + 1, max_blocks, 1);
    for (int i = 0; i < max_blocks; ++i) s.tables[i] = max_blocks - i;  // reversed, block 0 unused
    s.lens = {static_cast<int32_t>(L)};
    s.q = random_bf16(rng, s.q.size(), 1.0);
    const std::vector<uint16_t> krow = random_bf16(rng, 256, 1.0);
    std::vector<uint16_t> k(static_cast<std::size_t>(L) * 256), v = random_bf16_bits(rng, static_cast<std::size_t>(L) * 256);
    for (int64_t t = 0; t < L; ++t) std::copy(krow.begin(), krow.end(), k.begin() + t * 256);
    s.write(0, k, v, L);
    const uqref::DecodeResult r = s.decode(0.0625);
    std::vector<double> mean(256, 0.0), vmax(256, 0.0);
    for (int64_t t = 0; t < L; ++t) {
      double vt[256];
      uqref::uq_dequant_v(s.slot(0, t, 0), vt);
      for (int d = 0; d < 256; ++d) {
        mean[d] += vt[d];
        vmax[d] = std::max(vmax[d], std::fabs(vt[d]));
      }
    }
    for (int hq = 0; hq < qg; ++hq) {
      EXPECT_EQ(r.attended[hq], L);
      for (int d = 0; d < 256; ++d) {
        const double expect = mean[d] / static_cast<double>(L);
        EXPECT_NEAR(r.out[hq * 256 + d], expect, 2e-11 * vmax[d]) << "L=" << L << " d=" << d;
        EXPECT_EQ(r.vmax[hq * 256 + d], vmax[d]);
      }
    }
  }
}

// Two tokens with hand-made keys. K rows of constant 0.375 and 0.1875 rotate to 6 e_0 and
// 3 e_0 and quantise exactly (see RotatedConstantRow). q_rotated with q = e_0 gives
// q8 = e_0, so the scores are 6 scale and 3 scale; with scale = ln(2)/3 the softmax weights
// are e^(2 ln 2) : e^(ln 2) = 2 : 1, and out = (2 v̂_0 + v̂_1) / 3.
TEST(ReferenceUqDecode, TwoTokensWithHandComputedWeights) {
  std::mt19937 rng(23);
  UqSetup s(/*Hk=*/1, /*qg=*/6, /*bs=*/16, /*num_blocks=*/2, /*max_blocks=*/1, /*B=*/1);
  s.tables = {1};
  s.lens = {2};
  std::vector<uint16_t> k(2 * 256);
  std::fill(k.begin(), k.begin() + 256, bf(0.375f));
  std::fill(k.begin() + 256, k.end(), bf(0.1875f));
  s.write(0, k, random_bf16(rng, 2 * 256, 2.0), 2);
  for (int hq = 0; hq < 6; ++hq) s.q[static_cast<std::size_t>(hq) * 256] = bf(1.0f);
  const double scale = std::log(2.0) / 3;
  const uqref::DecodeResult r = s.decode(scale, /*q_rotated=*/true);
  double v0[256], v1[256];
  uqref::uq_dequant_v(s.slot(0, 0, 0), v0);
  uqref::uq_dequant_v(s.slot(0, 1, 0), v1);
  for (int hq = 0; hq < 6; ++hq) {
    EXPECT_EQ(r.attended[hq], 2);
    EXPECT_NEAR(r.score_abs[hq], 6 * scale, 1e-15);
    for (int d = 0; d < 256; ++d) {
      // Rounding: exp and two products/one sum in double, a few ulps of max|v|.
      const double expect = (2 * v0[d] + v1[d]) / 3;
      EXPECT_NEAR(r.out[hq * 256 + d], expect, 1e-14 * std::max(std::fabs(v0[d]), std::fabs(v1[d])));
    }
  }
  // Raw q giving the same q8: raw = 16 e_0 rotates to all ones, not e_0, so instead use
  // raw = 1/16 * ones: the rotation gives e_0 exactly; same scores, same output.
  std::fill(s.q.begin(), s.q.end(), bf(0.0625f));
  const uqref::DecodeResult raw = s.decode(scale, /*q_rotated=*/false);
  EXPECT_EQ(raw.out, r.out);
}

// Bad data (ultraquant.md §6): a bad block id hides that block's tokens; seq_len is
// clamped to [0, max_blocks * block_size]. Each variant is compared with an equivalent
// well-formed input that holds exactly the same tokens in the same order (bit-equal).
TEST(ReferenceUqDecode, BadBlockIdsAndLengths) {
  std::mt19937 rng(24);
  const int Hk = 2, qg = 8, bs = 16, max_blocks = 3;
  const int64_t num_blocks = 5;
  UqSetup s(Hk, qg, bs, num_blocks, max_blocks, /*B=*/1);
  s.tables = {4, 1, 2};
  s.q = random_bf16(rng, s.q.size(), 1.0);
  const int64_t L = 48;
  s.write(0, random_bf16(rng, L * Hk * 256, 1.0), random_bf16(rng, L * Hk * 256, 1.0), L);

  // Block 1 bad (two spellings): tokens 16..31 absent; same as table {4, 2} with 32 tokens.
  UqSetup good = s;
  good.tables = {4, 2, 0};
  good.lens = {32};
  const uqref::DecodeResult expect = good.decode(0.07);
  for (int32_t bad : {-1, static_cast<int32_t>(num_blocks), std::numeric_limits<int32_t>::min()}) {
    UqSetup t = s;
    t.tables = {4, bad, 2};
    t.lens = {static_cast<int32_t>(L)};
    const uqref::DecodeResult r = t.decode(0.07);
    EXPECT_EQ(r.out, expect.out) << bad;
    EXPECT_EQ(r.attended, std::vector<int64_t>(Hk * qg, 32));
  }
  // seq_len above max_blocks * bs = 48 is clamped to 48.
  UqSetup full = s;
  full.lens = {48};
  UqSetup over = s;
  over.lens = {1000};
  EXPECT_EQ(over.decode(0.07).out, full.decode(0.07).out);
  // seq_len 0 and negative: no token, out = 0, vmax = 0.
  for (int32_t len : {0, -7}) {
    UqSetup e = s;
    e.lens = {len};
    const uqref::DecodeResult r = e.decode(0.07);
    for (double x : r.out) EXPECT_EQ(x, 0.0);
    for (double x : r.vmax) EXPECT_EQ(x, 0.0);
    for (int64_t a : r.attended) EXPECT_EQ(a, 0);
  }
}

// Physical placement does not matter: the same tokens behind two different block tables
// give bit-identical outputs (same token order, same arithmetic).
TEST(ReferenceUqDecode, BlockTablePermutationInvariance) {
  std::mt19937 rng(25);
  const int Hk = 1, qg = 16, bs = 32, max_blocks = 9;
  const int64_t L = 257;  // 8 full blocks + 1 token
  std::vector<uint16_t> k = random_bf16(rng, L * 256, 1.0), v = random_bf16(rng, L * 256, 1.0);
  std::vector<uint16_t> q = random_bf16(rng, static_cast<std::size_t>(Hk) * qg * 256, 2.0);
  std::vector<int32_t> perm(max_blocks);
  std::iota(perm.begin(), perm.end(), 0);
  uqref::DecodeResult first;
  for (int trial = 0; trial < 3; ++trial) {
    UqSetup s(Hk, qg, bs, /*num_blocks=*/10, max_blocks, 1);
    std::shuffle(perm.begin(), perm.end(), rng);
    for (int i = 0; i < max_blocks; ++i) s.tables[i] = perm[i] + 1;
    s.lens = {static_cast<int32_t>(L)};
    s.q = q;
    s.write(0, k, v, L);
    const uqref::DecodeResult r = s.decode(0.0625);
    if (trial == 0)
      first = r;
    else
      EXPECT_EQ(r.out, first.out);
  }
  // Query heads differ (random q), so the outputs must too: the test is not vacuous.
  EXPECT_NE(std::vector<double>(first.out.begin(), first.out.begin() + 256),
            std::vector<double>(first.out.begin() + 256, first.out.begin() + 512));
}

// GQA: query head hq reads KV head hq / qg. KV head h holds the same V row in every token
// (so every query head of its group returns exactly that v̂), and its own random keys.
TEST(ReferenceUqDecode, QueryHeadsReadTheirKvHead) {
  std::mt19937 rng(26);
  const int Hk = 3, qg = 6, bs = 64;
  const int64_t L = 130;
  UqSetup s(Hk, qg, bs, /*num_blocks=*/3, /*max_blocks=*/3, 1);
  s.tables = {2, 0, 1};
  s.lens = {static_cast<int32_t>(L)};
  s.q = random_bf16(rng, s.q.size(), 1.0);
  std::vector<uint16_t> vrows = random_bf16(rng, Hk * 256, 1.0);
  std::vector<uint16_t> v(static_cast<std::size_t>(L) * Hk * 256);
  for (int64_t t = 0; t < L; ++t) std::copy(vrows.begin(), vrows.end(), v.begin() + t * Hk * 256);
  s.write(0, random_bf16(rng, L * Hk * 256, 1.0), v, L);
  const uqref::DecodeResult r = s.decode(0.0625);
  for (int hq = 0; hq < Hk * qg; ++hq) {
    double vh[256];
    uqref::uq_dequant_v(s.slot(0, 0, hq / qg), vh);
    for (int d = 0; d < 256; ++d) {
      // Weights sum to 1 in double; out = vh * (sum w / sum w): a few ulps of |vh|.
      EXPECT_NEAR(r.out[hq * 256 + d], vh[d], 1e-13 * std::fabs(vh[d])) << hq << " " << d;
    }
  }
}

// Strided q (a split of a fused QKV tensor) reads the same elements as a dense copy.
TEST(ReferenceUqDecode, QueryStrides) {
  std::mt19937 rng(27);
  const int Hk = 2, qg = 8, B = 3, Hq = Hk * qg;
  UqSetup s(Hk, qg, 16, 8, 2, B);
  s.tables = {0, 1, 2, 3, 4, 5};
  s.lens = {17, 1, 32};
  s.q = random_bf16(rng, s.q.size(), 1.0);
  for (int b = 0; b < B; ++b)
    s.write(b, random_bf16(rng, 32 * Hk * 256, 1.0), random_bf16(rng, 32 * Hk * 256, 1.0), 32);
  const uqref::DecodeResult dense = s.decode(0.0625);
  // Fused layout [B][Hq + 2 Hk][256]: q heads first.
  const int64_t seq_stride = static_cast<int64_t>(Hq + 2 * Hk) * 256;
  std::vector<uint16_t> fused(static_cast<std::size_t>(B * seq_stride), bf(std::numeric_limits<float>::quiet_NaN()));
  for (int b = 0; b < B; ++b)
    for (int hq = 0; hq < Hq; ++hq)
      std::copy_n(&s.q[(static_cast<std::size_t>(b) * Hq + hq) * 256], 256, &fused[b * seq_stride + hq * 256]);
  const uqref::DecodeInputs in =
      uqtest::reference_decode_inputs(fused.data(), Hq + 2 * Hk, qg, s.cache.data(), s.num_blocks, s.bs, Hk,
                                      s.slot_bytes, s.tables.data(), s.max_blocks, s.lens.data(), B, 0.0625);
  EXPECT_EQ(uqref::uq_decode(in).out, dense.out);
  EXPECT_EQ(dense.attended[0], 17);
  EXPECT_EQ(dense.attended[Hq], 1);
  EXPECT_EQ(dense.attended[2 * Hq], 32);
}

// =============================================================================== NVFP4 keys

TEST(ReferenceNvKeys, LutGoldenRows) {
  // nvfp4-index-sources.md §4.2, byte-for-byte.
  const std::pair<uint8_t, std::uint64_t> golden[] = {
      {0x00, 0x0000000000000000ull}, {0x01, 0x0604030202010000ull}, {0x08, 0x1C1814100C080400ull},
      {0x30, 0x44403C3834302800ull}, {0x31, 0x46413E3936312900ull}, {0x38, 0x4C4844403C383000ull},
      {0x39, 0x4E4946413E393100ull}, {0x3C, 0x514C4944413C3400ull}, {0x40, 0x54504C4844403800ull},
      {0x70, 0x7E7E7C7874706800ull}, {0x76, 0x7E7E7E7E7A766E00ull}, {0x7E, 0x7E7E7E7E7E7E7600ull}};
  for (const auto& g : golden)
    EXPECT_EQ(uqref::nv_lut_entry(g.first), g.second) << std::hex << unsigned{g.first};
  EXPECT_EQ(uqref::nv_lut_entry(0x7F), 0x7F7F7F7F7F7F7F7Full);  // NaN scale (documented choice)
}

// §5.6's token: code bytes 0x21 0x9F, group-0 scale 0x39 (1.125).
TEST(ReferenceNvKeys, DequantWorkedExample) {
  std::vector<uint8_t> page(9216, 0);
  page[0] = 0x21;
  page[1] = 0x9F;
  page[8192] = 0x39;
  EXPECT_EQ(uqref::nv_dequant(page.data(), 0, 0), 0.5625);
  EXPECT_EQ(uqref::nv_dequant(page.data(), 0, 1), 1.125);
  EXPECT_EQ(uqref::nv_dequant(page.data(), 0, 2), -7.0);  // -6.75 is a tie -> -7 (even code)
  EXPECT_EQ(uqref::nv_dequant(page.data(), 0, 3), -0.5625);
  for (int d = 4; d < 128; ++d) EXPECT_EQ(uqref::nv_dequant(page.data(), 0, d), 0.0);
  // Another token / group, to pin the addressing: token 5, dim 37 (group 2, odd -> high nibble).
  page[5 * 64 + 18] = 0x70;      // dim 37 code 7 (6.0), dim 36 code 0
  page[8192 + 5 * 8 + 2] = 0x40;  // scale 2.0
  EXPECT_EQ(uqref::nv_dequant(page.data(), 5, 37), 12.0);
  EXPECT_EQ(uqref::nv_dequant(page.data(), 5, 36), 0.0);
  EXPECT_EQ(uqref::nv_dequant(page.data(), 5, 38), 0.0);
  // A NaN scale byte gives NaN keys.
  page[8192 + 5 * 8 + 2] = 0x7F;
  EXPECT_TRUE(std::isnan(uqref::nv_dequant(page.data(), 5, 37)));
}

// For every non-negative finite scale byte and every code, the dequantised key is the LUT
// byte of the magnitude with the sign bit ORed in (RNE and saturation are symmetric).
TEST(ReferenceNvKeys, LutAndDequantAgree) {
  std::vector<uint8_t> page(9216, 0);
  for (unsigned sb = 0; sb < 0x7F; ++sb) {
    page[8192] = static_cast<uint8_t>(sb);
    const std::uint64_t lut = uqref::nv_lut_entry(static_cast<uint8_t>(sb));
    for (unsigned code = 0; code < 16; ++code) {
      page[0] = static_cast<uint8_t>(code);
      const auto byte = static_cast<uint8_t>(((lut >> (8 * (code & 7))) & 0xFF) | ((code & 8) << 4));
      EXPECT_EQ(uqref::nv_dequant(page.data(), 0, 0), uqref::e4m3_value(byte)) << sb << " " << code;
    }
  }
}

TEST(ReferenceNvKeys, WriterHandComputedGroups) {
  std::vector<float> keys(128, 0.0f);
  // Group 0: A = 6 -> scale e4m3(1) = 0x38, s = 1; ties go to the even code.
  const float g0[16] = {6, 0.25f, -0.25f, 0.75f, -0.75f, 1.25f, -1.25f, 1.75f, -1.75f, 2.5f, -2.5f, 3.5f, -3.5f, 5, -5, 0.1f};
  const unsigned c0[16] = {7, 0, 0, 2, 0xA, 2, 0xA, 4, 0xC, 4, 0xC, 6, 0xE, 6, 0xE, 0};
  // Group 1: A = 7: fl32(7/6) = 1.1666666 -> e4m3 1.125 (0x39); 7 / 1.125 = 6.22 saturates.
  const float g1[3] = {7, -7, 1.125f};
  const unsigned c1[3] = {7, 0xF, 2};
  // Group 2: A = 6 * 2^-10: A/6 = 2^-10 is the tie between 0 and 2^-9 -> scale 0: codes 0.
  const float g2[2] = {6 * std::ldexp(1.0f, -10), -std::ldexp(1.0f, -10)};
  // Group 3: A = 9 * 2^-10: A/6 = 0.75 * 2^-9 -> 2^-9 (0x01); y = 4.5 -> 4 (code 6).
  const float g3[2] = {9 * std::ldexp(1.0f, -10), -std::ldexp(1.0f, -9)};
  const unsigned c3[2] = {6, 0xA};
  // Group 4: A = 6000: A/6 = 1000 saturates the scale to 448; y = 13.4 -> 6.
  const float g4[2] = {6000, -224};
  const unsigned c4[2] = {7, 9};  // -224/448 = -0.5
  for (int i = 0; i < 16; ++i) keys[i] = g0[i];
  for (int i = 0; i < 3; ++i) keys[16 + i] = g1[i];
  for (int i = 0; i < 2; ++i) keys[32 + i] = g2[i];
  for (int i = 0; i < 2; ++i) keys[48 + i] = g3[i];
  for (int i = 0; i < 2; ++i) keys[64 + i] = g4[i];
  std::vector<uint8_t> cache(2 * 9216, 0xA5);
  const int64_t slot = 128 + 77;  // page 1, token 77
  const uqref::WriteCounts counts = uqref::nv_write_index_keys(keys.data(), &slot, 1, cache.data(), 2);
  EXPECT_EQ(counts.bad_slots, 0u);
  EXPECT_EQ(counts.nonfinite_rows, 0u);
  const uint8_t* page = cache.data() + 9216;
  const uint8_t* codes = page + 77 * 64;
  const uint8_t* scales = page + 8192 + 77 * 8;
  auto code = [&](int d) { return (d % 2 == 0) ? (codes[d / 2] & 0xFu) : (codes[d / 2] >> 4u); };
  const unsigned expect_scales[8] = {0x38, 0x39, 0x00, 0x01, 0x7E, 0, 0, 0};
  for (int g = 0; g < 8; ++g) EXPECT_EQ(unsigned{scales[g]}, expect_scales[g]) << g;
  std::vector<unsigned> expect(128, 0);
  for (int i = 0; i < 16; ++i) expect[i] = c0[i];
  for (int i = 0; i < 3; ++i) expect[16 + i] = c1[i];
  for (int i = 0; i < 2; ++i) expect[48 + i] = c3[i];
  for (int i = 0; i < 2; ++i) expect[64 + i] = c4[i];
  for (int d = 0; d < 128; ++d) EXPECT_EQ(code(d), expect[d]) << d;
  // Only token 77 of page 1 was written.
  for (std::size_t i = 0; i < cache.size(); ++i) {
    const int64_t off = static_cast<int64_t>(i) - 9216;
    const bool mine = (off >= 77 * 64 && off < 78 * 64) || (off >= 8192 + 77 * 8 && off < 8192 + 78 * 8);
    if (!mine) {
      ASSERT_EQ(cache[i], 0xA5) << i;
    }
  }
  EXPECT_EQ(uqref::nv_fp4_code(-0.0f), 0u);
  EXPECT_EQ(uqref::nv_fp4_code(-0.25f), 0u);
  EXPECT_EQ(uqref::nv_fp4_code(-0.2500001f), 9u);
  EXPECT_EQ(uqref::nv_fp4_code(100.0f), 7u);
}

TEST(ReferenceNvKeys, WriterSlotsAndNonFinite) {
  const int64_t num_blocks = 2, T = 4;
  std::mt19937 rng(31);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> keys(T * 128);
  for (float& x : keys) x = dist(rng);
  keys[2 * 128 + 40] = std::numeric_limits<float>::quiet_NaN();  // token 2, group 2
  keys[2 * 128 + 90] = -kInfF;                                   // token 2, group 5
  keys[0 * 128 + 3] = kInfF;                                     // skipped token: not counted
  const int64_t slots[T] = {-1, num_blocks * 128, 130, 5};
  std::vector<uint8_t> cache(static_cast<std::size_t>(num_blocks) * 9216, 0xA5);
  const uqref::WriteCounts c = uqref::nv_write_index_keys(keys.data(), slots, T, cache.data(), num_blocks);
  EXPECT_EQ(c.bad_slots, 1u);
  EXPECT_EQ(c.nonfinite_rows, 1u);
  const uint8_t* p1 = cache.data() + 9216;
  for (int g = 0; g < 8; ++g) {
    const bool bad = (g == 2 || g == 5);
    if (bad) {
      EXPECT_EQ(p1[8192 + 2 * 8 + g], 0) << g;
      for (int j = 8 * g; j < 8 * g + 8; ++j) EXPECT_EQ(p1[2 * 64 + j], 0) << j;
    } else {
      EXPECT_NE(p1[8192 + 2 * 8 + g], 0) << g;
    }
  }
  // Untouched: everything but token 2 of page 1 and token 5 of page 0.
  auto in_token = [](int64_t off, int t) {
    return (off >= t * 64 && off < (t + 1) * 64) || (off >= 8192 + t * 8 && off < 8192 + (t + 1) * 8);
  };
  for (int64_t i = 0; i < 2 * 9216; ++i) {
    const bool written = (i < 9216) ? in_token(i, 5) : in_token(i - 9216, 2);
    if (!written) {
      ASSERT_EQ(cache[static_cast<std::size_t>(i)], 0xA5) << i;
    }
  }
  EXPECT_NE(cache[8192 + 5 * 8], 0xA5);  // token 5 of page 0 was written
}

// Round trip: |k̂ - x| <= 1.375 s + 7 * 2^-10, s = the group's scale value (A/6 < 448).
//  * code choice: the widest gap between E2M1 levels is 2 (4 to 6), so rounding costs
//    <= 1 s; beyond 6 the code saturates: the scale's RNE gives s >= (A/6) / (1 + 2^-4)
//    for a normal s, so |x| <= 6.375 s (error <= 0.375 s), and for a subnormal s (step
//    2^-9) A/6 <= s + 2^-10, so |x| <= 6 s + 6 * 2^-10; one of these applies, not both;
//  * re-rounding E2M1 * s to E4M3: <= 2^-4 * 6 s = 0.375 s (normal), <= 2^-10 (subnormal).
TEST(ReferenceNvKeys, RoundTripWithinQuantisationBound) {
  std::mt19937 rng(32);
  const int64_t T = 257;
  std::vector<float> keys(T * 128);
  std::vector<int64_t> slots(T);
  for (int64_t t = 0; t < T; ++t) {
    // sigma 2^-14 .. 2^6: scales from 0 and subnormal up to the normal range, A/6 < 448.
    std::normal_distribution<float> dist(0.0f, std::ldexp(1.0f, static_cast<int>(t % 21) - 14));
    for (int d = 0; d < 128; ++d) keys[t * 128 + d] = dist(rng);
    slots[t] = (t * 7) % (3 * 128);  // 7 is prime to 384: T <= 384 tokens, distinct slots
  }
  std::vector<uint8_t> cache(3 * 9216, 0);
  uqref::nv_write_index_keys(keys.data(), slots.data(), T, cache.data(), 3);
  int zero_scales = 0, subnormal_scales = 0;
  for (int64_t t = 0; t < T; ++t) {
    const uint8_t* page = cache.data() + (slots[t] / 128) * 9216;
    const int pos = static_cast<int>(slots[t] % 128);
    for (int d = 0; d < 128; ++d) {
      const double s = uqref::e4m3_value(page[8192 + pos * 8 + d / 16]);
      const double k = uqref::nv_dequant(page, pos, d);
      EXPECT_LE(std::fabs(k - keys[t * 128 + d]), 1.375 * s + 7 * std::ldexp(1.0, -10)) << t << " " << d;
      if (d % 16 == 0) {
        zero_scales += (s == 0) ? 1 : 0;
        subnormal_scales += (s > 0 && s < std::ldexp(1.0, -6)) ? 1 : 0;
      }
    }
  }
  EXPECT_GT(zero_scales, 0);  // the sweep reached the zero and subnormal scale ranges
  EXPECT_GT(subnormal_scales, 0);
}

// =============================================================================== NVFP4 scores

struct NvSetup {
  int reqs, ql, heads, max_blocks;
  int64_t num_blocks;
  std::vector<uint8_t> cache;
  std::vector<uint8_t> q;  // [reqs*ql][heads][q_stride_row / heads...], padded rows
  int64_t q_stride_row, q_stride_head;
  std::vector<int32_t> tables, lens;

  NvSetup(int reqs_, int ql_, int heads_, int max_blocks_, int64_t num_blocks_)
      : reqs(reqs_), ql(ql_), heads(heads_), max_blocks(max_blocks_), num_blocks(num_blocks_),
        cache(static_cast<std::size_t>(num_blocks_) * 9216, 0), q_stride_row(heads_ * 128 + 32),
        q_stride_head(128), tables(static_cast<std::size_t>(reqs_) * max_blocks_, 0), lens(reqs_, 0) {
    q.assign(static_cast<std::size_t>(reqs * ql) * q_stride_row, 0x7F);  // padding is NaN: never read
    for (int row = 0; row < reqs * ql; ++row)
      for (int h = 0; h < heads; ++h) std::fill_n(&q[row * q_stride_row + h * q_stride_head], 128, 0);
  }
  uint8_t* qrow(int row, int h) { return &q[row * q_stride_row + h * q_stride_head]; }

  std::vector<float> score(int64_t S, int init, int local) const {
    std::vector<float> out(static_cast<std::size_t>(heads) * reqs * ql * S, 123.0f);  // poison
    uqref::nv_score(uqtest::reference_score_inputs(q.data(), q_stride_row, q_stride_head, heads, cache.data(),
                                                   num_blocks, tables.data(), max_blocks, lens.data(), reqs, ql, init,
                                                   local),
                    out.data(), S);
    return out;
  }
};

// nvfp4-index-sources.md §5.6: QL = 2, H = 1, seq_len 129, block table [5, 9].
TEST(ReferenceNvScore, WorkedExample) {
  NvSetup s(1, 2, 1, 2, 10);
  s.tables = {5, 9};
  s.lens = {129};
  uint8_t* page5 = s.cache.data() + 5 * 9216;
  page5[0] = 0x21;
  page5[1] = 0x9F;
  page5[8192] = 0x39;
  for (int row = 0; row < 2; ++row) std::fill_n(s.qrow(row, 0), 16, 0xB8);  // -1.0
  const int64_t S = 4;
  const std::vector<float> a = s.score(S, /*init=*/0, /*local=*/1);
  const std::vector<float> expect_a = {1e29f, -kInfF, 123, 123, 5.875f, 1e29f, 123, 123};
  EXPECT_EQ(a, expect_a);
  const std::vector<float> b = s.score(S, /*init=*/1, /*local=*/1);
  const std::vector<float> expect_b = {1e30f, -kInfF, 123, 123, 1e30f, 1e29f, 123, 123};
  EXPECT_EQ(b, expect_b);
  // Without sentinels row 1 block 1 is the raw max over token 128 alone (page 9 is zero).
  const std::vector<float> c = s.score(S, 0, 0);
  const std::vector<float> expect_c = {5.875f, -kInfF, 123, 123, 5.875f, 0.0f, 123, 123};
  EXPECT_EQ(c, expect_c);
}

// L = 130, QL = 4 ("causal straddle"): rows see 127, 128, 129, 130 tokens. Keys: code 2
// (1.0) in dim 0 and a per-token scale, so with q = +-1.0 in dim 0 each dot is +-scale.
// Scales 1.0 everywhere except token 126 (2), 127 (4), 128 (8), 129 (16) and 130 (32,
// beyond L: never visible).
TEST(ReferenceNvScore, CausalStraddle) {
  NvSetup s(1, 4, 2, 2, 4);
  s.tables = {3, 1};
  s.lens = {130};
  auto set_token = [&](int page, int t, uint8_t scale) {
    uint8_t* p = s.cache.data() + page * 9216;
    p[t * 64] = 0x02;
    p[8192 + t * 8] = scale;
  };
  for (int t = 0; t < 128; ++t) set_token(3, t, 0x38);
  set_token(3, 126, 0x40);
  set_token(3, 127, 0x48);
  set_token(1, 0, 0x50);
  set_token(1, 1, 0x58);
  set_token(1, 2, 0x60);
  for (int row = 0; row < 4; ++row) {
    s.qrow(row, 0)[0] = 0x38;  // +1
    s.qrow(row, 1)[0] = 0xB8;  // -1
  }
  const int64_t S = 3;
  auto at = [&](const std::vector<float>& v, int h, int row, int b) { return v[(h * 4 + row) * S + b]; };
  const std::vector<float> raw = s.score(S, 0, 0);
  const float head0[4][2] = {{2, -kInfF}, {4, -kInfF}, {4, 8}, {4, 16}};
  const float head1[4][2] = {{-1, -kInfF}, {-1, -kInfF}, {-1, -8}, {-1, -8}};
  for (int row = 0; row < 4; ++row)
    for (int b = 0; b < 2; ++b) {
      EXPECT_EQ(at(raw, 0, row, b), head0[row][b]) << row << " " << b;
      EXPECT_EQ(at(raw, 1, row, b), head1[row][b]) << row << " " << b;
      EXPECT_EQ(at(raw, 0, row, 2), 123.0f);  // b >= nb_req: untouched
    }
  // local = 1: each row's own block is 1e29; invisible blocks stay -inf.
  const std::vector<float> loc = s.score(S, 0, 1);
  const float head0_local[4][2] = {{1e29f, -kInfF}, {1e29f, -kInfF}, {4, 1e29f}, {4, 1e29f}};
  for (int row = 0; row < 4; ++row)
    for (int b = 0; b < 2; ++b) EXPECT_EQ(at(loc, 0, row, b), head0_local[row][b]) << row << " " << b;
  // init = 1, local = 1: block 0 is both init and local in rows 0, 1: init wins (1e30).
  const std::vector<float> both = s.score(S, 1, 1);
  for (int row = 0; row < 4; ++row) {
    EXPECT_EQ(at(both, 1, row, 0), 1e30f);
    EXPECT_EQ(at(both, 1, row, 1), row < 2 ? -kInfF : 1e29f);
  }
}

// Bad page ids: the block's tokens are absent (raw -inf); sentinels still apply. Negative
// and zero lengths write nothing; lengths beyond max_blocks * 128 are clamped.
TEST(ReferenceNvScore, BadPagesAndLengths) {
  NvSetup s(4, 1, 1, 3, 3);
  for (int p = 0; p < 3; ++p) {
    uint8_t* page = s.cache.data() + p * 9216;
    for (int t = 0; t < 128; ++t) {
      page[t * 64] = 0x04;  // dim 0: 2.0
      page[8192 + t * 8] = static_cast<uint8_t>(0x38 + p);  // scale 1, 1.125, 1.25 by page
    }
  }
  for (int row = 0; row < 4; ++row) s.qrow(row, 0)[0] = 0x38;
  // req 0: pages [0, -1, 2], L = 300 (3 blocks); req 1: pages [3 (bad), 1, 0], L = 256;
  // req 2: L = -4; req 3: L = 0.
  s.tables = {0, -1, 2, 3, 1, 0, 0, 0, 0, 0, 0, 0};
  s.lens = {300, 256, -4, 0};
  const int64_t S = 4;
  const std::vector<float> r = s.score(S, 0, 0);
  const std::vector<float> expect = {2.0f,  -kInfF, 2.5f, 123, -kInfF, 2.25f, 123, 123,
                                     123,   123,    123,  123, 123,     123,   123, 123};
  EXPECT_EQ(r, expect);
  const std::vector<float> l = s.score(S, 0, 1);
  EXPECT_EQ(l[2], 1e29f);  // req 0's own block
  EXPECT_EQ(l[1], -kInfF);
  EXPECT_EQ(l[S + 1], 1e29f);
  EXPECT_EQ(l[S + 0], -kInfF);  // bad page, not a sentinel
  const std::vector<float> i = s.score(S, 1, 0);
  EXPECT_EQ(i[S + 0], 1e30f);  // bad page, but init
  // seq_len 10000 > 3 * 128 is clamped to 384: same as 384.
  s.lens = {10000, 256, -4, 0};
  const std::vector<float> over = s.score(S, 0, 0);
  s.lens = {384, 256, -4, 0};
  EXPECT_EQ(over, s.score(S, 0, 0));
}

// Random codes and scales: each written raw score equals the max over the visible tokens
// of the dot of the dequantised key with q, computed here token by token.
TEST(ReferenceNvScore, RawIsTheMaxOfVisibleDots) {
  std::mt19937 rng(41);
  const int reqs = 3, ql = 3, heads = 2, max_blocks = 3;
  NvSetup s(reqs, ql, heads, max_blocks, 7);
  std::uniform_int_distribution<int> byte(0, 255), scale(0, 0x5F), qbyte(0, 0x6F);
  for (int p = 0; p < 7; ++p) {
    uint8_t* page = s.cache.data() + p * 9216;
    for (int i = 0; i < 8192; ++i) page[i] = static_cast<uint8_t>(byte(rng));
    for (int i = 8192; i < 9216; ++i) page[i] = static_cast<uint8_t>(scale(rng));
  }
  for (int row = 0; row < reqs * ql; ++row)
    for (int h = 0; h < heads; ++h)
      for (int d = 0; d < 128; ++d) s.qrow(row, h)[d] = static_cast<uint8_t>(qbyte(rng) | (byte(rng) & 0x80));
  s.tables = {6, 2, 4, 0, 1, 3, 5, 5, 5};
  s.lens = {257, 129, 3};
  const int64_t S = 5;
  const std::vector<float> r = s.score(S, 0, 0);
  for (int req = 0; req < reqs; ++req)
    for (int row = 0; row < ql; ++row)
      for (int h = 0; h < heads; ++h) {
        const int64_t vis = s.lens[req] - ql + row + 1;
        for (int b = 0; b < S; ++b) {
          const float got = r[(h * reqs * ql + req * ql + row) * S + b];
          if (b >= (s.lens[req] + 127) / 128) {
            EXPECT_EQ(got, 123.0f);
            continue;
          }
          double best = -kInf;
          const uint8_t* page = s.cache.data() + s.tables[req * max_blocks + b] * 9216;
          for (int64_t t = 0; t < 128 && b * 128 + t < vis; ++t) {
            double dot = 0;
            for (int d = 0; d < 128; ++d)
              dot += uqref::e4m3_value(s.qrow(req * ql + row, h)[d]) * uqref::nv_dequant(page, static_cast<int>(t), d);
            best = std::max(best, static_cast<double>(static_cast<float>(dot)));
          }
          EXPECT_EQ(static_cast<double>(got), best) << req << " " << row << " " << h << " " << b;
        }
      }
}

// =============================================================================== selection

TEST(ReferenceNvSelect, OrderTiesNanAndPadding) {
  // One request, QL = 1, H = 1, L = 8 * 128: 8 visible blocks.
  const int64_t S = 10;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> scores = {3, 5, 5, nan, -kInfF, 1e30f, 1e29f, 5, 99, 99};  // 8, 9 invisible
  const int32_t lens[1] = {8 * 128};
  std::vector<int32_t> out(16, 77);
  uqref::nv_select(scores.data(), S, lens, 1, 1, 1, 16, out.data());
  const std::vector<int32_t> expect = {5, 6, 1, 2, 7, 0, 3, 4, -1, -1, -1, -1, -1, -1, -1, -1};
  EXPECT_EQ(out, expect);
  std::vector<int32_t> top3(3, 77);
  uqref::nv_select(scores.data(), S, lens, 1, 1, 1, 3, top3.data());
  EXPECT_EQ(top3, (std::vector<int32_t>{5, 6, 1}));
}

TEST(ReferenceNvSelect, RowsHeadsAndLengths) {
  // Two requests, QL = 2, H = 2, S = 3. Req 0: L = 129 (row 0 sees 1 block, row 1 two);
  // req 1: L = -3 (nothing visible).
  const int64_t S = 3;
  const int R = 2, QL = 2, H = 2, k = 2;
  std::vector<float> scores(static_cast<std::size_t>(H) * R * QL * S, 50.0f);
  auto at = [&](int h, int row, int b) -> float& { return scores[(h * R * QL + row) * S + b]; };
  at(0, 0, 0) = 1;
  at(0, 1, 0) = 1;
  at(0, 1, 1) = 2;
  at(1, 0, 0) = -1;
  at(1, 1, 0) = 7;
  at(1, 1, 1) = 7;
  const int32_t lens[2] = {129, -3};
  std::vector<int32_t> out(static_cast<std::size_t>(H) * R * QL * k, 77);
  uqref::nv_select(scores.data(), S, lens, R, QL, H, k, out.data());
  const std::vector<int32_t> expect = {0, -1, 1, 0, -1, -1, -1, -1,    // head 0: rows 0..3
                                       0, -1, 0, 1, -1, -1, -1, -1};   // head 1
  EXPECT_EQ(out, expect);
  // A length whose visible blocks exceed S reads only the S columns.
  const int32_t big[1] = {100000};
  std::vector<int32_t> o(4, 77);
  const std::vector<float> row = {1, 3, 2};
  uqref::nv_select(row.data(), 3, big, 1, 1, 1, 4, o.data());
  EXPECT_EQ(o, (std::vector<int32_t>{1, 2, 0, -1}));
}

}  // namespace
