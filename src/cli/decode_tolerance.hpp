// How far a correct uq::decode output element may be from the float64 reference
// meaning of spec ultraquant.md §5, given facts the reference reports per row.
//
// Derivation. Let u_b = 2^-8 (unit roundoff of bf16: 8 significant bits, round to
// nearest) and u_f = 2^-24 (fp32). For one output element d of one (sequence, head),
// with vmax = max |v̂_t[d]| over the attended tokens and S = score_abs = max over t of
// scale x sum_d |q8[d] k̂_t[d]|:
//
//  1. P is rounded to bf16 for the P.V product (l uses the unrounded p): each term
//     p_t v̂_t[d] moves by at most u_b p_t |v̂_t[d]|, so acc / l moves by <= u_b vmax.
//  2. Each partition's partial output is rounded to bf16: <= u_b |partial| <= u_b vmax;
//     the reducer's weights are convex, so the combination moves by <= u_b vmax.
//  3. The final output is rounded to bf16: <= u_b |out| <= u_b vmax.
//  4. Scores: q8 (E4M3, 4 significant bits) times k̂ (E2M1 x 2^e, 2 bits) is exact in
//     fp32; the 256-term fp32 sum errs by <= 255 u_f sum|q8 k̂| and the scale multiply
//     adds u_f, so |δs_t| <= 256 u_f S. exp(s - m) in fp32: the subtraction rounds
//     (|s - m| <= 2S) and exp errs by a few ulps (<= 4 u_f relative). Every weight
//     p_t thus has relative error ε <= (258 S + 4) u_f, and a weighted mean with
//     weights perturbed by (1 + ε_t) moves by <= 2 ε vmax.
//  5. fp32 accumulation of acc and l over the n tokens of a partition (plus one
//     rescale per 16-token tile) errs by <= (2 n + n / 16) u_f vmax; the reducer's
//     fp32 sums over P partitions and its division by <= (2 P + 4) u_f vmax.
//  6. V is dequantised exactly (E2M1 x 2^e fits bf16), and q8 is the same value in
//     the reference (same fp32 WHT order, same E4M3 rounding): no error.
//
// Total: |out - ref| <= vmax (3 u_b + 2 ε + (2.0625 n + 2 P + 4) u_f). Bounds 1-3
// dominate (about 1.2% of vmax); they are worst cases, and typical errors are far
// smaller because a softmax-weighted mean is much smaller than vmax.
#pragma once

#include <cmath>

namespace uq {
namespace cli {

struct DecodeErrorModel {
  double tokens_per_partition = 256;  // n: TGPP x 256
  int partitions = 1;                 // P
};

inline double decode_error_bound(double vmax, double score_abs, const DecodeErrorModel& m) {
  const double u_b = std::ldexp(1.0, -8);
  const double u_f = std::ldexp(1.0, -24);
  const double eps = (258.0 * score_abs + 4.0) * u_f;
  const double accumulation = (2.0625 * m.tokens_per_partition + 2.0 * m.partitions + 4.0) * u_f;
  return vmax * (3.0 * u_b + 2.0 * eps + accumulation);
}

}  // namespace cli
}  // namespace uq
