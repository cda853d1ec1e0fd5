// fp32 -> the nearest E4M3 value (as fp32), the spec's rounding (ultraquant.md §1: round to
// nearest even, saturating at +-448, NaN stays NaN) without branches, for the query staging
// of the generic decode, where codec::round_e4m3 (the definitional form in uq/types.hpp:
// branches per range, a float -> int -> float round trip) took ~5 % of a profile of the host
// decode at QG 16. Here both ranges are computed and one is selected, in integer and float
// operations a CPU compiler vectorises. (Measured: no gain beyond the run-to-run noise,
// docs/perf-log/2026-12-01-cpu-decode-simd.md, so this second form of the rule earns its
// place only if a later measurement shows one.)
//
// Normal E4M3 range (|x| >= 2^-6): keep 3 fraction bits of the fp32, round to nearest even on
// the bits (add 0x7FFFF plus the lowest kept bit, clear the 20 dropped bits; a carry moves
// into the exponent as rounding up should). Above 448 (0x43E00000), infinities included:
// 448. Subnormal range (|x| < 2^-6): multiples of 2^-9, i.e. |x| * 512 rounded to an integer,
// by the 2^23 magic number (|x| * 512 < 8 is exact, the add rounds to nearest even, also
// when contracted into a multiply-add). The sign is put back on the result (-0 for small
// negatives, as the definitional form gives). tests/test_codecs.cpp compares it with the
// reference on every one of the 2^32 floats.
#pragma once

#include "uq/types.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace uq {
namespace impl {

KOKKOS_INLINE_FUNCTION float round_e4m3_select(float x) {
  const std::uint32_t u = codec::float_bits(x);
  const std::uint32_t sign = u & 0x80000000u, a = u & 0x7fffffffu;
  std::uint32_t normal = (a + 0x7ffffu + ((a >> 20) & 1u)) & 0xfff00000u;
  normal = normal > 0x43e00000u ? 0x43e00000u : normal;
  const float tiny = ((codec::bits_float(a) * 512.0f + 8388608.0f) - 8388608.0f) * (1.0f / 512.0f);
  std::uint32_t r = a < 0x3c800000u ? codec::float_bits(tiny) : normal;
  r = a > 0x7f800000u ? 0x7fc00000u : r;  // NaN: quiet, sign kept
  return codec::bits_float(r | sign);
}

}  // namespace impl
}  // namespace uq
