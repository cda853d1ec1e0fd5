// FP4 (E2M1) codes -> 16-bit MMA operands, exactly, with a few integer operations and no
// table. Both rest on one fact: placing the 3 magnitude bits of an E2M1 code at the bottom of
// a wider format's exponent field (mantissa msb = the code's mantissa bit) gives the same
// value times 2^(1 - bias) for EVERY code, the 0.5 code landing on the wider format's
// subnormal 2^(1-bias) * 0.5. So:
//   fp16 bits (c & 8) << 12 | (c & 7) << 9  ==  FP4(c) * 2^-14    (K, for the QK MMA)
//   bf16 bits (c & 8) << 12 | (c & 7) << 6  ==  FP4(c) * 2^-126   (V, times 2^126 -> FP4(c))
// The K factor 2^-14 is folded into the softmax scale (exact: a power of two); the V
// factor is undone by one exact bf16x2 multiply.
#pragma once

#include "sm90/ptx.cuh"

#include <cstdint>

namespace uq::sm90 {

// One 32-bit K code word (8 codes: dims d0 + 0..7 in nibbles 0..7) -> 4 fp16x2 registers
// {n0, n2}, {n4, n6}, {n1, n3}, {n5, n7} (low half first), each value FP4 * 2^-14.
// First the fp16 high bytes of all 8 codes (the low byte of each value is 0): the low
// nibbles of the 4 bytes in `lo`, the high nibbles in `hi`; then byte permutes spread
// them into the high bytes of 16-bit lanes.
__device__ __forceinline__ void k_word_to_f16(std::uint32_t w, std::uint32_t (&r)[4]) {
  const std::uint32_t lo = ((w << 1) & 0x0E0E0E0Eu) | ((w << 4) & 0x80808080u);
  const std::uint32_t hi = ((w >> 3) & 0x0E0E0E0Eu) | (w & 0x80808080u);
  r[0] = ptx::byte_perm(lo, 0u, 0x1404u);  // bytes {0, lo.0, 0, lo.1}: nibbles 0, 2
  r[1] = ptx::byte_perm(lo, 0u, 0x3424u);  // nibbles 4, 6
  r[2] = ptx::byte_perm(hi, 0u, 0x1404u);  // nibbles 1, 3
  r[3] = ptx::byte_perm(hi, 0u, 0x3424u);  // nibbles 5, 7
}

// bf16x2 2^126 (exponent field 253): FP4 * 2^-126 * 2^126 = FP4, exactly.
constexpr std::uint32_t kBf16x2TwoPow126 = 0x7E807E80u;

// x: two 16-bit code units (4 nibbles each; low half one token, high half another, same
// dims). Nibble K of both halves -> bf16x2 {FP4(lo token), FP4(hi token)} x 2^-126 (raw bits),
// or, kExact, x 2^126 again: {FP4(lo), FP4(hi)}.
template <int K, bool kExact>
__device__ __forceinline__ std::uint32_t v_nibble_bf16(std::uint32_t x) {
  std::uint32_t raw;  // sign bit to 15 (31), magnitude bits to 6..8 (22..24)
  if constexpr (K == 0) {
    raw = ((x << 12) & 0x80008000u) | ((x << 6) & 0x01C001C0u);
  } else if constexpr (K == 1) {
    raw = ((x << 8) & 0x80008000u) | ((x << 2) & 0x01C001C0u);
  } else if constexpr (K == 2) {
    raw = ((x << 4) & 0x80008000u) | ((x >> 2) & 0x01C001C0u);
  } else {
    raw = (x & 0x80008000u) | ((x >> 6) & 0x01C001C0u);
  }
  if constexpr (kExact) return ptx::bf16x2_mul(raw, kBf16x2TwoPow126);
  else return raw;
}

// UE8M0 byte b -> 2^(b - 127) as fp32 bits b << 23 (b = 0 gives +0: a zero group; b = 255
// gives +inf, which the spec allows for a byte it never writes). Byte K of word w.
template <int K>
__device__ __forceinline__ float ue8m0_f32(std::uint32_t w) {
  if constexpr (K < 3) return __uint_as_float((w << (23 - 8 * K)) & 0x7F800000u);
  else return __uint_as_float((w >> 1) & 0x7F800000u);
}

// Two UE8M0 bytes (byte K of words w0 and w1) -> bf16x2 {2^(b0-127), 2^(b1-127)}: bf16 bits
// b << 7 (b = 0 gives +0).
template <int K>
__device__ __forceinline__ std::uint32_t ue8m0_pair_bf16(std::uint32_t w0, std::uint32_t w1) {
  // bytes {w0.K, w0.K, w1.K, w1.K}; << 7 puts one copy of each at bits 7..14 (23..30) of its
  // 16-bit lane and the mask drops the other copy.
  constexpr std::uint32_t sel = K | (K << 4) | ((4 + K) << 8) | ((4 + K) << 12);
  return (ptx::byte_perm(w0, w1, sel) << 7) & 0x7F807F80u;
}

}  // namespace uq::sm90
