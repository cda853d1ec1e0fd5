// The FP4 code choice of both cache writers, bit-exact and branch-free, in multiply-adds.
//
// The spec defines each code by comparisons with 7 midpoints (ultraquant.md §4 step 8;
// nvfp4-index.md §3). Written as compares and selects (ultraquant::fp4_code_ties_down,
// nvfp4::e2m1_code_nearest_even) that is ~20 integer/compare instructions per element,
// and on a GPU those run on the half-rate ALU pipe: the writers' quantisation, not their
// memory traffic, would set their speed. Here each comparison "a > T" is one
// saturating multiply-add, sat(B * a - B * T) with B = 2^26: both a and T are floats
// >= 0.25 apart by at least ulp(T) >= 2^-25 when a > T, so the exact value is either
// <= 0 or >= 2, and the result is exactly 0 or 1 however the product and the sum are
// rounded (B * a is exact, the one rounding keeps the sign and the size). A binary
// search over the 7 thresholds needs 3 such steps; the next threshold is selected with
// exact multiply-adds of 0/1 values (every constant below is a small multiple of a
// power of two, so each select is exact). On a GPU the saturation is folded into the
// multiply-add (one instruction per step); on a CPU it is an integer compare (step01),
// and the loops vectorise.
//
// The results are the spec's codes for every input; tests/test_write_kv.cpp and
// tests/test_index_writer.cpp compare them with the definitional functions on every
// float within 2^15 ulps of each threshold (both signs) and on random values.
#pragma once

#include "uq/types.hpp"

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>

