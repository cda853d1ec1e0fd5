// The NVFP4 index-key format (spec nvfp4-index.md §1-§3): page layout constants, the
// e4m3(E2M1 x scale) dequantisation table and the scalar steps of the key writer,
// shared by every implementation (generic kernels, tuned kernels, tests, CLI).
#pragma once

#include "uq/core/nvfp4_format.hpp"
#include "uq/types.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace uq {
namespace nvfp4 {

// The page layout constants and sentinels: uq/core/nvfp4_format.hpp.

// ------------------------------------------------------------------ dequantisation
// The table of the format: 256 scale bytes x 8 E2M1 magnitudes, entry (s, i) the
// E4M3 byte of E2M1_MAG[i] x value(s). The product is exact in fp32 (2 x 4
// significant bits), so float_to_e4m3 applies the spec's single RNE saturating
// rounding. Out of contract (the writer never stores them): a negative scale byte
// gives the literal e4m3(magnitude x negative scale), sign bit set; a NaN scale byte
// (0x7f, 0xff) gives 0x7f for every magnitude, 0 included, as MSA's reference does.
inline constexpr int kTableEntries = 256 * 8;

KOKKOS_INLINE_FUNCTION std::uint8_t table_byte(std::uint8_t scale_byte, unsigned magnitude_index) {
  if ((scale_byte & 0x7fu) == 0x7fu) return 0x7f;
  return codec::float_to_e4m3(codec::e2m1_magnitude(magnitude_index & 7u) *
                              codec::e4m3_to_float(scale_byte));
}

// The whole entry of one scale byte, byte i (least significant first) = magnitude i:
// the packed int64 form of the original kernel's table.
KOKKOS_INLINE_FUNCTION std::uint64_t table_entry(std::uint8_t scale_byte) {
  std::uint64_t entry = 0;
  for (unsigned i = 0; i < 8; ++i)
    entry |= static_cast<std::uint64_t>(table_byte(scale_byte, i)) << (8 * i);
  return entry;
}

// E4M3 byte of k̂ = e4m3(E2M1(code) x scale) from the table byte of the code's
// magnitude. Rounding and saturation are symmetric, so the code's sign flips the
// result's sign bit; XOR (not OR) keeps this right for negative scale bytes too.
KOKKOS_INLINE_FUNCTION std::uint8_t apply_code_sign(std::uint8_t magnitude_byte, unsigned code) {
  return static_cast<std::uint8_t>(magnitude_byte ^ ((code & 8u) << 4));
}

// k̂ of one element without a table (tests, host tools).
KOKKOS_INLINE_FUNCTION float dequant(unsigned code, std::uint8_t scale_byte) {
  return codec::e4m3_to_float(apply_code_sign(table_byte(scale_byte, code & 7u), code));
}

// ------------------------------------------------------------------ k̂ in two factors
// Every E2M1 magnitude is a power of two (0.5, 1, 2, 4; and 0) or 1.5 times one (1.5, 3, 6),
// so for most scales k̂ = A * weight_a(code) + B * weight_b(code) with A = k̂(+1) = the scale's
// value and B = k̂(+1.5) = e4m3(1.5 x scale): one weight is a signed power of two, the other 0,
// so the expression is exact in fp32. It equals the table only where scaling A or B by 2, 4
// (or 0.5) neither leaves E4M3's normal range nor saturates; a scorer uses the pair only for
// scale bytes whose 16 codes it has checked against the table: all of 0x10-0x69 (2^-5 .. 72,
// the scales of group maxima 0.19 .. 432), never the odd subnormal bytes, those above 72 or NaN.
KOKKOS_INLINE_FUNCTION bool three_halves_magnitude(unsigned code) {  // 1.5, 3, 6: mantissa bit set, not subnormal
  const unsigned m = code & 7u;
  return (m & 1u) && m > 1u;
}
KOKKOS_INLINE_FUNCTION float code_weight_a(unsigned code) {  // magnitude 0, 0.5, 1, 2, 4
  const float w = three_halves_magnitude(code) ? 0.0f : codec::e2m1_magnitude(code & 7u);
  return (code & 8u) ? -w : w;
}
KOKKOS_INLINE_FUNCTION float code_weight_b(unsigned code) {  // magnitude 1.5, 3, 6 (as 1, 2, 4)
  const float w = three_halves_magnitude(code) ? codec::e2m1_magnitude(code & 7u) / 1.5f : 0.0f;
  return (code & 8u) ? -w : w;
}

// ------------------------------------------------------------------ key writer
// Scale byte of a group whose finite absmax is A: e4m3(fl32(A / 6)).
KOKKOS_INLINE_FUNCTION std::uint8_t scale_byte_for_absmax(float A) {
  return codec::float_to_e4m3(A / 6.0f);
}

// E2M1 code of y = x / s: the nearest of +-{0, 0.5, 1, 1.5, 2, 3, 4, 6}, a tie going to
// the even code (mantissa bit 0), |y| above 5 saturating to 6, and a value that
// rounds to zero giving code 0 (never the -0 code 8). The tie points are the
// midpoints 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5; the even neighbour of each is the
// code 0, 2, 2, 4, 4, 6, 6 respectively, hence the alternating < / <= tests.
KOKKOS_INLINE_FUNCTION unsigned e2m1_code_nearest_even(float y) {
  const float a = y < 0.0f ? -y : y;
  unsigned m;
  if (a <= 0.25f) m = 0;
  else if (a < 0.75f) m = 1;
  else if (a <= 1.25f) m = 2;
  else if (a < 1.75f) m = 3;
  else if (a <= 2.5f) m = 4;
  else if (a < 3.5f) m = 5;
  else if (a <= 5.0f) m = 6;
  else m = 7;
  return (y < 0.0f && m != 0) ? (m | 8u) : m;
}

}  // namespace nvfp4
}  // namespace uq
