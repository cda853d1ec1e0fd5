// src/uq/types.hpp codecs against the float64 reference (reference/uqref_formats.hpp).
// Codecs are exact functions, so every comparison is bit-for-bit (tolerance 0); NaN is
// compared by NaN-ness, quietness and sign, because the spec fixes no NaN payload.
// Small domains are swept exhaustively; float -> bf16 and float -> E4M3 are swept over
// all 2^32 floats using the monotonicity of rounding (see ExpectMonotoneSweep).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "uq/impl/e4m3_rounding.hpp"
#include "uq/types.hpp"
#include "uqref.hpp"

namespace {

using uq::codec::bits_float;
using uq::codec::float_bits;

bool is_nan_bits(std::uint32_t u) { return (u & 0x7fffffffu) > 0x7f800000u; }

bool bf16_is_quiet_nan(std::uint16_t b) { return (b & 0x7f80u) == 0x7f80u && (b & 0x0040u) != 0; }

std::uint16_t src_bf16_round(float x) { return uq::codec::float_to_bf16(x).bits; }

// Expects src == reference for one float -> bf16 rounding.
void expect_bf16_round_matches(float x) {
  const std::uint16_t ref = uqref::bf16_round(x);
  const std::uint16_t src = src_bf16_round(x);
  if (std::isnan(x)) {
    EXPECT_TRUE(bf16_is_quiet_nan(src)) << std::hex << "input 0x" << float_bits(x) << " gave 0x" << src;
    EXPECT_EQ(src & 0x8000u, ref & 0x8000u) << std::hex << "sign of NaN 0x" << float_bits(x);
  } else {
    EXPECT_EQ(src, ref) << std::hex << "float bits 0x" << float_bits(x);
  }
}

// Exhaustive check of a monotone rounding `src` (float -> code of `code_bits` bits, sign in
// the top bit) over every float, against a reference `ref`. Rounding to nearest is
// monotone in the magnitude, so the non-negative floats that round to magnitude code c
// form one contiguous range of bit patterns; its start is found from the reference by
// bisection. Then every non-negative float and its negation are run through src and
// compared with the code of the range they fall in: 2^32 src calls but only
// (codes x 32) reference calls, which keeps the sweep within seconds.
// nan_ok(code, negative) judges the result for a NaN input of the given sign.
template <class Src, class Ref, class NanOk>
void ExpectMonotoneSweep(Src src, Ref ref, unsigned max_code, unsigned sign_bit, NanOk nan_ok) {
  // first[c] = smallest non-negative float bit pattern (up to +inf) with ref >= c.
  const std::uint32_t last = 0x7f800000u;  // +inf
  std::vector<std::uint32_t> first(max_code + 2, last + 1);
  first[0] = 0;
  for (unsigned c = 1; c <= max_code; ++c) {
    std::uint32_t lo = first[c - 1], hi = last + 1;  // answer in [lo, hi]
    while (lo < hi) {
      const std::uint32_t mid = lo + (hi - lo) / 2;
      if (ref(bits_float(mid)) >= c)
        hi = mid;
      else
        lo = mid + 1;
    }
    first[c] = lo;
  }
  // The reference must reach every code it is said to reach, in order (no code skipped
  // by the bisection's monotonicity assumption).
  for (unsigned c = 0; c <= max_code; ++c) {
    ASSERT_LE(first[c], last) << "code " << c << " never produced";
    ASSERT_EQ(ref(bits_float(first[c])), c) << "code " << c;
  }

  std::uint64_t mismatches = 0;
  unsigned code = 0;
  for (std::uint64_t u = 0; u <= last; ++u) {
    while (code < max_code && u >= first[code + 1]) ++code;
    const std::uint32_t bits = static_cast<std::uint32_t>(u);
    const unsigned pos = src(bits_float(bits));
    const unsigned neg = src(bits_float(bits | 0x80000000u));
    if (pos != code || neg != (code | sign_bit)) {
      if (++mismatches <= 10)
        ADD_FAILURE() << std::hex << "float bits 0x" << bits << ": src 0x" << pos << " / 0x" << neg
                      << ", reference 0x" << code;
    }
  }
  EXPECT_EQ(mismatches, 0u);

  // NaN inputs: every NaN pattern, both signs.
  std::uint64_t nan_mismatches = 0;
  for (std::uint64_t u = last + 1; u <= 0x7fffffffu; ++u) {
    const std::uint32_t bits = static_cast<std::uint32_t>(u);
    const unsigned pos = src(bits_float(bits));
    const unsigned neg = src(bits_float(bits | 0x80000000u));
    if (!nan_ok(pos, false) || !nan_ok(neg, true)) ++nan_mismatches;
  }
  EXPECT_EQ(nan_mismatches, 0u);
}

// ------------------------------------------------------------------------------- bf16

TEST(CodecBf16, DecodeEveryBitPattern) {
  for (std::uint32_t b = 0; b < 0x10000u; ++b) {
    const auto bits = static_cast<std::uint16_t>(b);
    const float src = uq::codec::bf16_to_float(uq::bf16{bits});
    const float ref = uqref::bf16_value(bits);
    if (std::isnan(ref)) {
      EXPECT_TRUE(std::isnan(src)) << std::hex << b;
      EXPECT_EQ(std::signbit(src), std::signbit(ref)) << std::hex << b;
    } else {
      EXPECT_EQ(float_bits(src), float_bits(ref)) << std::hex << b;  // also tells -0 from +0
    }
  }
}

// Every kept 16-bit pattern with a set of discarded low halves around the rounding
// decisions: exact (0x0000), just above (0x0001), just below / at / just above the tie
// (0x7fff, 0x8000, 0x8001) and the top (0xffff), plus two random low halves. With an even
// and an odd kept bit for every exponent this covers every tie pattern, the carry into
// the exponent (mantissa 0x7f rounding up), subnormals, overflow to infinity, infinities
// and every NaN class (the high half alone, or with a non-zero low half).
TEST(CodecBf16, RoundEveryTiePatternAndNeighbours) {
  std::mt19937 rng(12345);
  const std::uint32_t lows[] = {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu};
  int ties_down = 0, ties_up = 0;
  for (std::uint32_t hi = 0; hi < 0x10000u; ++hi) {
    for (std::uint32_t lo : lows) expect_bf16_round_matches(bits_float((hi << 16) | lo));
    for (int i = 0; i < 2; ++i) expect_bf16_round_matches(bits_float((hi << 16) | (rng() & 0xffffu)));
    const float tie = bits_float((hi << 16) | 0x8000u);
    if (!std::isnan(tie) && !std::isinf(tie)) {
      const std::uint16_t r = src_bf16_round(tie);
      ((r & 0x7fffu) == (hi & 0x7fffu)) ? ++ties_down : ++ties_up;
    }
  }
  // 65536 - 256 (exponent 0xff) finite ties: half keep an even bit and round down, half
  // round up to the next even pattern.
  EXPECT_EQ(ties_down, 32640);
  EXPECT_EQ(ties_up, 32640);
}

TEST(CodecBf16, RoundSpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const float specials[] = {0.0f,
                            -0.0f,
                            inf,
                            -inf,
                            std::numeric_limits<float>::max(),
                            -std::numeric_limits<float>::max(),
                            std::numeric_limits<float>::min(),
                            std::numeric_limits<float>::denorm_min(),
                            -std::numeric_limits<float>::denorm_min(),
                            bits_float(0x007f8000u),  // largest subnormal tie -> min normal (carry)
                            bits_float(0x3fff8000u),  // 1.99609375 + tie -> 2.0 (carry into exponent)
                            bits_float(0x7f7f8000u),  // tie above the largest bf16 -> inf
                            std::numeric_limits<float>::quiet_NaN(),
                            -std::numeric_limits<float>::quiet_NaN(),
                            bits_float(0x7f800001u),  // signalling NaN whose payload is below bit 16
                            bits_float(0xff800001u),
                            bits_float(0x7fa00000u)};
  for (float x : specials) expect_bf16_round_matches(x);
  // NaN with a payload only in the dropped half must not become infinity.
  EXPECT_EQ(src_bf16_round(bits_float(0x7f800001u)) & 0x7fu, 0x40u);
}

TEST(CodecBf16, RoundExhaustiveAllFloats) {
  ExpectMonotoneSweep([](float x) -> unsigned { return src_bf16_round(x); },
                      [](float x) -> unsigned { return uqref::bf16_round(x); }, 0x7f80u, 0x8000u,
                      [](unsigned code, bool negative) {
                        return bf16_is_quiet_nan(static_cast<std::uint16_t>(code)) &&
                               ((code & 0x8000u) != 0) == negative;
                      });
}

// ------------------------------------------------------------------------------- E4M3

TEST(CodecE4m3, DecodeAll256) {
  int nans = 0;
  for (unsigned b = 0; b < 256; ++b) {
    const auto byte = static_cast<std::uint8_t>(b);
    const float src = uq::codec::e4m3_to_float(byte);
    const double ref = uqref::e4m3_value(byte);
    if (std::isnan(ref)) {
      ++nans;
      EXPECT_TRUE(std::isnan(src)) << std::hex << b;
      EXPECT_EQ(std::signbit(src), std::signbit(ref)) << std::hex << b;
    } else {
      EXPECT_EQ(static_cast<double>(src), ref) << std::hex << b;
      EXPECT_EQ(std::signbit(src), std::signbit(ref)) << std::hex << b;
    }
  }
  EXPECT_EQ(nans, 2);  // 0x7f and 0xff only
}

TEST(CodecE4m3, EncodeEveryValue) {
  for (unsigned b = 0; b < 256; ++b) {
    if ((b & 0x7fu) == 0x7fu) continue;  // NaN
    const auto byte = static_cast<std::uint8_t>(b);
    const float v = static_cast<float>(uqref::e4m3_value(byte));
    EXPECT_EQ(uq::codec::float_to_e4m3(v), byte) << std::hex << b;
    EXPECT_EQ(uqref::e4m3_round(v), byte) << std::hex << b;
  }
}

// Midpoints between consecutive E4M3 magnitudes (exact in float: at most 5 significant
// bits) are the ties; their float neighbours one ulp away must round away from the tie.
TEST(CodecE4m3, EncodeMidpointsAndNeighbours) {
  int ties = 0;
  for (unsigned c = 0; c < 0x7e; ++c) {
    const double lo = uqref::e4m3_value(static_cast<std::uint8_t>(c));
    const double hi = uqref::e4m3_value(static_cast<std::uint8_t>(c + 1));
    const float mid = static_cast<float>(0.5 * (lo + hi));
    ASSERT_EQ(static_cast<double>(mid), 0.5 * (lo + hi));
    const float inf = std::numeric_limits<float>::infinity();
    for (float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, inf)}) {
      for (float sx : {x, -x}) {
        EXPECT_EQ(uq::codec::float_to_e4m3(sx), uqref::e4m3_round(sx)) << sx;
      }
    }
    // The tie itself goes to the even code; the neighbours go to their side.
    EXPECT_EQ(unsigned{uqref::e4m3_round(mid)}, (c % 2 == 0) ? c : c + 1);
    EXPECT_EQ(unsigned{uqref::e4m3_round(std::nextafter(mid, 0.0f))}, c);
    EXPECT_EQ(unsigned{uqref::e4m3_round(std::nextafter(mid, inf))}, c + 1);
    ++ties;
  }
  EXPECT_EQ(ties, 126);
}