namespace uq {
namespace impl {
namespace codes {

// 1 if x > 0, else 0 (NaN: 0), for an x that is never in (0, 1) -- every call below
// passes a value <= 0 or >= 2. On a device it is the saturation min(max(x, 0), 1),
// which the compilers fold into the multiply-add that computes x (one instruction);
// on a host it is a compare on the bits (x - 1 as unsigned is below +inf's bits exactly
// for x in (0, +inf]), which vectorises where a float compare would stay a branch
// (GCC does not if-convert float compares under the default -ftrapping-math).
KOKKOS_INLINE_FUNCTION float step01(float x) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return fminf(fmaxf(x, 0.0f), 1.0f);
#else
  return codec::bits_float(codec::float_bits(x) - 1u < 0x7f800000u ? 0x3f800000u : 0u);
#endif
}

inline constexpr float kB = 67108864.0f;    // 2^26
inline constexpr float kMagic = 8388608.0f;  // 2^23: a small integer n added to it has bits 0x4B000000 + n

// 1 when a > T, else 0, for a >= 0 and a float threshold T >= 0.25 (see above);
// minus_bt = -B * T (exact), or a select of such values.
KOKKOS_INLINE_FUNCTION float above(float a, float minus_bt) { return step01(a * kB + minus_bt); }

// The code nibble of 4 t1 + 2 t2 + t3 + 8 sign, all 0/1: exact small-integer sums
// placed in the low mantissa bits by the 2^23 bias.
KOKKOS_INLINE_FUNCTION unsigned nibble(float t1, float t2, float t3, float sign) {
  float acc = t3 + kMagic;
  acc = t2 * 2.0f + acc;
  acc = t1 * 4.0f + acc;
  acc = sign * 8.0f + acc;
  return codec::float_bits(acc) & 15u;
}

// ---------------------------------------------------------------- UltraQuant MXFP4
// Code of y = r / 2^e given y2 = 2y = r * 2^(1-e) (exact whenever y is normal; when y2
// is subnormal every comparison below is false, as it is for y). In units of y2 the
// midpoints are T = 0.5, 1.5, 2.5, 3.5, 5, 7, 10. Ties go to the lower level: for y > 0
// the magnitude index is #{T < |y2|}; for y < 0 it is #{T <= |y2|} = #{T < next(|y2|)},
// next(|y2|) being the float one ulp above (integer + 1 on the bits). Code = magnitude
// index, with bit 3 set when y2 <= -0.5 (a negative value not rounding to zero).
// The code's four 0/1 terms: code = 8 neg + 4 t1 + 2 t2 + t3.
struct CodeTerms {
  float t1, t2, t3, neg;
};

// The terms for y2: next(|y2|) is one step of y2's own grid, and B * y2 is exact (no
// overflow: |y2| < 19 wherever a writer asks), so each comparison is an exact decision.
// Every constant is a small multiple of 2^25 (exact).
KOKKOS_INLINE_FUNCTION CodeTerms uq_code_terms(float y2) {
  const std::uint32_t bits = codec::float_bits(y2);
  const float a = codec::bits_float((bits & 0x7fffffffu) + (bits >> 31));  // next(|y2|) for y2 < 0
  CodeTerms c;
  c.t1 = step01(a * kB + (-3.5f * kB));                           // a > 3.5
  c.t2 = step01(a * kB + (c.t1 * (-5.5f * kB) + (-1.5f * kB)));   // a > 7 : a > 1.5
  const float lo = c.t2 * (-2.0f * kB) + (-0.5f * kB);            // T = 2.5 : 0.5
  const float hi = c.t2 * (-3.0f * kB) + (-4.5f * kB);            // (10 : 5) - (2.5 : 0.5)
  c.t3 = step01(a * kB + (c.t1 * hi + lo));                       // a > 10 : 5 : 2.5 : 0.5
  c.neg = step01(y2 * -kB + -33554430.0f);                        // -y2 > pred(0.5) = 0.5 - 2^-25
  return c;
}

KOKKOS_INLINE_FUNCTION unsigned uq_code_search(float y2) {
  const CodeTerms c = uq_code_terms(y2);
  return nibble(c.t1, c.t2, c.t3, c.neg);
}

// Whether scale byte b allows the GPU writer to fold a group's 2^(1-e) and p (1/16 for
// the unscaled WHT outputs, 1 for V) into one multiply, z = x * 2^(2-e) * p, before its
// code table: b >= 27, i.e. e >= -100, where that factor is a normal power of two and a
// value whose code is not 0 (|y2| >= 0.5) needs |x| >= 2^(b-129) / p, a normal float, so
// z is 2 fl(x p) 2^(1-e) exactly. Groups with smaller e (values below ~1e-30) take the
// spec's order of multiplies.
KOKKOS_INLINE_FUNCTION bool uq_fold_ok(std::uint8_t b) { return b >= 27; }

// ultraquant::scale_byte_for_absmax in integer steps (no double arithmetic: on a GPU
// the conversions to and from double are slow). s = fl32(A * 0.156f) = M * 2^E; for a
// normal s, e = E + (M >= sqrt 2), and M = 1 + m / 2^23 >= sqrt 2 exactly when
// m >= 0x3504F4 = ceil((sqrt 2 - 1) * 2^23) (sqrt 2 is irrational: no tie). A subnormal
// s = m * 2^-149 has e = -126 when s >= 2^-126.5, i.e. m >= 5931642 = ceil(2^22.5),
// else it is flushed. tests/test_writer_codes.cpp compares the two on every mantissa of
// several binades and around every boundary.
KOKKOS_INLINE_FUNCTION std::uint8_t uq_scale_byte(float A) {
  const float s = A * 0.156f;
  const std::uint32_t bits = codec::float_bits(s);
  if (!(A > 0.0f) || bits == 0) return 0;  // zero group, or s underflows to 0
  const std::uint32_t expfield = bits >> 23, m = bits & 0x7fffffu;
  if (expfield == 0) return m >= 5931642u ? 1 : 0;
  const int e = static_cast<int>(expfield) - 127 + (m >= 0x3504F4u ? 1 : 0);
  return static_cast<std::uint8_t>(e + 127);  // e >= -126; e <= 127 for bf16-derived A
}

// The same code as a count, for hosts: for floats >= 0, a > T is an integer compare of
// the bits (signed: they are below 2^31, and SSE2 has only signed compares), seven
// compare-and-adds that vectorise (SSE2 has no saturating float multiply-add). Written
// as a ternary, GCC would turn the sorted thresholds into a chain of branches. Not
// for NaN (a zero group's codes are set to 0 apart).
KOKKOS_INLINE_FUNCTION unsigned uq_code_count(float y2) {
  const std::uint32_t bits = codec::float_bits(y2);
  const std::uint32_t sign = bits >> 31;
  const std::int32_t a = static_cast<std::int32_t>((bits & 0x7fffffffu) + sign);  // next(|y2|) for y2 < 0
  constexpr std::int32_t T[7] = {0x3F000000, 0x3FC00000, 0x40200000, 0x40600000,
                                 0x40A00000, 0x40E00000, 0x41200000};  // 0.5 1.5 2.5 3.5 5 7 10
  std::int32_t m = 0;
  for (int i = 0; i < 7; ++i) m += static_cast<std::int32_t>(a > T[i]);
  return static_cast<unsigned>(m) | ((static_cast<unsigned>(m != 0) & sign) << 3);  // sign bit when m != 0
}

KOKKOS_INLINE_FUNCTION unsigned uq_code_of_twice_y(float y2) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return uq_code_search(y2);
#else
  return uq_code_count(y2);
#endif
}

// The GPU lanes' form: the code by table lookup, from c = ceil(z), z = 2 y2 (= 4 y).
// Every midpoint of §4 step 8 is a multiple of 1/2 in y2 (z = 1, 3, 5, 7, 10, 14, 20),
// and the tie rule sends every tie toward -inf (down for y > 0, the magnitude up for
// y < 0), so all y2 in ((c - 1) / 2, c / 2] share one code: the code of y2 = c / 2,
// c = ceil(2 y2) an integer. (For c >= 1, T < y2 <=> 2T < c <=> T <= (c - 1) / 2; for
// c <= 0, T <= |y2| <=> 2T <= -c; the sign bit, y2 <= -0.5, is c <= -1.) So a code is
// one multiply (z = x * S exact, S a power of two), one ceil-to-integer and one load of
// a 128-entry byte table, entry 64 + c, instead of the ~14 instructions of the search
// above (the table's offset goes into the load's address, no mask or clamp). The entry
// is in the table for |c| <= 64 and the writers' c never leaves [-37, 37]: y = x / 2^e
// with |x| <= A, the group's absmax, and 2^e >= fl(0.156 A) / sqrt 2 by the scale rule
// (also for a subnormal s; a zero or non-finite group has scale byte 0 and no codes),
// so |y| <= 9.07 and |z| = 4 |y| <= 36.3 (tests/test_writer_codes.cpp checks the bound
// on every mantissa).
inline constexpr int kCodeTable = 128;
inline constexpr int kCodeTableZero = kCodeTable / 2;  // the entry of c = 0

KOKKOS_INLINE_FUNCTION std::uint8_t uq_code_table_entry(int slot) {
  return static_cast<std::uint8_t>(uq_code_of_twice_y(0.5f * static_cast<float>(slot - kCodeTableZero)));
}

// z = 2 y2 exactly, |z| <= 64; table[s] = uq_code_table_entry(s).
KOKKOS_INLINE_FUNCTION unsigned uq_code_from_table(const std::uint8_t* table, float z) {
  return table[kCodeTableZero + static_cast<int>(ceilf(z))];
}

// ---------------------------------------------------------------- NVFP4 index keys
// Code of y = fl32(x / s): E2M1 round to nearest, ties to the even code. Midpoints
// 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5; the ties at 0.75, 1.75 and 3.5 go up (the even
// code is above), so those thresholds are the floats just below them (a >= M <=>
// a > pred(M)). Sign bit when y < -0.25 (a negative value not rounding to zero).
inline constexpr float kPred075 = 0.75f - 0x1p-24f;
inline constexpr float kPred175 = 1.75f - 0x1p-23f;
inline constexpr float kPred350 = 3.5f - 0x1p-22f;

KOKKOS_INLINE_FUNCTION CodeTerms nv_code_terms(float y) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  const float a = fabsf(y);  // an operand modifier of the multiply-adds below, not an instruction
#else
  const float a = codec::bits_float(codec::float_bits(y) & 0x7fffffffu);  // |y|
#endif
  CodeTerms c;
  c.t1 = above(a, -kPred175 * kB);  // a >= 1.75
  // a >= 3.5 : a >= 0.75. The two thresholds differ in 26 bits, so the select is two
  // exact steps (c1 - t1 c1 is c1 or 0) rather than one.
  const float c1 = -kPred075 * kB, c5 = -kPred350 * kB;
  c.t2 = above(a, c.t1 * c5 + ((-c.t1) * c1 + c1));
  const float lo = c.t2 * (-1.0f * kB) + (-0.25f * kB);   // T = 1.25 : 0.25
  const float hi = c.t2 * (-1.5f * kB) + (-2.25f * kB);   // (5 : 2.5) - (1.25 : 0.25)
  c.t3 = above(a, c.t1 * hi + lo);
  c.neg = step01(y * -kB + (-0.25f * kB));                // -y > 0.25
  return c;
}

