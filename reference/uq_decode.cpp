// UltraQuant decode, the spec's "reference meaning" (ultraquant.md §5) with the bad-data
// rules of §6, in double. Two plain passes per (sequence, KV head): scores of every
// attended token for the whole query group, then softmax weights and the weighted sum
// of V. Each slot is dequantised once per pass and shared by the group's query heads,
// so the cost is linear in the number of tokens.
#include "uqref_ultraquant.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace uqref {
namespace {

constexpr int kDim = 256;

// Slots of the attended tokens of one (sequence, KV head), in token order.
std::vector<const std::uint8_t*> attended_slots(const DecodeInputs& in, int b, int h) {
  const std::int64_t capacity = static_cast<std::int64_t>(in.max_blocks_per_seq) * in.block_size;
  const std::int64_t L = std::min<std::int64_t>(std::max<std::int32_t>(in.seq_lens[b], 0), capacity);
  const std::int64_t slot_stride = in.slot_bytes;
  std::vector<const std::uint8_t*> slots;
  slots.reserve(static_cast<std::size_t>(L));
  for (std::int64_t t = 0; t < L; ++t) {
    const std::int32_t block =
        in.block_tables[static_cast<std::int64_t>(b) * in.max_blocks_per_seq + t / in.block_size];
    if (block < 0 || block >= in.num_blocks) continue;  // absent token (§6)
    const std::int64_t pos = t % in.block_size;
    const std::int64_t slot = (static_cast<std::int64_t>(block) * in.block_size + pos) * in.num_kv_heads + h;
    slots.push_back(in.cache + slot * slot_stride);
  }
  return slots;
}

// A query row whose bf16 holds a NaN or an infinity (exponent field all ones): spec §6.
bool nonfinite_query(const std::uint16_t* q256) {
  for (int d = 0; d < kDim; ++d)
    if ((q256[d] & 0x7F80u) == 0x7F80u) return true;
  return false;
}

// Spec §6: a non-finite query row gives an all-NaN output row and a NaN lse, whatever its
// scores (which are NaN, or finite after E4M3's saturation of an infinity in a pre-rotated q).
void finish_nonfinite_rows(DecodeResult& res, int b, int hq0, int qg, int Hq) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (int r = 0; r < qg; ++r) {
    const std::size_t row = static_cast<std::size_t>(b) * Hq + hq0 + r;
    if (!res.nonfinite_q[row]) continue;
    res.lse[row] = nan;
    for (int d = 0; d < kDim; ++d) res.out[row * kDim + d] = nan;
  }
}

}  // namespace

DecodeResult uq_decode(const DecodeInputs& in) {
  const int B = in.num_seqs;
  const int qg = in.qg;
  const int Hq = in.num_kv_heads * qg;
  DecodeResult res;
  res.out.assign(static_cast<std::size_t>(B) * Hq * kDim, 0.0);
  res.vmax.assign(static_cast<std::size_t>(B) * Hq * kDim, 0.0);
  res.score_abs.assign(static_cast<std::size_t>(B) * Hq, 0.0);
  res.attended.assign(static_cast<std::size_t>(B) * Hq, 0);
  res.lse.assign(static_cast<std::size_t>(B) * Hq, -std::numeric_limits<double>::infinity());
  res.nonfinite_q.assign(static_cast<std::size_t>(B) * Hq, 0);

  std::vector<double> q8(static_cast<std::size_t>(qg) * kDim);
  double kv[kDim];
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < in.num_kv_heads; ++h) {
      const std::vector<const std::uint8_t*> slots = attended_slots(in, b, h);
      const std::size_t n = slots.size();
      const int hq0 = h * qg;
      for (int r = 0; r < qg; ++r) {
        const std::uint16_t* q = in.q + b * in.q_stride_seq + (hq0 + r) * in.q_stride_head;
        uq_query_q8(q, in.q_rotated, &q8[static_cast<std::size_t>(r) * kDim]);
        const std::size_t row = static_cast<std::size_t>(b) * Hq + hq0 + r;
        res.attended[row] = static_cast<std::int64_t>(n);
        res.nonfinite_q[row] = nonfinite_query(q) ? 1 : 0;
      }
      if (n == 0) {  // out stays 0, lse -inf (NaN for a non-finite query, below)
        finish_nonfinite_rows(res, b, hq0, qg, Hq);
        continue;
      }

      // Pass 1: scores s[r][t].
      std::vector<double> s(static_cast<std::size_t>(qg) * n);
      for (std::size_t t = 0; t < n; ++t) {
        uq_dequant_k(slots[t], kv);
        for (int r = 0; r < qg; ++r) {
          const double* qr = &q8[static_cast<std::size_t>(r) * kDim];
          double dot = 0.0, dot_abs = 0.0;
          for (int d = 0; d < kDim; ++d) {
            dot += qr[d] * kv[d];
            dot_abs += std::fabs(qr[d] * kv[d]);
          }
          s[static_cast<std::size_t>(r) * n + t] = in.scale * dot;
          double& sa = res.score_abs[static_cast<std::size_t>(b) * Hq + hq0 + r];
          sa = std::max(sa, std::fabs(in.scale) * dot_abs);
        }
      }

      // Pass 2: softmax weights (max subtracted) and the weighted sum of V.
      std::vector<double> mx(qg, -std::numeric_limits<double>::infinity());
      std::vector<double> wsum(qg, 0.0);
      for (int r = 0; r < qg; ++r)
        for (std::size_t t = 0; t < n; ++t) mx[r] = std::max(mx[r], s[static_cast<std::size_t>(r) * n + t]);
      for (std::size_t t = 0; t < n; ++t) {
        uq_dequant_v(slots[t], kv);
        for (int r = 0; r < qg; ++r) {
          const std::size_t row = static_cast<std::size_t>(b) * Hq + hq0 + r;
          const double w = std::exp(s[static_cast<std::size_t>(r) * n + t] - mx[r]);
          wsum[r] += w;
          double* out = &res.out[row * kDim];
          double* vmax = &res.vmax[row * kDim];
          for (int d = 0; d < kDim; ++d) {
            out[d] += w * kv[d];
            vmax[d] = std::max(vmax[d], std::fabs(kv[d]));
          }
        }
      }
      for (int r = 0; r < qg; ++r) {
        const std::size_t row = static_cast<std::size_t>(b) * Hq + hq0 + r;
        double* out = &res.out[row * kDim];
        for (int d = 0; d < kDim; ++d) out[d] /= wsum[r];
        res.lse[row] = mx[r] + std::log(wsum[r]);  // log sum_t exp(s_t), max subtracted and added back
      }
      finish_nonfinite_rows(res, b, hq0, qg, Hq);
    }
  }
  return res;
}

}  // namespace uqref