TEST(CodecE4m3, EncodeSubnormalRangeDense) {
  // Every float in [0, 2^-6] on a fine grid (2^-20 apart, 2^14 points), plus both
  // neighbours of every grid point, both signs.
  for (int i = 0; i <= (1 << 14); ++i) {
    const float g = std::ldexp(static_cast<float>(i), -20);
    for (float x : {g, std::nextafter(g, 0.0f), std::nextafter(g, 1.0f)})
      for (float sx : {x, -x}) EXPECT_EQ(uq::codec::float_to_e4m3(sx), uqref::e4m3_round(sx)) << sx;
  }
}

TEST(CodecE4m3, EncodeSaturationAndNaN) {
  const float inf = std::numeric_limits<float>::infinity();
  const float big[] = {448.0f, std::nextafter(448.0f, inf), 463.99f, 464.0f, 464.01f, 480.0f,
                       1e30f, std::numeric_limits<float>::max(), inf};
  for (float x : big) {
    EXPECT_EQ(uq::codec::float_to_e4m3(x), 0x7e) << x;
    EXPECT_EQ(uq::codec::float_to_e4m3(-x), 0xfe) << x;
    EXPECT_EQ(uqref::e4m3_round(x), 0x7e) << x;
    EXPECT_EQ(uqref::e4m3_round(-x), 0xfe) << x;
  }
  // Just below 448: 416 (0x7d) and 448 are neighbours, midpoint 432.
  EXPECT_EQ(uq::codec::float_to_e4m3(432.0f), uqref::e4m3_round(432.0));
  EXPECT_EQ(uq::codec::float_to_e4m3(std::nextafter(432.0f, inf)), 0x7e);
  for (std::uint32_t nan_bits : {0x7fc00000u, 0x7f800001u, 0x7fffffffu, 0xffc00000u, 0xff800001u}) {
    const float x = bits_float(nan_bits);
    ASSERT_TRUE(is_nan_bits(nan_bits));
    const std::uint8_t expect = (nan_bits & 0x80000000u) ? 0xff : 0x7f;
    EXPECT_EQ(uq::codec::float_to_e4m3(x), expect) << std::hex << nan_bits;
    EXPECT_EQ(uqref::e4m3_round(x), expect) << std::hex << nan_bits;
  }
}

