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
        res.attended[static_cast<std::size_t>(b) * Hq + hq0 + r] = static_cast<std::int64_t>(n);
      }
      if (n == 0) continue;  // out stays 0

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
        double* out = &res.out[(static_cast<std::size_t>(b) * Hq + hq0 + r) * kDim];
        for (int d = 0; d < kDim; ++d) out[d] /= wsum[r];
      }
    }
  }
  return res;
}

}  // namespace uqref
