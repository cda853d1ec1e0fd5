// FP4 (E2M1) codes and UE8M0 scales -> MMA operands, exactly, by bit placement (no table).
// Both conversions rest on one fact: putting the 3 magnitude bits of an E2M1 code at the
// bottom of a wider format's exponent field (the code's mantissa bit becoming the wider
// mantissa's top bit) gives the code's value times 2^(1 - bias) for EVERY code, the 0.5 code
// landing on the wider format's subnormal 2^(1 - bias) / 2. So:
//   E4M3 bits (c & 8) << 4 | (c & 7) << 2   ==  FP4(c) * 2^-6     (K, for the FP8 QK wgmma)
//   bf16 bits (c & 8) << 12 | (c & 7) << 6  ==  FP4(c) * 2^-126   (V; * 2^126 gives FP4(c))
// The K factor 2^-6 is folded into the softmax scale (exact: a power of two); the V factor is
// undone by one exact bf16x2 multiply.
#pragma once

#include "sm90/ptx.cuh"

#include <cstdint>

namespace uq::sm90 {

// One 32-bit K code word (8 codes: byte j holds dims 2j (low nibble) and 2j + 1 (high
// nibble)) -> two E4M3 words: `even` byte j = dim 2j, `odd` byte j = dim 2j + 1, each value
// FP4 * 2^-6 (the sign bit moves to bit 7, the magnitude bits to bits 2..4).
__device__ __forceinline__ std::uint32_t k_even_e4m3(std::uint32_t w) {
  return ((w << 4) & 0x80808080u) | ((w << 2) & 0x1C1C1C1Cu);
}
__device__ __forceinline__ std::uint32_t k_odd_e4m3(std::uint32_t w) {
  return (w & 0x80808080u) | ((w >> 2) & 0x1C1C1C1Cu);
}

// P.V's P^T operand carries 2^kPvShift of every V scale (P' = bf16(16 p) = 16 bf16(p) but for
// p < 2^-122; V' = V x 2^-4: the products, and so the fp32 sums, are the same numbers), so that
// one bf16 multiply by 2^(b - 1 - kPvShift) builds V' exactly from the raw FP4 x 2^-126 bits for
// every scale byte b <= 128 + kPvShift (group scale <= 2^5) instead of b <= 128; only tiles with
// a larger byte take two multiplies.
constexpr int kPvShift = 4;
constexpr float kPvShiftFactor = static_cast<float>(1 << kPvShift);
// bf16x2 2^(126 - kPvShift) (exponent field 253 - kPvShift): times the table's 2^(b - 127) it is
// the single multiplier 2^(b - 1 - kPvShift); times the raw FP4 x 2^-126 bits it is FP4 x
// 2^-kPvShift exactly (the two-multiply path).
constexpr std::uint32_t kBf16x2VMultiplier = (static_cast<std::uint32_t>(253 - kPvShift) << 7) * 0x10001u;
// Tiles with a scale byte >= 129 + kPvShift (the bf16 2^(b - 127), bits b << 7, at least
// (129 + kPvShift) << 7): adding 0x8000 minus that sets bit 15 of a 16-bit lane exactly then
// (lanes hold non-negative values <= 0x7F80, so no carry leaves a lane).
constexpr std::uint32_t kBigScaleAddend = (0x8000u - (static_cast<std::uint32_t>(129 + kPvShift) << 7)) * 0x10001u;
static_assert(kBf16x2VMultiplier == 0x7C807C80u && kBigScaleAddend == 0x3D803D80u, "bf16x2 2^122 and 0x8000 - (133 << 7)");

// x: two 16-bit code units (4 nibbles each: dims 4u..4u+3 of one token in the low half, of
// another token in the high half). Nibble K of both halves -> bf16x2 {FP4(low), FP4(high)} x
// 2^-126 (raw bits). One mask, one integer multiply by 2^a + 2^b (two shifted copies of the
// nibble that do not overlap, so the sum is their OR: the sign lands on bit 15, the magnitude
// on bits 6..8) and one mask; nibbles 2 and 3 first move down a byte.
template <int K>
__device__ __forceinline__ std::uint32_t v_nibble_raw_bf16(std::uint32_t x) {
  const std::uint32_t y = K >= 2 ? (x >> 8) : x;
  std::uint32_t t;
  if constexpr ((K & 1) == 0) {
    t = (y & 0x000F000Fu) * 0x1040u;  // << 12 (sign to bit 15) + << 6 (magnitude to 6..8)
  } else {
    t = (y & 0x00F000F0u) * 0x0104u;  // << 8 + << 2
  }
  return t & 0x81C081C0u;
}

// UE8M0 byte b -> 2^(b - 127) as fp32 bits b << 23 (b = 0 gives +0: a zero group; b = 255
// gives +inf, which the spec allows for a byte it never writes). Byte K of word w.
template <int K>
__device__ __forceinline__ float ue8m0_f32(std::uint32_t w) {
  if constexpr (K < 3) return __uint_as_float((w << (23 - 8 * K)) & 0x7F800000u);
  else return __uint_as_float((w >> 1) & 0x7F800000u);
}

// Byte `k` (0..3, a run-time value) of words w0 and w1 -> bf16x2 {2^(b0-127), 2^(b1-127)}:
// bf16 bits b << 7 (b = 0 gives +0: a zero group). `sel` = ue8m0_pair_selector(k).
__host__ __device__ constexpr std::uint32_t ue8m0_pair_selector(int k) {
  // bytes {w0.k, w0.k, w1.k, w1.k}; << 7 then puts one copy of each at bits 7..14 (23..30) of
  // its 16-bit lane and the mask drops the other copy.
  return static_cast<std::uint32_t>(k | (k << 4) | ((4 + k) << 8) | ((4 + k) << 12));
}
__device__ __forceinline__ std::uint32_t ue8m0_pair_bf16(std::uint32_t w0, std::uint32_t w1, std::uint32_t sel) {
  return (__byte_perm(w0, w1, sel) << 7) & 0x7F807F80u;
}

}  // namespace uq::sm90
