// Emulated conversions and per-lane arithmetic (spec §5, §6; v_perm_b32, v_exp_f32) at
// ties, subnormals, saturation and overflow, against the float64 reference (uqref) and
// against brute-force nearest-value searches written from the format definitions.
#include "emu_test_support.hpp"

namespace emu_test {
namespace {

const unsigned kExponents[] = {0, 1, 2, 100, 126, 127, 128, 130, 200, 251, 252, 253, 254, 255};

// ---------------------------------------------------------------- scaled FP4 dequant
TEST(EmuConvert, ScaledFp4ToF32EveryCodeSelectorAndExponent) {
  for (unsigned e : kExponents) {
    // Only the exponent field of the scale counts: sign and mantissa bits are noise.
    const float scale = f32_from_bits((e << 23) | 0x80000000u | 0x005A5A5Au);
    for (unsigned word = 0; word < 256; ++word) {
      const std::uint32_t src = (word << 16) | 0x0000A5C3u | ((word ^ 0x3C) << 24);
      const f32x2 got = cvt_scalef32_pk_f32_fp4<2>(src, scale);
      for (int half = 0; half < 2; ++half) {
        const unsigned code = half == 0 ? word & 15 : word >> 4;
        const double v = uqref::e2m1_value(code);
        if (e == 255) {
          ASSERT_TRUE(std::isnan(got[half]));
          EXPECT_EQ(std::signbit(got[half]), (code & 8) != 0);
          continue;
        }
        // Exact for E <= 252; 4 * 2^126 and 6 * 2^126 (E 253) and >= 2 * 2^127 overflow.
        const float expected = static_cast<float>(std::ldexp(v, static_cast<int>(e) - 127));
        ASSERT_EQ(bits_of(got[half]), bits_of(expected))
            << "E " << e << " code " << code << ": " << got[half] << " vs " << expected;
      }
    }
  }
  // The smallest: 0.5 * 2^-127 = 2^-128, an fp32 subnormal, not flushed.
  EXPECT_EQ(cvt_scalef32_pk_f32_fp4<0>(0x01u, e8m0_as_float(0))[0], std::ldexp(1.0f, -128));
  // E = 253: 3 * 2^126 fits, 4 * 2^126 = 2^128 overflows to +Inf.
  EXPECT_TRUE(std::isfinite(cvt_scalef32_pk_f32_fp4<0>(0x05u, e8m0_as_float(253))[0]));
  EXPECT_EQ(cvt_scalef32_pk_f32_fp4<0>(0xE6u, e8m0_as_float(253))[0],
            std::numeric_limits<float>::infinity());
  EXPECT_EQ(cvt_scalef32_pk_f32_fp4<0>(0xE6u, e8m0_as_float(253))[1],
            -std::numeric_limits<float>::infinity());
}

TEST(EmuConvert, ScaledFp4ToBf16EveryCodeSelectorAndExponent) {
  for (unsigned e : kExponents) {
    const float scale = e8m0_as_float(e);
    for (unsigned byte = 0; byte < 256; ++byte) {
      for (int sel = 0; sel < 4; ++sel) {
        const std::uint32_t src = (byte << (8 * sel)) | (0x5Au << (8 * ((sel + 1) % 4)));
        std::uint32_t got = 0;
        switch (sel) {
          case 0: got = cvt_scalef32_pk_bf16_fp4<0>(src, scale); break;
          case 1: got = cvt_scalef32_pk_bf16_fp4<1>(src, scale); break;
          case 2: got = cvt_scalef32_pk_bf16_fp4<2>(src, scale); break;
          default: got = cvt_scalef32_pk_bf16_fp4<3>(src, scale); break;
        }
        for (int half = 0; half < 2; ++half) {
          const unsigned code = half == 0 ? byte & 15 : byte >> 4;
          const auto bits = static_cast<std::uint16_t>(got >> (16 * half));
          const float value = uqref::bf16_value(bits);
          if (e == 255) {
            ASSERT_TRUE(std::isnan(value)) << byte;
            continue;
          }
          const float exact = static_cast<float>(std::ldexp(uqref::e2m1_value(code), static_cast<int>(e) - 127));
          // fp4 * 2^k is exact in bf16 (2 significant bits; bf16 subnormals reach 2^-133).
          ASSERT_EQ(bits, uqref::bf16_round(exact)) << "E " << e << " byte " << byte << " sel " << sel;
          ASSERT_EQ(value, exact);
        }
      }
    }
  }
}

// ---------------------------------------------------------------- scaled FP4 quantise
// Brute force: the E2M1 code nearest to y, ties to the code with even mantissa bit,
// magnitudes above 6 saturate; the sign is kept (also for zero).
unsigned nearest_e2m1(double y) {
  const unsigned sign = std::signbit(y) ? 8u : 0u;
  if (std::isnan(y) || std::isinf(y)) return sign | 7u;
  const double a = std::fabs(y);
  if (a >= 6.0) return sign | 7u;  // 6 and beyond: saturated
  unsigned best = 0;
  for (unsigned c = 1; c < 8; ++c) {
    const double dc = std::fabs(uqref::e2m1_value(c) - a), db = std::fabs(uqref::e2m1_value(best) - a);
    if (dc < db || (dc == db && (c & 1u) == 0)) best = c;
  }
  return sign | best;
}

TEST(EmuConvert, Fp4QuantiseTiesAndSaturation) {
  // spec §5.2: 0.25 -> 0, 0.75 -> 1.0, 2.5 -> 2, 3.5 -> 4, 5 -> 4, >= 7 -> 6 (saturated).
  struct Case {
    float x;
    unsigned code;
  };
  const Case cases[] = {{0.25f, 0x0}, {0.75f, 0x2}, {1.25f, 0x2}, {1.75f, 0x4}, {2.5f, 0x4},
                        {3.5f, 0x6},  {5.0f, 0x6},  {6.9f, 0x7},  {7.0f, 0x7},  {1e30f, 0x7},
                        {0.5f, 0x1},  {0.2f, 0x0},  {0.26f, 0x1}, {-0.25f, 0x8}, {-0.0f, 0x8},
                        {-5.0f, 0xE}, {-100.0f, 0xF}};
  const float unit = e8m0_as_float(127);
  for (const Case& c : cases) {
    const std::uint32_t got = cvt_scalef32_pk_fp4_f32<0>(0u, c.x, 0.0f, unit);
    EXPECT_EQ(got & 0xFu, c.code) << c.x;
    EXPECT_EQ(c.code, nearest_e2m1(c.x)) << "reference disagrees for " << c.x;
  }
  // NaN and Inf saturate to +-6 (spec hypothesis, UNCONFIRMED on silicon).
  EXPECT_EQ(cvt_scalef32_pk_fp4_f32<0>(0u, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(), unit), 0xF7u);
  EXPECT_EQ(cvt_scalef32_pk_fp4_f32<0>(0u, std::nanf(""), 0.0f, unit) & 0x7u, 0x7u);
}

TEST(EmuConvert, Fp4QuantiseDividesByTheScaleAndKeepsOtherBytes) {
  std::uniform_real_distribution<float> mantissa(-8.0f, 8.0f);
  std::uniform_int_distribution<int> shift(-12, 12);
  for (int i = 0; i < 20000; ++i) {
    const unsigned e = 100 + static_cast<unsigned>(i % 60);
    const float a = std::ldexp(mantissa(rng()), shift(rng()) + static_cast<int>(e) - 127);
    const float b = std::ldexp(mantissa(rng()), static_cast<int>(e) - 127);
    const std::uint32_t old = 0xDEADBEEFu;
    const std::uint32_t got = cvt_scalef32_pk_fp4_f32<2>(old, a, b, e8m0_as_float(e));
    const double ya = std::ldexp(static_cast<double>(a), 127 - static_cast<int>(e));
    const double yb = std::ldexp(static_cast<double>(b), 127 - static_cast<int>(e));
    const std::uint32_t byte = nearest_e2m1(ya) | (nearest_e2m1(yb) << 4);
    ASSERT_EQ(got, (old & 0xFF00FFFFu) | (byte << 16)) << a << " " << b << " E " << e;
  }
  // Every byte position.
  EXPECT_EQ(cvt_scalef32_pk_fp4_f32<0>(0x11223344u, 1.0f, 6.0f, 1.0f), 0x11223372u);
  EXPECT_EQ(cvt_scalef32_pk_fp4_f32<1>(0x11223344u, 1.0f, 6.0f, 1.0f), 0x11227244u);
  EXPECT_EQ(cvt_scalef32_pk_fp4_f32<3>(0x11223344u, 1.0f, 6.0f, 1.0f), 0x72223344u);
}

// ---------------------------------------------------------------- FP8 E4M3
TEST(EmuConvert, Fp8DecodeEveryCode) {
  for (unsigned word = 0; word < 65536; ++word) {
    const std::uint32_t src = word << 16 | 0x7F7Fu;  // the other word holds NaNs
    const f32x2 got = cvt_pk_f32_fp8<true>(src);
    for (int i = 0; i < 2; ++i) {
      const double v = uqref::e4m3_value(static_cast<std::uint8_t>(word >> (8 * i)));
      if (std::isnan(v)) {
        ASSERT_TRUE(std::isnan(got[i])) << word;
      } else {
        ASSERT_EQ(static_cast<double>(got[i]), v) << word;
        ASSERT_EQ(std::signbit(got[i]), std::signbit(v)) << word;
      }
    }
  }
  const f32x2 low = cvt_pk_f32_fp8<false>(0xFFFF7E01u);
  EXPECT_EQ(low[0], std::ldexp(1.0f, -9));  // 0x01: the smallest subnormal
  EXPECT_EQ(low[1], 448.0f);                // 0x7E: the largest finite
}

TEST(EmuConvert, Fp8EncodeTiesSubnormalsAndOverflowToNaN) {
  struct Case {
    float x;
    unsigned code;
  };
  const Case cases[] = {
      {17.0f, 0x58},                    // tie 16 | 18 -> 16 (even mantissa)
      {19.0f, 0x5A},                    // tie 18 | 20 -> 20
      {std::ldexp(1.0f, -10), 0x00},    // tie 0 | 2^-9 -> 0
      {std::ldexp(3.0f, -10), 0x02},    // tie 2^-9 | 2^-8 -> 2^-8
      {std::ldexp(1.0f, -9), 0x01},     // smallest subnormal
      {std::ldexp(7.5f, -9), 0x08},     // 7.5 * 2^-9: tie 7 | 8 quanta -> 8 = 2^-6 (normal)
      {448.0f, 0x7E},
      {464.0f, 0x7E},                   // tie 448 | (480) -> 448: in range after rounding
      {464.0001f, 0x7F},                // rounds to 480 > 448: NaN, not saturation
      {1000.0f, 0x7F},
      {-1000.0f, 0xFF},
      {std::numeric_limits<float>::infinity(), 0x7F},
      {-std::numeric_limits<float>::infinity(), 0xFF},
      {std::nanf(""), 0x7F},
      {-0.0f, 0x80},
      {-std::ldexp(1.0f, -11), 0x80},   // rounds to -0
      {std::ldexp(1.0f, -140), 0x00},   // an f32 denormal input
  };
  for (const Case& c : cases) {
    const std::uint32_t got = cvt_pk_fp8_f32<false>(c.x, 1.0f, 0xABCD0000u);
    EXPECT_EQ(got & 0xFFu, c.code) << c.x;
    EXPECT_EQ(got >> 8, 0xABCD38u) << "second byte 1.0 = 0x38, high word kept";
  }
  // Word select: bits 31..16, the low word kept.
  EXPECT_EQ(cvt_pk_fp8_f32<true>(2.0f, -0.5f, 0x00001234u), 0xB0401234u);
}

TEST(EmuConvert, Fp8EncodeAgreesWithTheReferenceBelowOverflow) {
  // Below 448 (after clamping, which is what kernels do) the converter is the reference's
  // RNE; above, the reference saturates and the converter gives NaN.
  std::uniform_real_distribution<float> mantissa(-2.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-14, 9);
  for (int i = 0; i < 200000; ++i) {
    const float x = std::ldexp(mantissa(rng()), exponent(rng()));
    const std::uint32_t got = cvt_pk_fp8_f32<false>(x, 0.0f, 0u) & 0xFFu;
    if (std::fabs(x) <= 464.0f) {
      ASSERT_EQ(got, uqref::e4m3_round(x)) << x;
    } else {
      ASSERT_EQ(got, std::signbit(x) ? 0xFFu : 0x7Fu) << x;
    }
    const float clamped = x > 448.0f ? 448.0f : (x < -448.0f ? -448.0f : x);
    ASSERT_EQ(cvt_pk_fp8_f32<false>(clamped, 0.0f, 0u) & 0xFFu, uqref::e4m3_round(x)) << x;
  }
}

// ---------------------------------------------------------------- bf16 pack
TEST(EmuConvert, Bf16PackRoundsToNearestEven) {
  std::uniform_int_distribution<std::uint32_t> any;
  for (int i = 0; i < 100000; ++i) {
    const float a = f32_from_bits(any(rng())), b = f32_from_bits(any(rng()));
    const std::uint32_t got = cvt_pk_bf16_f32(a, b);
    for (int h = 0; h < 2; ++h) {
      const float x = h == 0 ? a : b;
      const auto bits = static_cast<std::uint16_t>(got >> (16 * h));
      if (std::isnan(x)) {
        ASSERT_TRUE(std::isnan(uqref::bf16_value(bits)));
      } else {
        ASSERT_EQ(bits, uqref::bf16_round(x)) << x;
      }
    }
  }
  // Ties: 1 + 2^-8 -> 1 (even), 1 + 3 * 2^-8 -> 1 + 2^-6.
  EXPECT_EQ(cvt_pk_bf16_f32(1.00390625f, 1.01171875f), 0x3F823F80u);
}

// ---------------------------------------------------------------- v_perm_b32, v_exp_f32
TEST(EmuConvert, PermSelectsBytesSignsAndConstants) {
  const std::uint32_t hi = 0x80FF7F01u, lo = 0x04838201u;
  // bytes 0..7 of {hi, lo}: 01 82 83 04 | 01 7F FF 80
  EXPECT_EQ(perm_b32(hi, lo, 0x0C0D0105u), 0x00FF827Fu);
  EXPECT_EQ(perm_b32(hi, lo, 0x0B0A0908u), 0xFF0000FFu);  // signs of bytes 1, 3, 5, 7
  EXPECT_EQ(perm_b32(hi, lo, 0x800E0D0Cu), 0xFFFFFF00u);  // 12 -> 00, >= 13 -> FF
  EXPECT_EQ(perm_b32(hi, lo, 0x05040100u), (hi << 16) | (lo & 0xFFFFu));  // pack low halves
  EXPECT_EQ(perm_b32(hi, lo, 0x07060302u), (hi & 0xFFFF0000u) | (lo >> 16));
}

TEST(EmuConvert, FastExp2) {
  for (int k = -126; k <= 127; ++k) EXPECT_EQ(fast_exp2(static_cast<float>(k)), std::ldexp(1.0f, k)) << k;
  // No denormal results (UNCONFIRMED hypothesis): below 2^-126 the result is +0.
  EXPECT_EQ(fast_exp2(-127.0f), 0.0f);
  EXPECT_EQ(fast_exp2(-126.5f), 0.0f);
  EXPECT_EQ(fast_exp2(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(fast_exp2(128.0f), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(fast_exp2(std::nanf(""))));
  std::uniform_real_distribution<float> x(-100.0f, 100.0f);
  for (int i = 0; i < 10000; ++i) {
    const float v = x(rng());
    const double exact = std::exp2(static_cast<double>(v));
    // The emulator rounds correctly (the hardware is within about 1 ulp): half an ulp.
    ASSERT_LE(std::fabs(fast_exp2(v) - exact), std::ldexp(exact, -24)) << v;
  }
}

TEST(EmuConvert, ConversionsRunInsideKernels) {
  // The same functions as kernel code sees them, in every lane.
  std::vector<std::uint32_t> got(64);
  run_one_wave([&] {
    const float x = static_cast<float>(lane_id()) - 31.5f;
    const std::uint32_t w = cvt_pk_fp8_f32<false>(x, -x, 0u);
    const f32x2 back = cvt_pk_f32_fp8<false>(w);
    got[lane_id()] = back[0] == -back[1] ? bits_of(back[0]) : 0u;
  });
  for (std::uint32_t l = 0; l < 64; ++l) {
    const float x = static_cast<float>(l) - 31.5f;
    EXPECT_EQ(f32_from_bits(got[l]), static_cast<float>(uqref::e4m3_value(uqref::e4m3_round(x)))) << l;
  }
}

}  // namespace
}  // namespace emu_test
