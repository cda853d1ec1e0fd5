// The tolerance of a decode output element against the float64 reference: shared by the decode
// tests of every path (support/decode_case.hpp) and the Python binding's tests (python/tests).
#pragma once

#include <cmath>
#include <cstdint>

namespace uqtest {

// Tolerance of a decode result against the float64 reference, per element d of a row
// (derivation; u = 2^-8 is the unit roundoff of bf16, u32 = 2^-24 of fp32):
//  * P rounded to bf16 for P.V: |sum_t p_t e_t v_t| / l <= u * vmax_d
//  * the partial output rounded to bf16: <= u * (1 + u) * vmax_d
//    (the reducer's weighted mean of partials keeps the larger of these bounds)
//  * the final bf16 rounding: <= u * (|ref| + 2u vmax_d)
//  * fp32 scores: each s_t carries |delta| <= 64 u32 * score_abs (40 roundings in the
//    group-structured dot, one for the scale, generously); softmax weights then move by
//    at most a factor e^(2 delta), i.e. <= 2.01 delta of the output scale vmax_d
//  * fp32 accumulation of acc, l over n attended tokens and exp: <= (n + 16) u32 * 4 vmax_d
inline double decode_tolerance(double ref, double vmax, double score_abs, std::int64_t attended) {
  const double u = std::ldexp(1.0, -8), u32 = std::ldexp(1.0, -24);
  const double delta = 64.0 * u32 * score_abs;
  return u * (2.0 + 3.0 * u) * vmax + u * std::fabs(ref) + 2.01 * delta * vmax +
         4.0 * static_cast<double>(attended + 16) * u32 * vmax + 1e-30;
}

}  // namespace uqtest
