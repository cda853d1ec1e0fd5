#include "formats.hpp"

#include <cmath>
#include <cstring>
#include <limits>

namespace uq::emu::formats {
namespace {

// Value of a finite sign/exponent/mantissa code with the IEEE-style layout (exponent 0 =
// subnormal), computed exactly in double.
double minifloat(unsigned code, int exp_bits, int man_bits, int bias) {
  const unsigned man = code & ((1u << man_bits) - 1u);
  const unsigned exp = (code >> man_bits) & ((1u << exp_bits) - 1u);
  const bool negative = ((code >> (exp_bits + man_bits)) & 1u) != 0;
  const double magnitude =
      exp == 0 ? std::ldexp(static_cast<double>(man), 1 - bias - man_bits)
               : std::ldexp(static_cast<double>(man + (1u << man_bits)), static_cast<int>(exp) - bias - man_bits);
  return negative ? -magnitude : magnitude;
}

double signed_nan(bool negative) {
  const double n = std::numeric_limits<double>::quiet_NaN();
  return negative ? -n : n;
}

// Round to nearest, ties to even, for 0 <= q < 2^52 (exact in double).
double round_half_even(double q) {
  const double floor_q = std::floor(q);
  const double frac = q - floor_q;
  if (frac > 0.5) return floor_q + 1.0;
  if (frac < 0.5) return floor_q;
  return std::fmod(floor_q, 2.0) == 0.0 ? floor_q : floor_q + 1.0;
}

// Rounds magnitude a >= 0 to the grid of a format with `man_bits` mantissa bits and minimum
// normal exponent `emin` (unbounded above); returns the rounded value.
double round_to_grid(double a, int man_bits, int emin) {
  if (a == 0.0) return 0.0;
  int e2 = 0;
  std::frexp(a, &e2);  // a = f * 2^e2, f in [0.5, 1)
  const int exponent = e2 - 1 < emin ? emin : e2 - 1;
  const double quantum = std::ldexp(1.0, exponent - man_bits);
  return round_half_even(a / quantum) * quantum;
}

// Encodes a value that is on the grid and within range.
unsigned encode_on_grid(double v, int man_bits, int bias) {
  if (v == 0.0) return 0;
  int e2 = 0;
  std::frexp(v, &e2);
  int exponent = e2 - 1;
  if (exponent < 1 - bias) {  // subnormal: multiple of 2^(1 - bias - man_bits)
    return static_cast<unsigned>(std::ldexp(v, bias - 1 + man_bits));
  }
  const unsigned man = static_cast<unsigned>(std::ldexp(v, man_bits - exponent)) - (1u << man_bits);
  return (static_cast<unsigned>(exponent + bias) << man_bits) | man;
}

}  // namespace

double fp8_e4m3(std::uint8_t code) {
  if ((code & 0x7F) == 0x7F) return signed_nan(code & 0x80);
  return minifloat(code, 4, 3, 7);
}

double bf8_e5m2(std::uint8_t code) {
  if ((code & 0x7C) == 0x7C) {
    if ((code & 0x03) == 0) {
      return (code & 0x80) ? -std::numeric_limits<double>::infinity()
                           : std::numeric_limits<double>::infinity();
    }
    return signed_nan(code & 0x80);
  }
  return minifloat(code, 5, 2, 15);
}

double fp6_e2m3(std::uint8_t code) { return minifloat(code & 0x3F, 2, 3, 1); }
double bf6_e3m2(std::uint8_t code) { return minifloat(code & 0x3F, 3, 2, 3); }
double fp4_e2m1(std::uint8_t code) { return minifloat(code & 0x0F, 2, 1, 1); }

double e8m0(std::uint8_t code) {
  if (code == 0xFF) return std::numeric_limits<double>::quiet_NaN();
  return std::ldexp(1.0, static_cast<int>(code) - 127);
}

float bf16(std::uint16_t bits) {
  const std::uint32_t u = static_cast<std::uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

std::uint8_t e4m3_from_float(float x) {
  const std::uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  if (!std::isfinite(x)) return sign | 0x7F;
  const double rounded = round_to_grid(std::fabs(static_cast<double>(x)), 3, -6);
  if (rounded > 448.0) return sign | 0x7F;
  return static_cast<std::uint8_t>(sign | encode_on_grid(rounded, 3, 7));
}

std::uint8_t e2m1_from_double(double y) {
  const std::uint8_t sign = std::signbit(y) ? 0x08 : 0x00;
  if (!std::isfinite(y)) return sign | 0x07;
  double rounded = round_to_grid(std::fabs(y), 1, 0);
  if (rounded > 6.0) rounded = 6.0;
  return static_cast<std::uint8_t>(sign | encode_on_grid(rounded, 1, 1));
}

std::uint16_t bf16_from_float(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
  const std::uint32_t rounding = 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>((u + rounding) >> 16);
}

}  // namespace uq::emu::formats
