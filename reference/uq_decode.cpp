// UltraQuant decode, the spec's "reference meaning" (ultraquant.md §5) with the bad-data
// rules of §6 and several query tokens per sequence (§5.9), in double. Two plain passes per
// (sequence, KV head): scores of every attended token for all the sequence's query rows
// (its query tokens x the query group), then softmax weights and the weighted sum of V. Each
// slot is dequantised once per pass and shared by all those rows, so the cost is linear in
// the number of tokens.
#include "uqref_ultraquant.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace uqref {
namespace {

constexpr int kDim = 256;

// An attended token of one (sequence, KV head): its position and its slot.
struct Attended {
  std::int64_t position;
  const std::uint8_t* slot;
};

// The attended tokens among the first L of sequence b, KV head h, in token order.
std::vector<Attended> attended_slots(const DecodeInputs& in, int b, int h, std::int64_t L) {
  std::vector<Attended> slots;
  slots.reserve(static_cast<std::size_t>(L));
  for (std::int64_t t = 0; t < L; ++t) {
    const std::int32_t block =
        in.block_tables[static_cast<std::int64_t>(b) * in.max_blocks_per_seq + t / in.block_size];
    if (block < 0 || block >= in.num_blocks) continue;  // absent token (§6)
    const std::int64_t pos = t % in.block_size;
    const std::int64_t slot = (static_cast<std::int64_t>(block) * in.block_size + pos) * in.num_kv_heads + h;
    slots.push_back({t, in.cache + slot * in.slot_bytes});
  }
  return slots;
}

// A query row whose bf16 holds a NaN or an infinity (exponent field all ones): spec §6.
bool nonfinite_query(const std::uint16_t* q256) {
  for (int d = 0; d < kDim; ++d)
    if ((q256[d] & 0x7F80u) == 0x7F80u) return true;
  return false;
}

// The query tokens of sequence b: rows first .. first + count - 1.
struct QueryRows {
  std::int64_t first = 0;
  int count = 0;
};

}  // namespace

bool malformed_start_loc(const std::int32_t* locs, int num_seqs, int b, std::int64_t T, int max_len) {
  const std::int64_t s = locs[b], e = locs[b + 1];
  if (s < 0 || e < s || e > T) return true;
  if (max_len > 0 && e - s > max_len) return true;
  if (b == 0 && s != 0) return true;
  if (b == num_seqs - 1 && e != T) return true;
  return false;
}

