// The tolerance of a finite index score against the float64 reference: shared by the scorer
// tests of every path (test_index_common.hpp) and the Python binding's tests (python/tests).
#pragma once

#include <algorithm>
#include <cmath>

namespace uqtest {

// The spec's tolerance of a score: 1e-4 + 1e-4 |ref|.
inline double score_spec_tolerance(double ref) { return 1e-4 + 1e-4 * std::fabs(ref); }

// max(spec, gamma_128 * A + 2^-23 |ref|), A = max over the block's tokens of sum_d |q[d] k̂[t][d]|
// (a caller may bound it by sum_d |q[d]| max_t |k̂[t][d]|).
// Derivation of the second term: each product q[d] * k̂[t][d] of two E4M3 values has at
// most 4 + 4 significant bits and is exact in fp32 (and in double). The implementation
// sums the 128 products in fp32 in some order: |fl32 sum - exact| <= gamma_127 * sum_d
// |q[d] k̂[t][d]| (Higham, Th. 4.4; any summation order), gamma_n = n u / (1 - n u),
// u = 2^-24. The reference rounds the exact double sum once to float: error <= u |ref|.
// A max over tokens moves by at most the largest per-token error, so |got - ref| <=
// gamma_127 * A + 2u |ref|. The spec's 1e-4 + 1e-4 |ref| is the binding term for
// well-conditioned dots; the derived bound only exceeds it for strongly cancelling dots
// (|ref| << A), which fp32 accumulation cannot resolve better.
inline double score_tolerance(double ref, double A) {
  const double gamma = 128.0 * std::ldexp(1.0, -24) / (1.0 - 128.0 * std::ldexp(1.0, -24));
  return std::max(score_spec_tolerance(ref), gamma * A + std::ldexp(1.0, -23) * std::fabs(ref));
}

}  // namespace uqtest
