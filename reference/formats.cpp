// Scalar formats, from their definitions (see uqref_formats.hpp).
#include "uqref_formats.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace uqref {
namespace {

double quiet_nan_with_sign(bool negative) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  return negative ? -nan : nan;
}

// Nearest integer to n >= 0 (n < 2^53, so floor and the difference are exact), ties to even.
double round_half_even(double n) {
  const double f = std::floor(n);
  const double frac = n - f;
  if (frac > 0.5) return f + 1.0;
  if (frac < 0.5) return f;
  return std::fmod(f, 2.0) == 0.0 ? f : f + 1.0;
}

// Encodes a non-negative magnitude that is a bf16 value (or >= 2^128, meaning infinity)
// into the 15 exponent-and-mantissa bits.
std::uint16_t bf16_magnitude_bits(double v) {
  if (v >= std::ldexp(1.0, 128)) return 0x7F80;
  if (v < std::ldexp(1.0, -126)) {
    // Subnormal: exponent field 0, value = m * 2^-133.
    return static_cast<std::uint16_t>(std::ldexp(v, 133));
  }
  int e = 0;
  const double f = std::frexp(v, &e);  // v = f * 2^e, f in [0.5, 1): v = (2f) * 2^(e-1)
  const int biased = e - 1 + 127;
  const int mantissa = static_cast<int>((2.0 * f - 1.0) * 128.0);
  return static_cast<std::uint16_t>((biased << 7) | mantissa);
}

// The 127 finite non-negative E4M3 values, indexed by their code 0x00..0x7E (increasing).
const std::array<double, 127>& e4m3_nonnegative_values() {
  static const std::array<double, 127> table = [] {
    std::array<double, 127> t{};
    for (int c = 0; c < 127; ++c) t[c] = e4m3_value(static_cast<std::uint8_t>(c));
    return t;
  }();
  return table;
}

}  // namespace

float bf16_value(std::uint16_t bits) {
  const bool negative = (bits >> 15) != 0;
  const int e = (bits >> 7) & 0xFF;
  const int m = bits & 0x7F;
  double mag;
  if (e == 0xFF) {
    if (m != 0) return static_cast<float>(quiet_nan_with_sign(negative));
    mag = std::numeric_limits<double>::infinity();
  } else if (e == 0) {
    mag = std::ldexp(static_cast<double>(m), -133);  // m * 2^-126 * 2^-7
  } else {
    mag = std::ldexp(static_cast<double>(128 + m), e - 127 - 7);  // (1 + m/128) * 2^(e-127)
  }
  return static_cast<float>(negative ? -mag : mag);  // exact: bf16 values are floats
}

std::uint16_t bf16_round(float x) {
  const std::uint16_t sign = std::signbit(x) ? 0x8000 : 0x0000;
  if (std::isnan(x)) return static_cast<std::uint16_t>(sign | 0x7FC0);
  const double a = std::fabs(static_cast<double>(x));
  if (std::isinf(a)) return static_cast<std::uint16_t>(sign | 0x7F80);
  if (a == 0.0) return sign;
  int e = 0;
  std::frexp(a, &e);  // a in [2^(e-1), 2^e)
  // bf16 keeps 8 significant bits in that binade (quantum 2^(e-8)); below 2^-126 the
  // quantum is the subnormal step 2^-133.
  const int quantum_exp = std::max(e - 8, -133);
  const double units = std::ldexp(a, -quantum_exp);  // exact (power-of-two scaling)
  const double rounded = std::ldexp(round_half_even(units), quantum_exp);
  return static_cast<std::uint16_t>(sign | bf16_magnitude_bits(rounded));
}

double e2m1_value(unsigned code) {
  const bool negative = (code & 8u) != 0;
  const unsigned e = (code >> 1) & 3u;
  const unsigned m = code & 1u;
  double mag;
  if (e == 0)
    mag = 0.5 * m;  // subnormal: 0 or 0.5
  else
    mag = std::ldexp(1.0 + 0.5 * m, static_cast<int>(e) - 1);
  return negative ? -mag : mag;
}

double ue8m0_value(std::uint8_t b) {
  if (b == 0) return 0.0;
  if (b == 255) return std::numeric_limits<double>::quiet_NaN();
  return std::ldexp(1.0, static_cast<int>(b) - 127);
}

double e4m3_value(std::uint8_t b) {
  const bool negative = (b & 0x80u) != 0;
  const int e = (b >> 3) & 0xF;
  const int m = b & 0x7;
  if (e == 0xF && m == 0x7) return quiet_nan_with_sign(negative);
  double mag;
  if (e == 0)
    mag = std::ldexp(static_cast<double>(m), -9);  // m/8 * 2^(1-7)
  else
    mag = std::ldexp(1.0 + m / 8.0, e - 7);
  return negative ? -mag : mag;
}

std::uint8_t e4m3_round(double x) {
  const std::uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  if (std::isnan(x)) return static_cast<std::uint8_t>(sign | 0x7F);
  const double a = std::fabs(x);
  const auto& values = e4m3_nonnegative_values();
  if (a >= values[126]) return static_cast<std::uint8_t>(sign | 0x7E);  // saturate (inf too)
  // Largest code c with values[c] <= a; then a lies in [values[c], values[c+1]).
  int lo = 0, hi = 126;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (values[mid] <= a)
      lo = mid;
    else
      hi = mid;
  }
  const double midpoint = 0.5 * (values[lo] + values[hi]);  // exact in double
  int code;
  if (a < midpoint)
    code = lo;
  else if (a > midpoint)
    code = hi;
  else
    code = (lo % 2 == 0) ? lo : hi;  // tie: the even code
  return static_cast<std::uint8_t>(sign | code);
}

}  // namespace uqref