DecodeResult uq_decode(const DecodeInputs& in) {
  const int B = in.num_seqs;
  const int qg = in.qg;
  const int Hq = in.num_kv_heads * qg;
  const bool several = in.query_start_loc != nullptr;
  const std::int64_t R = several ? in.num_query_tokens : B;  // query tokens: rows of q, out, lse
  DecodeResult res;
  res.out.assign(static_cast<std::size_t>(R) * Hq * kDim, 0.0);
  res.vmax.assign(static_cast<std::size_t>(R) * Hq * kDim, 0.0);
  res.score_abs.assign(static_cast<std::size_t>(R) * Hq, 0.0);
  res.attended.assign(static_cast<std::size_t>(R) * Hq, 0);
  res.lse.assign(static_cast<std::size_t>(R) * Hq, -std::numeric_limits<double>::infinity());
  res.nonfinite_q.assign(static_cast<std::size_t>(R) * Hq, 0);
  std::vector<int> cover(static_cast<std::size_t>(R), several ? 0 : 1);

  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::int64_t capacity = static_cast<std::int64_t>(in.max_blocks_per_seq) * in.block_size;
  for (int b = 0; b < B; ++b) {
    QueryRows qr{b, 1};
    if (several) {
      if (malformed_start_loc(in.query_start_loc, B, b, R, in.max_query_len)) {
        ++res.bad_start_locs;  // skipped: reads nothing, writes no row
        continue;
      }
      qr.first = in.query_start_loc[b];
      qr.count = in.query_start_loc[b + 1] - in.query_start_loc[b];
      for (int j = 0; j < qr.count; ++j) ++cover[static_cast<std::size_t>(qr.first + j)];
    }
    const int n = qr.count;
    if (n == 0) continue;
    const std::int64_t L = std::min<std::int64_t>(std::max<std::int32_t>(in.seq_lens[b], 0), capacity);
    // Query token j sees the positions below vis[j] (§5.9; vis[0] = L with one query token).
    std::vector<std::int64_t> vis(static_cast<std::size_t>(n));
    for (int j = 0; j < n; ++j) vis[j] = std::max<std::int64_t>(L - n + j + 1, 0);
    const int rows = n * qg;  // row jr = j * qg + r: query token j, query head h * qg + r
    std::vector<double> q8(static_cast<std::size_t>(rows) * kDim);
    for (int h = 0; h < in.num_kv_heads; ++h) {
      const std::vector<Attended> slots = attended_slots(in, b, h, L);
      const std::size_t T = slots.size();
      const int hq0 = h * qg;
      auto out_row = [&](int jr) {
        return static_cast<std::size_t>(qr.first + jr / qg) * Hq + hq0 + jr % qg;
      };
      // Attended tokens of row jr: the first `seen[j]` of `slots` (they are in token order).
      std::vector<std::size_t> seen(static_cast<std::size_t>(n), 0);
      for (int j = 0; j < n; ++j)
        while (seen[j] < T && slots[seen[j]].position < vis[j]) ++seen[j];
      for (int jr = 0; jr < rows; ++jr) {
        const std::uint16_t* q = in.q + (qr.first + jr / qg) * in.q_stride_seq + (hq0 + jr % qg) * in.q_stride_head;
        uq_query_q8(q, in.q_rotated, &q8[static_cast<std::size_t>(jr) * kDim]);
        res.attended[out_row(jr)] = static_cast<std::int64_t>(seen[jr / qg]);
        res.nonfinite_q[out_row(jr)] = nonfinite_query(q) ? 1 : 0;
      }

      // Pass 1: scores s[jr][t] of the tokens each row attends.
      std::vector<double> s(static_cast<std::size_t>(rows) * T);
      double kv[kDim];
      for (std::size_t t = 0; t < T; ++t) {
        uq_dequant_k(slots[t].slot, kv);
        for (int jr = 0; jr < rows; ++jr) {
          if (t >= seen[jr / qg]) continue;
          const double* qr8 = &q8[static_cast<std::size_t>(jr) * kDim];
          double dot = 0.0, dot_abs = 0.0;
          for (int d = 0; d < kDim; ++d) {
            dot += qr8[d] * kv[d];
            dot_abs += std::fabs(qr8[d] * kv[d]);
          }
          s[static_cast<std::size_t>(jr) * T + t] = in.scale * dot;
          double& sa = res.score_abs[out_row(jr)];
          sa = std::max(sa, std::fabs(in.scale) * dot_abs);
        }
      }

      // Pass 2: softmax weights (max subtracted) and the weighted sum of V.
      std::vector<double> mx(static_cast<std::size_t>(rows), -std::numeric_limits<double>::infinity());
      std::vector<double> wsum(static_cast<std::size_t>(rows), 0.0);
      for (int jr = 0; jr < rows; ++jr)
        for (std::size_t t = 0; t < seen[jr / qg]; ++t) mx[jr] = std::max(mx[jr], s[static_cast<std::size_t>(jr) * T + t]);
      for (std::size_t t = 0; t < T; ++t) {
        uq_dequant_v(slots[t].slot, kv);
        for (int jr = 0; jr < rows; ++jr) {
          if (t >= seen[jr / qg]) continue;
          const double w = std::exp(s[static_cast<std::size_t>(jr) * T + t] - mx[jr]);
          wsum[jr] += w;
          double* out = &res.out[out_row(jr) * kDim];
          double* vmax = &res.vmax[out_row(jr) * kDim];
          for (int d = 0; d < kDim; ++d) {
            out[d] += w * kv[d];
            vmax[d] = std::max(vmax[d], std::fabs(kv[d]));
          }
        }
      }
      for (int jr = 0; jr < rows; ++jr) {
        const std::size_t row = out_row(jr);
        double* out = &res.out[row * kDim];
        if (seen[jr / qg] > 0) {  // else out stays 0, lse -inf
          for (int d = 0; d < kDim; ++d) out[d] /= wsum[jr];
          res.lse[row] = mx[jr] + std::log(wsum[jr]);  // log sum_t exp(s_t), max subtracted and added back
        }
        // Spec §6: a non-finite query row gives an all-NaN output row and a NaN lse, whatever its
        // scores (which are NaN, or finite after E4M3's saturation of an infinity in a pre-rotated q).
        if (res.nonfinite_q[row]) {
          res.lse[row] = nan;
          for (int d = 0; d < kDim; ++d) out[d] = nan;
        }
      }
    }
  }
  res.defined.resize(cover.size());
  for (std::size_t i = 0; i < cover.size(); ++i) res.defined[i] = cover[i] == 1 ? 1 : 0;
  return res;
}

}  // namespace uqref