KOKKOS_INLINE_FUNCTION unsigned nv_code_search(float y) {
  const CodeTerms c = nv_code_terms(y);
  return nibble(c.t1, c.t2, c.t3, c.neg);
}

// Host form, as uq_code_count: thresholds 0.25, pred(0.75), 1.25, pred(1.75), 2.5,
// pred(3.5), 5 on the bits of |y| (inf included; not for NaN).
KOKKOS_INLINE_FUNCTION unsigned nv_code_count(float y) {
  const std::uint32_t bits = codec::float_bits(y);
  const std::int32_t a = static_cast<std::int32_t>(bits & 0x7fffffffu);
  // 0.25, pred(0.75), 1.25, pred(1.75), 2.5, pred(3.5), 5 (tests/test_writer_codes.cpp
  // checks these against kPred*)
  constexpr std::int32_t T[7] = {0x3E800000, 0x3F3FFFFF, 0x3FA00000, 0x3FDFFFFF, 0x40200000, 0x405FFFFF, 0x40A00000};
  std::int32_t m = 0;
  for (int i = 0; i < 7; ++i) m += static_cast<std::int32_t>(a > T[i]);
  return static_cast<unsigned>(m) | ((static_cast<unsigned>(m != 0) & (bits >> 31)) << 3);
}

