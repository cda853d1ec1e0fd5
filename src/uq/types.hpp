// Scalar formats of the two caches (spec ultraquant.md §1, nvfp4-index.md §1).
//
// Every codec is a KOKKOS_INLINE_FUNCTION so the generic kernels, the host code and
// the tests use one definition. They are written with integer and exact float
// arithmetic only (no libm rounding modes, no tables in device memory), so they give
// the same bits on every backend.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>

namespace uq {

// bf16 stored as its raw 16 bits. A struct (not a typedef of uint16_t) so that a
// bf16 view cannot be confused with an integer view; Kokkos' own bhalf_t is not used
// because it is 4 bytes on HIP before Kokkos 5.1.
struct bf16 {
  std::uint16_t bits;
};

namespace codec {

KOKKOS_INLINE_FUNCTION std::uint32_t float_bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

KOKKOS_INLINE_FUNCTION float bits_float(std::uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

KOKKOS_INLINE_FUNCTION bool is_nan(float x) {
  return (float_bits(x) & 0x7fffffffu) > 0x7f800000u;
}

KOKKOS_INLINE_FUNCTION bool is_finite(float x) {
  return (float_bits(x) & 0x7f800000u) != 0x7f800000u;
}

KOKKOS_INLINE_FUNCTION float infinity() { return bits_float(0x7f800000u); }
KOKKOS_INLINE_FUNCTION float quiet_nan() { return bits_float(0x7fc00000u); }

// 2^e as a float for e in [-126, 127] (a normal number, built from its bits).
KOKKOS_INLINE_FUNCTION float pow2(int e) {
  return bits_float(static_cast<std::uint32_t>(e + 127) << 23);
}

// ---------------------------------------------------------------- bf16
KOKKOS_INLINE_FUNCTION float bf16_to_float(bf16 h) {
  return bits_float(static_cast<std::uint32_t>(h.bits) << 16);
}

// fp32 -> bf16, round to nearest even; NaN stays NaN (made quiet, sign kept).
KOKKOS_INLINE_FUNCTION bf16 float_to_bf16(float x) {
  const std::uint32_t u = float_bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    return bf16{static_cast<std::uint16_t>((u >> 16) | 0x0040u)};
  }
  const std::uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return bf16{static_cast<std::uint16_t>((u + rounding) >> 16)};
}

KOKKOS_INLINE_FUNCTION float round_bf16(float x) {
  return bf16_to_float(float_to_bf16(x));
}

// ---------------------------------------------------------------- E2M1 (FP4)
// Code bits: 3 = sign, 2..1 = exponent, 0 = mantissa. Magnitudes of 0..7:
// 0, 0.5, 1, 1.5, 2, 3, 4, 6.
KOKKOS_INLINE_FUNCTION float e2m1_magnitude(unsigned code) {
  const unsigned e = (code >> 1) & 3u;
  const unsigned m = code & 1u;
  if (e == 0) return 0.5f * static_cast<float>(m);
  // (1 + m/2) * 2^(e-1), exact.
  return (1.0f + 0.5f * static_cast<float>(m)) * static_cast<float>(1u << (e - 1));
}

KOKKOS_INLINE_FUNCTION float e2m1_to_float(unsigned code) {
  const float mag = e2m1_magnitude(code & 7u);
  return (code & 8u) ? -mag : mag;
}

// ---------------------------------------------------------------- UE8M0
// Byte b in 1..254 is 2^(b-127). 0 marks an all-zero group (the caller treats the
// whole group as 0); this function maps it to 0.0f, which is what placing the byte
// in the fp32 exponent field gives. 255 is never written; it decodes to +inf.
KOKKOS_INLINE_FUNCTION float ue8m0_to_float(std::uint8_t b) {
  return bits_float(static_cast<std::uint32_t>(b) << 23);
}

// ---------------------------------------------------------------- E4M3 (OCP e4m3fn)
// Bias 7, no infinities, max finite 448 (0x7e), NaN = S.1111.111.
KOKKOS_INLINE_FUNCTION float e4m3_to_float(std::uint8_t b) {
  const std::uint32_t sign = static_cast<std::uint32_t>(b & 0x80u) << 24;
  const unsigned e = (b >> 3) & 15u;
  const unsigned m = b & 7u;
  if (e == 15 && m == 7) return bits_float(sign | 0x7fc00000u);
  if (e == 0) {
    // subnormal: m * 2^-9, exact.
    const float mag = static_cast<float>(m) * (1.0f / 512.0f);
    return (b & 0x80u) ? -mag : mag;
  }
  return bits_float(sign | ((e - 7u + 127u) << 23) | (m << 20));
}

// Round a non-negative float y (y < 2^23) to the nearest integer, ties to even.
// Exact: floor of a float below 2^23 and the difference are representable.
KOKKOS_INLINE_FUNCTION unsigned round_half_even(float y) {
  const unsigned r = static_cast<unsigned>(y);  // truncation == floor for y >= 0
  const float frac = y - static_cast<float>(r);
  if (frac > 0.5f) return r + 1;
  if (frac < 0.5f) return r;
  return r + (r & 1u);
}

// fp32 -> E4M3, round to nearest even, saturating to +-448 (infinities too); NaN -> NaN.
KOKKOS_INLINE_FUNCTION std::uint8_t float_to_e4m3(float x) {
  const std::uint32_t u = float_bits(x);
  const std::uint8_t sign = static_cast<std::uint8_t>((u >> 24) & 0x80u);
  const std::uint32_t abs_bits = u & 0x7fffffffu;
  if (abs_bits > 0x7f800000u) return static_cast<std::uint8_t>(sign | 0x7fu);
  const float a = bits_float(abs_bits);
  if (a >= 448.0f) return static_cast<std::uint8_t>(sign | 0x7eu);
  if (a < 0.015625f) {
    // Subnormal range (below 2^-6): multiples of 2^-9. a * 512 is exact.
    const unsigned q = round_half_even(a * 512.0f);  // 0..8; 8 is 2^-6 = 0x08
    return static_cast<std::uint8_t>(sign | q);
  }
  // Normal: a = 1.f * 2^E with E in [-6, 8]; keep 3 mantissa bits.
  int E = static_cast<int>((abs_bits >> 23) & 0xffu) - 127;
  const float scaled = a * pow2(3 - E);  // in [8, 16), exact
  unsigned q = round_half_even(scaled);   // in [8, 16]
  if (q == 16) {
    q = 8;
    ++E;
  }
  const unsigned code = (static_cast<unsigned>(E + 7) << 3) | (q - 8);
  // a < 448 so rounding can reach at most 448 = 0x7e.
  return static_cast<std::uint8_t>(sign | (code > 0x7eu ? 0x7eu : code));
}

KOKKOS_INLINE_FUNCTION float round_e4m3(float x) { return e4m3_to_float(float_to_e4m3(x)); }

}  // namespace codec
}  // namespace uq
