// The tolerance of a decode's lse output (spec ultraquant.md §5, revision 2) against the
// float64 reference: shared by the decode tests of every path and the uq program's tests.
#pragma once

#include <cmath>
#include <cstdint>

namespace uqtest {

// Tolerance of an lse against the float64 reference (derivation; u32 = 2^-24, S = score_abs,
// n = attended tokens, |s_t| <= S):
//  * fp32 scores: |delta s_t| <= 64 u32 S (decode_tolerance, decode_case.hpp); lse is 1-Lipschitz in the max-norm of
//    the scores (its gradient is the softmax), so <= 64 u32 S;
//  * l of a partition: each p = exp(fl(s - m)) carries the argument's rounding (|s - m| <= 2S:
//    <= 2S u32 relative after exp; gfx950 rounds x log2 e once more: <= 4S u32) and exp's own
//    (<= 2 u32); the alpha factors add the same per step, their arguments telescoping to
//    <= 2S in total (<= 4S u32) plus 2 u32 per tile (<= n/16 + 1 tiles); the sum of n positive
//    terms and the per-tile rescalings <= (n + n/16 + 2) u32: l is within
//    (1.2 n + 8 + 8S) u32 relative;
//  * the reducer: w_p = l_p exp(m_p - M) adds (3 + 4S) u32, the sum W of <= n non-zero
//    weights n u32; log W then moves by the relative error of W: <= (2.2 n + 11 + 12 S) u32;
//  * log itself (<= 8 u32 max(1, |log W|), arch/gfx950/decode_lse.hpp; libm's is better) with
//    |log W| <= |lse| + S, and the final M + log W: u32 |lse|.
// Sum: u32 (84 S + 2.2 n + 19 + 9 |lse|).
inline double lse_tolerance(double ref, double score_abs, std::int64_t attended) {
  const double u32 = std::ldexp(1.0, -24);
  return u32 * (84.0 * score_abs + 2.2 * static_cast<double>(attended) + 19.0 + 9.0 * std::fabs(ref));
}

}  // namespace uqtest
