// The sm90 (Hopper) decode path as the shared decode cases (tests/decode_cases.hpp) run it, and
// its tolerance against the float64 reference: the QK on FP8 wgmmas changes the scores' error
// bound of support/decode_case.hpp (derivation below). Used by test_sm90_decode.cpp (the stamp)
// and sm90_decode_extras.cpp (the path's own tests); only CUDA builds with arch/sm90 include it.
#pragma once

#include "support/decode_path.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

namespace uqtest {

// Of one query row q (256 bf16) of query head hq against the first L tokens of sequence b: max
// over those tokens of |scale| sum_g max_{d in g} |q8_d k_d| (g: the 8 scale groups of 32
// dims), the quantity the FP8 QK's error bound needs.
inline double group_max_abs_row(const DecodeCase& c, const DecodeData& d, const std::uint16_t* q, int b, int hq,
                                std::int64_t L) {
  double q8[256], k[256];
  const int h = hq / c.qg;
  uqref::uq_query_q8(q, c.q_rotated, q8);
  double out = 0.0;
  for (std::int64_t t = 0; t < L; ++t) {
    const std::int32_t id = d.tables[static_cast<std::size_t>(b) * d.max_blocks + t / c.block_size];
    if (id < 0 || id >= d.num_blocks) continue;
    uqref::uq_dequant_k(&d.cache[((static_cast<std::size_t>(id) * c.block_size + t % c.block_size) * c.num_kv_heads + h) *
                                 c.slot_bytes],
                        k);
    double s = 0.0;
    for (int g = 0; g < 8; ++g) {
      double m = 0.0;
      for (int e = 32 * g; e < 32 * g + 32; ++e) m = std::max(m, std::fabs(q8[e] * k[e]));
      s += m;
    }
    out = std::max(out, std::fabs(static_cast<double>(c.scale)) * s);
  }
  return out;
}

// Per (sequence, query head): group_max_abs_row over the sequence's attended tokens.
inline std::vector<double> group_max_abs(const DecodeCase& c, const DecodeData& d) {
  const int heads = d.hq + 2 * c.num_kv_heads;
  std::vector<double> r(static_cast<std::size_t>(d.num_seqs) * d.hq, 0.0);
  const std::int64_t cap = static_cast<std::int64_t>(d.max_blocks) * c.block_size;
  for (int b = 0; b < d.num_seqs; ++b) {
    const std::int64_t L = std::min<std::int64_t>(std::max(d.seq_lens[b], 0), cap);
    for (int hq = 0; hq < d.hq; ++hq)
      r[static_cast<std::size_t>(b) * d.hq + hq] =
          group_max_abs_row(c, d, &d.qkv[(static_cast<std::size_t>(b) * heads + hq) * 256], b, hq, L);
  }
  return r;
}

// Tolerance of the sm90 path against the float64 reference. As decode_tolerance
// (support/decode_case.hpp) except for the scores: the QK runs on FP8 wgmmas, whose products
// q8 x k are exact (K codes are E4M3 values x 2^-6) but whose sum of a group's 32 products
// aligns every product to the largest one's exponent, truncates it to 13 fractional bits and
// truncates the sum to 14 significant bits (Hopper's FP8 accumulation; MMA-Sim, arXiv
// 2511.10909). A group's partial is therefore off by < 32 x 2^-13 x 2 max|product| (the 2: a
// subnormal E4M3 operand may set the alignment one binade above its value) + 2^-13 |partial|;
// summed over the 8 groups, each times its exact scale: |delta s| <= 2^-7 gmax + (2^-13 + 64 u32)
// score_abs, gmax = group_max_abs (the fp32 promotions and the softmax scale as before). The
// softmax weights then move by at most a factor e^(2 delta): (e^(2 delta) - 1) vmax.
inline double sm90_tolerance(double ref, double vmax, double score_abs, double gmax, std::int64_t attended) {
  const double u = std::ldexp(1.0, -8), u32 = std::ldexp(1.0, -24);
  const double delta = std::ldexp(1.0, -7) * gmax + (std::ldexp(1.0, -13) + 64.0 * u32) * score_abs;
  return u * (2.0 + 3.0 * u) * vmax + u * std::fabs(ref) + std::expm1(2.0 * delta) * vmax +
         4.0 * static_cast<double>(attended + 16) * u32 * vmax + 1e-30;
}

// The lse moves by at most the largest score error (it is 1-Lipschitz in the max-norm of the
// scores): lse_tolerance (support/lse_tolerance.hpp) plus the FP8 QK's |delta s| bound above.
inline double sm90_lse_tolerance(double ref, double score_abs, double gmax, std::int64_t attended) {
  const double u32 = std::ldexp(1.0, -24);
  const double delta = std::ldexp(1.0, -7) * gmax + (std::ldexp(1.0, -13) + 64.0 * u32) * score_abs;
  return lse_tolerance(ref, score_abs, attended) + delta;
}

inline LseTolerance sm90_lse_tolerance_for(const DecodeCase& c) {
  auto gmax = std::make_shared<std::vector<double>>();
  return [c, gmax](const DecodeData& d, const uqref::DecodeResult& ref, std::size_t row) {
    if (gmax->empty()) *gmax = group_max_abs(c, d);
    return sm90_lse_tolerance(ref.lse[row], ref.score_abs[row], (*gmax)[row], ref.attended[row]);
  };
}

inline DecodeTolerance sm90_tolerance_for(const DecodeCase& c) {
  auto gmax = std::make_shared<std::vector<double>>();
  return [c, gmax](const DecodeData& d, const uqref::DecodeResult& ref, std::size_t row, std::size_t i) {
    if (gmax->empty()) *gmax = group_max_abs(c, d);
    return sm90_tolerance(ref.out[i], ref.vmax[i], ref.score_abs[row], (*gmax)[row], ref.attended[row]);
  };
}

// The sm90 path: the plan with Backend::Native, which must run on Path::Sm90 (on a device or
// build without it, Native throws: these tests FAIL there, they never skip).
struct Sm90DecodePath {
  static constexpr const char* kName = "sm90";

  template <class Q, class Cache, class Tables, class Lens, class Out, class Lse>
  uq::Status run(const DecodeCase& c, const Q& q, const Cache& cache, const Tables& tables, const Lens& lens,
                 const Out& out, const Lse& lse) {
    return run_decode_plan(c, uq::Backend::Native, uq::Path::Sm90, q, cache, tables, lens, out, lse);
  }
  DecodeTolerance tolerance(const DecodeCase& c) const { return sm90_tolerance_for(c); }
  LseTolerance lse_tolerance(const DecodeCase& c) const { return sm90_lse_tolerance_for(c); }
  void cross_check(const DecodeCase&, const DecodeCheck&) {}
};

}  // namespace uqtest
