// NVFP4 index keys -> the fp16 A operand of the scorer's wgmma (score_kernel.cuh), without
// conversion instructions (F2FP runs at a quarter of the integer rate on sm_90).
//
// Value. An E4M3 byte S.EEEE.MMM shifted left by 7 is the fp16 pattern 0.0EEEE.MMM0000000,
// which is exactly its value times 2^-8 (normals and subnormals alike), so k̂ x 2^-8 is
// k̂'s 7-bit magnitude at bits 7..13 of an fp16 and its sign at bit 15. The scorer multiplies
// the fp32 dots by 256 (exact) at the end.
//
// Magnitudes. The derived table row of a scale byte (make_row) holds the 7-bit magnitudes
// of k̂ = e4m3(E2M1 x scale) for the 8 code magnitudes, bytes 0..7 of (lo, hi). A byte
// permute picks 4 of those 8 bytes with 4 selector nibbles; a selector nibble 8 picks byte
// 0 in "sign replicate" mode, i.e. 0x00 (byte 0 is the magnitude of code 0, below 0x80).
// So the selector [a, 8, b, 8] gives [M(a), 0, M(b), 0], whose 32-bit shift left by 7 is
// the fp16 pair (M(a), M(b)) x 2^-8, and [8, a, 8, b] gives [0, M(a), 0, M(b)], shifted
// right by 1. Which dims share a register is free (the query operand is laid out to
// match, score_kernel.cuh), so the pairs are chosen to make the signs cheap: a code word w
// (8 nibbles n0..n7, n_i = dim d0 + i) gives the pairs (n_i, n_{i+4}), whose sign bits
// 4i + 3 and 4i + 19 are 16 apart as fp16 sign bits are: w << (12 - 4i) puts them at
// bits 15 and 31. The selectors come from w with its bytes reordered (b0, b2, b1, b3), so
// that n_i and n_{i+4} sit one byte apart, then masked.
//
// Out-of-contract scale bytes. NaN (0x7F, 0xFF): the row is all 0xFE, so every byte the
// permute returns is 0xFE or (replicated, bit 7 of 0xFE) 0xFF, and each fp16 half comes out
// with exponent 11111 and a non-zero mantissa, a NaN, whatever sign and flip are applied
// (checked on the host for every scale byte, flip add carries included); the dot is NaN as the spec says.
// Negative (sign bit set): the table's k̂ carries the scale's sign, so the row holds the
// magnitudes and the group's sign flip F = 0x80008000 is added to the shifted pair (its
// bits 15 and 31 are zero, so the add is an OR) before the code signs are XORed in.
//
// Cost per code word (8 dims, 4 fp16 pairs): 5 permutes, 6 logic ops and 4 shifts (SHF, LEA)
// on the integer ALU, 5 multiply-adds / shifts on the FMA pipe.
#pragma once

#include <cstdint>

namespace uq::sm90::scorer {

// PTX prmt, default mode: result byte n = byte (sel nibble n & 7) of {b, a}, or, when that
// nibble's bit 3 is set, that byte's bit 7 replicated; only sel's low 16 bits are read.
__device__ __forceinline__ std::uint32_t prmt(std::uint32_t a, std::uint32_t b, std::uint32_t sel) {
  std::uint32_t r;
  asm("prmt.b32 %0, %1, %2, %3;\n" : "=r"(r) : "r"(a), "r"(b), "r"(sel));
  return r;
}

// r = (a & mask) | bits, one LOP3.
__device__ __forceinline__ std::uint32_t mask_or(std::uint32_t a, std::uint32_t mask, std::uint32_t bits) {
  std::uint32_t r;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;\n" : "=r"(r) : "r"(a), "r"(mask), "r"(bits));  // (a & b) | c
  return r;
}

// r = p ^ (s & 0x80008000), one LOP3: the code signs (bits 15, 31 of s) into the pair p.
__device__ __forceinline__ std::uint32_t apply_signs(std::uint32_t p, std::uint32_t s) {
  std::uint32_t r;
  asm("lop3.b32 %0, %1, %2, %3, 0x78;\n" : "=r"(r) : "r"(p), "r"(s), "r"(0x80008000u));  // a ^ (b & c)
  return r;
}

// Derived table row of scale byte s from the format's 8 table bytes (uq::nvfp4::table_byte:
// byte i = e4m3(E2M1_MAG[i] x value(s)); 0x7F for every i when s is NaN).
struct Row {
  std::uint32_t lo, hi;  // magnitude bytes of code magnitudes 0..3, 4..7
};
__host__ __device__ inline Row make_row(std::uint8_t s, std::uint32_t table_lo, std::uint32_t table_hi) {
  if ((s & 0x7Fu) == 0x7Fu) return Row{0xFEFEFEFEu, 0xFEFEFEFEu};
  return Row{table_lo & 0x7F7F7F7Fu, table_hi & 0x7F7F7F7Fu};
}
// The group sign flip of a 16-bit pair of scale bytes (group 0 in the low byte): F for the
// low group's and the high group's pairs. NaN rows ignore it.
__device__ __forceinline__ void scale_flips(std::uint32_t scales, std::uint32_t& f0, std::uint32_t& f1) {
  f0 = (scales & 0x80u) * 0x01000100u;
  f1 = (scales & 0x8000u) * 0x00010001u;
}

// One code word w and its group's row -> four fp16 pairs (x 2^-8): p[i] = dims
// (d0 + i, d0 + i + 4), the lower dim in the low half. (Forcing the shifts and x * 128 +
// flip onto the FMA pipe as IMAD.HI / IMAD instead of ptxas's SHF / LEA eased the ALU pipe
// on the H200 but added dispatch stalls and was slower:
// docs/perf-log/2026-12-01-sm90-wgmma-scorer.md.)
__device__ __forceinline__ void convert_word(std::uint32_t w, const Row& row, std::uint32_t flip, std::uint32_t (&p)[4]) {
  const std::uint32_t r = prmt(w, w, 0x3120u);  // bytes b0, b2, b1, b3: nibbles n0 n1 n4 n5 n2 n3 n6 n7
  const std::uint32_t sel_a = mask_or(r, 0x07070707u, 0x80808080u);  // [n0, 8, n4, 8] | [n2, 8, n6, 8]
  const std::uint32_t sel_b = mask_or(r, 0x70707070u, 0x08080808u);  // [8, n1, 8, n5] | [8, n3, 8, n7]
  const std::uint32_t x0 = prmt(row.lo, row.hi, sel_a);        // [M0, 0, M4, 0]
  const std::uint32_t x2 = prmt(row.lo, row.hi, sel_a >> 16);  // [M2, 0, M6, 0]
  const std::uint32_t x1 = prmt(row.lo, row.hi, sel_b);        // [0, M1, 0, M5]
  const std::uint32_t x3 = prmt(row.lo, row.hi, sel_b >> 16);  // [0, M3, 0, M7]
  p[0] = apply_signs(x0 * 128u + flip, w << 12);
  p[1] = apply_signs(__umulhi(x1, 0x80000000u) + flip, w << 8);
  p[2] = apply_signs(x2 * 128u + flip, w << 4);
  p[3] = apply_signs(__umulhi(x3, 0x80000000u) + flip, w);
}

}  // namespace uq::sm90::scorer
