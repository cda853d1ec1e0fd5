// NVFP4 index keys -> E4M3 MMA operands: k̂ = e4m3(E2M1 x scale) for 8 codes at a time,
// through the format's table (uq::nvfp4::table_byte) and two byte permutes.
//
// The table row of a scale byte is 8 bytes, byte i = the E4M3 magnitude byte of E2M1
// magnitude i times the scale (already rounded once, RNE, saturating). A byte permute picks
// 4 of those 8 bytes with 4 three-bit selectors, so the 4 code magnitudes of 16 code bits,
// used as the selector, give 4 dequantised magnitudes in one instruction. The code's sign
// then flips the byte's sign bit (XOR, as uq::nvfp4::apply_code_sign).
#pragma once

#include "sm90/ptx.cuh"

#include <cstdint>

namespace uq::sm90::scorer {

// w: one 32-bit code word, nibble i = dim d0 + i (low nibble = even dim, spec §2); entry: the
// table row of the word's scale byte (lo = magnitudes 0..3, hi = 4..7). Returns E4M3 bytes
// of dims d0 + 0..3 in lo4 and d0 + 4..7 in hi4 (lowest dim in the low byte).
__device__ __forceinline__ void dequant_word(std::uint32_t w, uint2 entry, std::uint32_t& lo4, std::uint32_t& hi4) {
  const std::uint32_t sel = w & 0x77777777u;
  const std::uint32_t mag_lo = ptx::byte_perm(entry.x, entry.y, sel);
  const std::uint32_t mag_hi = ptx::byte_perm(entry.x, entry.y, sel >> 16);
  // Sign bits (bit 3 of each nibble) to bit 7 of each result byte: the even nibbles' signs
  // shifted up into bytes 0..3 of `even`, the odd nibbles' already at bit 7 in `odd`; then
  // interleave the bytes (nibble order 0, 1, 2, 3 = even.0, odd.0, even.1, odd.1).
  const std::uint32_t even = (w << 4) & 0x80808080u;
  const std::uint32_t odd = w & 0x80808080u;
  lo4 = mag_lo ^ ptx::byte_perm(even, odd, 0x5140u);
  hi4 = mag_hi ^ ptx::byte_perm(even, odd, 0x7362u);
}

}  // namespace uq::sm90::scorer