TEST(CodecE4m3, EncodeExhaustiveAllFloats) {
  ExpectMonotoneSweep([](float x) -> unsigned { return uq::codec::float_to_e4m3(x); },
                      [](float x) -> unsigned { return uqref::e4m3_round(x); }, 0x7eu, 0x80u,
                      [](unsigned code, bool negative) { return code == (negative ? 0xffu : 0x7fu); });
}

// The generic decode's branch-free query rounding (uq/impl/e4m3_rounding.hpp) against the
// reference on every float: its value must be exactly an E4M3 value (else the code 0x100,
// which matches nothing) whose code is the reference's.
TEST(CodecE4m3, RoundSelectExhaustiveAllFloats) {
  const auto code_of_value = [](float x) -> unsigned {
    const float y = uq::impl::round_e4m3_select(x);
    const std::uint8_t code = uq::codec::float_to_e4m3(y);
    const bool exact = std::isnan(y) ? std::isnan(uq::codec::e4m3_to_float(code))
                                     : float_bits(uq::codec::e4m3_to_float(code)) == float_bits(y);
    return exact ? code : 0x100u;
  };
  ExpectMonotoneSweep(code_of_value, [](float x) -> unsigned { return uqref::e4m3_round(x); }, 0x7eu, 0x80u,
                      [](unsigned code, bool negative) { return code == (negative ? 0xffu : 0x7fu); });
}