KOKKOS_INLINE_FUNCTION unsigned nv_code(float y) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return nv_code_search(y);
#else
  return nv_code_count(y);
#endif
}

// The codes of 16 quotients y as two words, element 2j in bits 3..0 of byte j: on a
// device the search's terms accumulated into half-words (w = 16^j puts a term in nibble
// j of a float that starts at 2^23: four nibbles, exactly, in its low mantissa bits), on
// a host the counts shifted into place (which vectorise).
KOKKOS_INLINE_FUNCTION void nv_code_words16_search(const float* y, std::uint32_t* words) {
  std::uint32_t half[4];
  for (int h = 0; h < 4; ++h) {
    float acc = kMagic;
    for (int j = 0; j < 4; ++j) {
      const CodeTerms c = nv_code_terms(y[4 * h + j]);
      const float w = static_cast<float>(1 << (4 * j));
      acc = c.t3 * w + acc;
      acc = c.t2 * (2.0f * w) + acc;
      acc = c.t1 * (4.0f * w) + acc;
      acc = c.neg * (8.0f * w) + acc;
    }
    half[h] = codec::float_bits(acc) & 0xffffu;
  }
  words[0] = half[0] | (half[1] << 16);
  words[1] = half[2] | (half[3] << 16);
}

KOKKOS_INLINE_FUNCTION void nv_code_words16(const float* y, std::uint32_t* words) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  nv_code_words16_search(y, words);
#else
  unsigned c[16];
  for (int j = 0; j < 16; ++j) c[j] = nv_code_count(y[j]);
  for (int w = 0; w < 2; ++w) {
    std::uint32_t word = 0;
    for (int j = 0; j < 8; ++j) word |= c[8 * w + j] << (4 * j);
    words[w] = word;
  }
#endif
}

