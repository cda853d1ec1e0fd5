// The UltraQuant MXFP4 slot format (spec ultraquant.md §2, §4): layout constants and
// the scalar steps of the writer's quantiser, shared by every implementation.
#pragma once

#include "uq/core/ultraquant_format.hpp"
#include "uq/types.hpp"

#include <cstdint>
#include <cstring>

namespace uq {
namespace ultraquant {

// The slot layout constants: uq/core/ultraquant_format.hpp.

// e with 2^(e - 1/2) <= s < 2^(e + 1/2), exactly, for finite s > 0 (float subnormals
// included). s = M * 2^E with M in [1, 2) in double; M has at most 24 significant
// bits, so M * M is exact in double and M >= sqrt(2) <=> M * M >= 2.
KOKKOS_INLINE_FUNCTION int nearest_pow2_exponent(float s) {
  const double d = static_cast<double>(s);
  std::uint64_t bits;
  std::memcpy(&bits, &d, sizeof bits);
  const int E = static_cast<int>((bits >> 52) & 0x7ff) - 1023;
  const std::uint64_t mant_bits = (bits & 0x000fffffffffffffull) | (1023ull << 52);
  double M;
  std::memcpy(&M, &mant_bits, sizeof M);
  return E + (M * M >= 2.0 ? 1 : 0);
}

// The UE8M0 scale byte of a group with finite absmax A (spec §4 steps 4-7):
// 0 for an all-zero group or one whose exponent falls below -126 (flushed to zero).
KOKKOS_INLINE_FUNCTION std::uint8_t scale_byte_for_absmax(float A) {
  if (!(A > 0.0f)) return 0;
  const float s = A * kScaleConstant;  // fl32(A x 0.156f)
  if (!(s > 0.0f)) return 0;           // underflow: flushed
  const int e = nearest_pow2_exponent(s);
  if (e < -126) return 0;
  return static_cast<std::uint8_t>(e + 127);  // e <= 127 for bf16-derived input
}

// FP4 code of y = r / 2^e (spec §4 step 8): the number n of midpoints below y
// (strictly) indexes the sorted levels -6..6, so ties go to the lower level and
// |y| > 5 saturates; zero is code 0, never 8.
KOKKOS_INLINE_FUNCTION unsigned fp4_code_ties_down(float y) {
  constexpr float mid[14] = {-5.0f, -3.5f, -2.5f, -1.75f, -1.25f, -0.75f, -0.25f,
                             0.25f,  0.75f, 1.25f, 1.75f,  2.5f,   3.5f,   5.0f};
  unsigned n = 0;
  for (int i = 0; i < 14; ++i) n += (y > mid[i]) ? 1u : 0u;
  return n < 7 ? 15u - n : n - 7u;
}

// FP4(code) x 2 x half_scale, exactly, in a few integer operations: the eight doubled
// magnitudes 0, 1, 2, 3, 4, 6, 8, 12 are nibbles of one constant. With half_scale =
// 2^(b - 128) (0 for a zero group) this is the dequantised element; kernels compute
// half_scale once per group and call this per element.
KOKKOS_INLINE_FUNCTION float fp4_times(unsigned code, float half_scale) {
  const unsigned twice = (0xC8643210u >> ((code & 7u) << 2)) & 15u;
  const float v = static_cast<float>(twice) * half_scale;
  return (code & 8u) ? -v : v;
}

// half_scale of fp4_times for a scale byte: 2^(b - 128), 0 for the zero group b = 0.
KOKKOS_INLINE_FUNCTION float half_scale(std::uint8_t scale_byte) {
  return 0.5f * codec::ue8m0_to_float(scale_byte);
}

// Dequantised element: FP4(code) x 2^(b - 127), exactly 0 for scale byte 0.
KOKKOS_INLINE_FUNCTION float dequant(unsigned code, std::uint8_t scale_byte) {
  return scale_byte == 0 ? 0.0f : codec::e2m1_to_float(code) * codec::ue8m0_to_float(scale_byte);
}

}  // namespace ultraquant
}  // namespace uq