// ------------------------------------------------------------------------------- E2M1

TEST(CodecE2m1, AllSixteenCodes) {
  for (unsigned c = 0; c < 16; ++c) {
    const float src = uq::codec::e2m1_to_float(c);
    const double ref = uqref::e2m1_value(c);
    EXPECT_EQ(static_cast<double>(src), ref) << c;
    EXPECT_EQ(std::signbit(src), std::signbit(ref)) << c;  // code 8 is -0
  }
}

// ------------------------------------------------------------------------------- UE8M0

// Bytes 1..254 are 2^(b-127) in both. Byte 0 is the zero-group marker: both give 0.
// Byte 255 is never written; the spec lets decoders give NaN or Inf: src gives +inf, the
// reference NaN, so only "not finite" is common ground.
TEST(CodecUe8m0, All256Bytes) {
  for (unsigned b = 1; b <= 254; ++b) {
    const auto byte = static_cast<std::uint8_t>(b);
    EXPECT_EQ(static_cast<double>(uq::codec::ue8m0_to_float(byte)), uqref::ue8m0_value(byte)) << b;
  }
  EXPECT_EQ(uq::codec::ue8m0_to_float(0), 0.0f);
  EXPECT_EQ(uqref::ue8m0_value(0), 0.0);
  EXPECT_FALSE(std::isfinite(uq::codec::ue8m0_to_float(255)));
  EXPECT_TRUE(std::isnan(uqref::ue8m0_value(255)));
}

}  // namespace
