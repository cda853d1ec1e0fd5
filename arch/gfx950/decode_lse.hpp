// The lse output of the gfx950 decode kernels (spec ultraquant.md §5, revision 2): the natural
// log of the sum of exp(s) over a sequence's tokens, m + log(l), written by the partition
// kernel when P = 1 and by the reducer otherwise. Both use log_f32 below, so a P = 1 run and
// the two-stage run of a sequence held by one partition give the same bits.
//
// log_f32 is plain fp32 arithmetic (no instruction of its own in isa.hpp: it runs once per
// query head, never in a loop), identical in the gfx950 build and the emulator:
//   x = 2^e f with f in [sqrt(1/2), sqrt(2)),  log x = e ln 2 + 2 atanh(t),  t = (f - 1) / (f + 1),
//   2 atanh(t) = 2 (t + t^3/3 + t^5/5 + t^7/7 + t^9/9) + R,  |t| <= 0.1716, |R| < 2 t^11 / 11 < 1e-9.
// f - 1 is exact (Sterbenz), f + 1 and the division round once each, the polynomial and the
// final sum a few times more: the error is below 8 u32 max(1, |log x|) (u32 = 2^-24), as the
// lse tolerance of the tests assumes. Valid for normal x > 0 (the callers' x >= 1: the
// partition holding the maximum score has l >= 1).
#pragma once

#include "gfx950/isa.hpp"

namespace uq::gfx950 {
namespace lse_detail {

constexpr float kLn2 = 0.693147180559945309f;

UQ_DEVICE inline float log_f32(float x) {
  const std::uint32_t bits = bit_cast<std::uint32_t>(x);
  std::int32_t e = static_cast<std::int32_t>((bits >> 23) & 0xFFu) - 127;
  float f = bit_cast<float>((bits & 0x007FFFFFu) | 0x3F800000u);  // [1, 2)
  if (f > 1.41421356f) {
    f *= 0.5f;  // exact
    e += 1;
  }
  const float t = (f - 1.0f) / (f + 1.0f);
  const float t2 = t * t;
  const float series = 1.0f + t2 * (1.0f / 3.0f + t2 * (1.0f / 5.0f + t2 * (1.0f / 7.0f + t2 * (1.0f / 9.0f))));
  return static_cast<float>(e) * kLn2 + 2.0f * t * series;
}

}  // namespace lse_detail

// lse of one query head from its running max m and sum l (P = 1) or from the reducer's M and
// S: m + log(l), -inf when l = 0 (no token), NaN for a non-finite query.
UQ_DEVICE inline float lse_of(float m, float l, bool nonfinite) {
  if (nonfinite) return __builtin_nanf("");
  return l > 0.0f ? m + lse_detail::log_f32(l) : -__builtin_inff();
}

}  // namespace uq::gfx950