// The codes of x / s without the quotient (GPU index writer). For an E4M3 scale s > 0
// and a midpoint T of nv_code_terms' search (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5), c = s T
// is exact in fp32 (at most 4 + 3 significant bits, 2^-11 <= c <= 2240), and rounding
// the quotient never moves it across T:
//  * fl32(x / s) > T  <=>  x / s > T + u/2 (u = ulp(T); a tie rounds to T, whose last
//    significand bit is 0)  <=>  x > c + d with d = s u / 2, 0 < d < ulp(c) (since
//    s 2^e(T) <= c)  <=>  x >= next(c)  <=>  x > c;
//  * fl32(x / s) >= T  <=>  x >= c - d  <=>  x >= c, because prev(c) = c - ulp(c)
//    (c = s x 0.75, 1.75 or 3.5 is 3 or 7 times an E4M3 mantissa 8..15 or 1..7 times a
//    power of two, never a power of two itself) lies below c - d.
// So the search runs on a = |x| against per-group thresholds, each comparison one
// saturating multiply-add with B = 2^36: "a > c" is sat(B a - B c), and "a >= c" is 1 -
// u with u = [a < c] = sat(B c - B a), which needs no prev(c). Both are exact: when the
// comparison holds the two floats differ by at least ulp(c) >= 2^-34 (a >= next(c) for
// the strict ones; a <= prev(c) = c - ulp(c) for the others, whose c is no power of
// two), so the exact value is >= 4 (B a may overflow to infinity, which saturates the
// right way); otherwise it is <= 0. The binary search takes u1 = [a < 1.75 s],
// u2 = [a < (u1 ? 0.75 s : 3.5 s)] and
// t3 = [a > (u1 ? (u2 ? 0.25 : 1.25) : (u2 ? 2.5 : 5)) s], every threshold an exact
// multiply-add of a 0/1 value with s times a small constant, and the code is t3 + 2 (1 -
// u2) + 4 (1 - u1) + 8 neg: the 6 goes into the accumulator's start. tests/
// test_writer_codes.cpp compares the codes with the spec's function of the rounded
// quotient for every scale byte on every float within 2^12 ulps of each threshold, both
// signs, on the host and the device.
inline constexpr float kBx = 68719476736.0f;  // 2^36
struct NvThresholds {  // all B s times a constant (exact)
  float u1;     // B 1.75 s
  float u2d;    // -B 2.75 s (0.75 s - 3.5 s)
  float u2c;    // B 3.5 s
  float t3dd;   // -B 1.5 s: -(lo - hi) = -((u2 ? 0.25 : 1.25) - (u2 ? 2.5 : 5)) s, its u2 step
  float t3dc;   // B 3.75 s
  float t3hd;   // B 2.5 s: -(u2 ? 2.5 : 5) s, its u2 step
  float t3hc;   // -B 5 s
  float q25;    // -B 0.25 s (the sign: -x > 0.25 s)
};
// s: the value of an E4M3 scale byte 1..0x7e (2^-9 <= s <= 448).
KOKKOS_INLINE_FUNCTION NvThresholds nv_thresholds(float s) {
  const float bs = s * kBx;
  NvThresholds t;
  t.u1 = bs * 1.75f;
  t.u2d = bs * -2.75f;
  t.u2c = bs * 3.5f;
  t.t3dd = bs * -1.5f;
  t.t3dc = bs * 3.75f;
  t.t3hd = bs * 2.5f;
  t.t3hc = bs * -5.0f;
  t.q25 = bs * -0.25f;
  return t;
}
// The search's 0/1 terms: u1, u2 (complements of nv_code_terms' t1, t2), t3 and the sign.
KOKKOS_INLINE_FUNCTION CodeTerms nv_code_terms_of_x(float x, const NvThresholds& th) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  const float a = fabsf(x);
#else
  const float a = codec::bits_float(codec::float_bits(x) & 0x7fffffffu);
#endif
  CodeTerms c;
  c.t1 = step01(a * -kBx + th.u1);                         // u1: a < 1.75 s
  c.t2 = step01(a * -kBx + (c.t1 * th.u2d + th.u2c));      // u2: a < (u1 ? 0.75 s : 3.5 s)
  const float d = c.t2 * th.t3dd + th.t3dc;                // -B ((u2 ? 0.25 : 1.25) - (u2 ? 2.5 : 5)) s
  const float h = c.t2 * th.t3hd + th.t3hc;                // -B (u2 ? 2.5 : 5) s
  c.t3 = step01(a * kBx + (c.t1 * d + h));                 // t3: a > threshold
  c.neg = step01(x * -kBx + th.q25);                       // -x > 0.25 s
  return c;
}
KOKKOS_INLINE_FUNCTION unsigned nv_code_of_x(float x, const NvThresholds& th) {
  const CodeTerms c = nv_code_terms_of_x(x, th);
  return static_cast<unsigned>(c.t3 + 2.0f * (1.0f - c.t2) + 4.0f * (1.0f - c.t1) + 8.0f * c.neg);
}
// The 16 codes of a group as two words (as nv_code_words16), from x and its thresholds.
KOKKOS_INLINE_FUNCTION void nv_code_words16_of_x(const float* x, const NvThresholds& th, std::uint32_t* words) {
  std::uint32_t half[4];
  for (int h = 0; h < 4; ++h) {
    float acc = kMagic + 6.0f * 0x1111;  // the 6 of every nibble's 2 (1 - u2) + 4 (1 - u1)
    for (int j = 0; j < 4; ++j) {
      const CodeTerms c = nv_code_terms_of_x(x[4 * h + j], th);
      const float w = static_cast<float>(1 << (4 * j));
      acc = c.t3 * w + acc;
      acc = c.t2 * (-2.0f * w) + acc;
      acc = c.t1 * (-4.0f * w) + acc;
      acc = c.neg * (8.0f * w) + acc;
    }
    half[h] = codec::float_bits(acc) & 0xffffu;
  }
  words[0] = half[0] | (half[1] << 16);
  words[1] = half[2] | (half[3] << 16);
}

// The 16 codes of a group with scale s > 0 (an E4M3 value): on a device from x and the
// group's thresholds (no quotient: one reciprocal and three multiply-adds an element
// fewer), on a host from the divided values (whose vectorised division is cheap).
KOKKOS_INLINE_FUNCTION void nv_group_code_words(const float* x, float s, std::uint32_t* words) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  nv_code_words16_of_x(x, nv_thresholds(s), words);
#else
  float y[16];
  for (int j = 0; j < 16; ++j) y[j] = x[j] / s;
  nv_code_words16(y, words);
#endif
}

// The group scale of the index writer without branches or conversions (the spec's
// nvfp4::scale_byte_for_absmax and codec::e4m3_to_float branch on every range and
// convert to and from integers: on a GPU a chain of ~60 instructions per group, a third
// of a lane's non-code work). For a finite f >= 0, e4m3(f) rounded to nearest even and
// saturating to 448 (0x7e): on and above 2^-6 the float's mantissa rounded to 3 bits
// on the bits (add 2^19 - 1 plus the kept lowest bit, drop 20 bits: a carry moves into
// the exponent as it should), the exponent rebased from 127 to 7 (minus 120 << 3);
// below 2^-6 the multiples of 2^-9, f * 512 (exact) rounded to an integer by the 2^23
// bias. tests/test_writer_codes.cpp compares it with the spec's on every float of the
// binades that reach each range and around every rounding boundary.
KOKKOS_INLINE_FUNCTION std::uint8_t e4m3_of_nonnegative(float f) {
  const std::uint32_t u = codec::float_bits(f);
  const std::uint32_t normal = ((u + 0x7FFFFu + ((u >> 20) & 1u)) >> 20) - (120u << 3);
  const std::uint32_t subnormal = codec::float_bits(f * 512.0f + kMagic) - 0x4B000000u;  // 0..8 (8 = 2^-6)
  const std::uint32_t code = f < 0.015625f ? subnormal : (normal < 0x7eu ? normal : 0x7eu);
  return static_cast<std::uint8_t>(code);
}

// codec::e4m3_to_float of a byte 0..0x7e (a non-negative finite E4M3): the exponent and
// mantissa fields rebased into a float's, or for the subnormals (byte < 8) byte * 2^-9.
KOKKOS_INLINE_FUNCTION float e4m3_nonnegative_to_float(std::uint8_t b) {
  const std::uint32_t x = b;
  const float normal = codec::bits_float((x + (120u << 3)) << 20);
  const float subnormal = (codec::bits_float(0x4B000000u | x) - kMagic) * 0x1p-9f;  // exact
  return x < 8u ? subnormal : normal;
}

// fl32(x / s) for a scale s > 0 and r = fl32(1 / s). With a fused multiply-add the
// quotient is q0 = x r, its exact residual x - q0 s, and one correction step, which
// gives the correctly rounded quotient (Markstein's theorem: r correctly rounded, q0
// within one ulp) wherever it decides a code: |x / s| in [2^-126, 2^127]; beyond that
// both are far from every midpoint. That replaces a division sequence per element by
// three multiply-adds. Host builds have no fused multiply-add without -mfma (std::fma
// would be a library call), and divide there.
KOKKOS_INLINE_FUNCTION float quotient_fma(float x, float s, float r) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  const float q0 = x * r;
  return fmaf(fmaf(-q0, s, x), r, q0);
#else
  const float q0 = x * r;
  return std::fma(std::fma(-q0, s, x), r, q0);
#endif
}

KOKKOS_INLINE_FUNCTION float quotient(float x, float s, float r) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return quotient_fma(x, s, r);
#else
  (void)r;
  return x / s;
#endif
}

// nvfp4::scale_byte_for_absmax(A) for a finite A >= 0: e4m3(fl32(A / 6)), the quotient
// by quotient() above (on a GPU three multiply-adds for a division sequence with a
// slow-path branch): correctly rounded wherever A / 6 >= 2^-126, and below that every
// candidate rounds to the byte 0 (E4M3's smallest step is 2^-9). Checked on every
// non-negative finite float once (docs/perf-log/2026-12-01-writers-second-pass.md) and on
// boundaries by the tests.
KOKKOS_INLINE_FUNCTION std::uint8_t nv_scale_byte(float A) {
  constexpr float kSix = 6.0f, kInvSix = 1.0f / 6.0f;  // fl32(1/6), correctly rounded
  return e4m3_of_nonnegative(quotient(A, kSix, kInvSix));
}

}  // namespace codes
}  // namespace impl
}  // namespace uq
