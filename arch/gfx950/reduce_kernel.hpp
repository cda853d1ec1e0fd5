// The gfx950 partition reducer (spec ultraquant.md §5, ultraquant-sources.md §6): the same
// math as src/uq/impl/reduce_generic.hpp. Workgroup (b, hq, c) of the grid (num_seqs,
// num_q_heads, 4), one wave, combines the P partial rows of query head hq = h * QG + r for
// the 64 dims 64c .. 64c+63 (split over head-dim chunks so that a small batch still fills
// the GPU):
//
//   M   = max of m_p over the partitions with m_p > -inf
//   w_p = l_p e^(m_p - M) (0 for a partition with l_p = 0, whose partial row was never
//         written and is never read), S = sum_p w_p
//   out = bf16(sum_p w_p partial_p / S), 0 when S = 0; lse = M + log S (-inf when S = 0),
//         written by the workgroups of chunk 0 when asked for
//   a NaN l_p (a non-finite query, src/uq/core/decode_launch.hpp) makes out NaN and lse NaN
//
// Pass 1: the lanes take the partitions p = lane, lane + 64, ... and combine M with xor
// shuffles. Pass 2, per round of 256 partitions: each lane computes the weights of 4 of
// them; the non-zero ones are compacted in order into an LDS list (ballot + prefix count), so
// that empty partitions cost nothing (the generic reducer skips them too); then every lane
// walks the list for its dim 64c + lane, issuing 16 independent partial loads at a time (a
// chain of dependent loads would wait a memory latency per partition). S sums the weights
// per lane, then over the wave. e^x is exp2(x log2 e).
#pragma once

#include "gfx950/decode_args.hpp"
#include "gfx950/decode_lse.hpp"
#include "gfx950/isa.hpp"

namespace uq::gfx950 {
namespace reduce_detail {

UQ_DEVICE inline float partition_weight(float m, float l, float max_m) {
  return l > 0.0f && m > -__builtin_inff() ? l * fast_exp2((m - max_m) * kLog2e) : 0.0f;
}

template <int Mask>
UQ_DEVICE inline float wave_max_step(float v) {
  const float o = shfl_xor<Mask>(v);
  return v > o ? v : o;
}

}  // namespace reduce_detail

struct ReduceListTag {};

UQ_DEVICE inline void decode_reduce_kernel(const ReduceKernelArgs& a) {
  using namespace reduce_detail;
  const std::uint32_t lane = lane_id();
  const std::uint32_t b = workgroup_id_x(), hq = workgroup_id_y(), chunk = workgroup_id_z();
  const std::uint32_t qg = static_cast<std::uint32_t>(a.qg);
  const std::uint32_t h = hq / qg, r = hq % qg;
  const std::int32_t P = a.partitions;
  // The P * QG rows of (b, h): row p * QG + r is this query head's partition p.
  const std::int64_t first_row = (static_cast<std::int64_t>(b) * a.num_kv_heads + h) * P * a.qg;
  const std::uint32_t rows = static_cast<std::uint32_t>(P) * qg;
  const buffer_rsrc l_rsrc = make_buffer_rsrc(a.partial_l + first_row, 4u * rows);
  const buffer_rsrc m_rsrc = make_buffer_rsrc(a.partial_m + first_row, 4u * rows);
  const buffer_rsrc part_rsrc = make_buffer_rsrc(a.partial_out + first_row * kHeadDim, 2u * kHeadDim * rows);
  const auto lm_offset = [&](std::int32_t p) { return 4u * (static_cast<std::uint32_t>(p) * qg + r); };

  // ---- pass 1: M over the non-empty partitions
  float max_m = -__builtin_inff();
  _Pragma("GCC unroll 8")  // independent loads: let them be in flight together
  for (std::int32_t p = static_cast<std::int32_t>(lane); p < P; p += 64) {
    const float m = bit_cast<float>(buffer_load_b32(m_rsrc, lm_offset(p)));
    if (m > -__builtin_inff()) max_m = m > max_m ? m : max_m;
  }
  max_m = wave_max_step<1>(max_m);
  max_m = wave_max_step<2>(max_m);
  max_m = wave_max_step<4>(max_m);
  max_m = wave_max_step<8>(max_m);
  max_m = wave_max_step<16>(max_m);
  max_m = wave_max_step<32>(max_m);

  // ---- pass 2: weights, compacted list, weighted sum of the partial rows for dim 64c + lane
  const std::uint32_t list = lds_allocate<kReduceListEntries * 8, ReduceListTag>();  // {p, w} pairs
  const std::uint32_t d = kReduceChunk * chunk + lane;
  const std::uint64_t lanes_below = (std::uint64_t{1} << lane) - 1;
  float sum = 0.0f, acc = 0.0f;
  bool nan_l = false;  // this lane saw a NaN l
  for (std::int32_t base = 0; base < P; base += static_cast<std::int32_t>(kReduceListEntries)) {
    std::uint32_t count = 0;  // wave-uniform
    UQ_GFX950_UNROLL
    for (std::uint32_t round = 0; round < kReduceListEntries / 64; ++round) {
      const std::int32_t p = base + static_cast<std::int32_t>(64 * round + lane);
      const bool in = p < P;
      const float m = bit_cast<float>(buffer_load_b32(m_rsrc, in ? lm_offset(p) : kMaskedOffset));
      const float l = bit_cast<float>(buffer_load_b32(l_rsrc, in ? lm_offset(p) : kMaskedOffset));
      const float w = in ? partition_weight(m, l, max_m) : 0.0f;
      nan_l = nan_l || l != l;  // a masked load reads 0, never NaN
      sum += w;
      const std::uint64_t nonzero = ballot(w != 0.0f);
      if (w != 0.0f) {
        const std::uint32_t at = list + 8u * (count + static_cast<std::uint32_t>(__builtin_popcountll(nonzero & lanes_below)));
        lds_store(at, u32x2{static_cast<std::uint32_t>(p), bit_cast<std::uint32_t>(w)});
      }
      count += static_cast<std::uint32_t>(__builtin_popcountll(nonzero));
    }
    barrier();
    for (std::uint32_t i = 0; i < count; i += 16) {
      float w[16], x[16];
      UQ_GFX950_UNROLL
      for (std::uint32_t u = 0; u < 16; ++u) {
        const bool ok = i + u < count;
        const u32x2 entry = lds_load<u32x2>(list + 8u * (ok ? i + u : 0u));
        const std::uint32_t row = entry[0] * qg + r;
        w[u] = bit_cast<float>(entry[1]);
        const std::uint32_t bits = buffer_load_b16(part_rsrc, ok ? 2u * (row * kHeadDim + d) : kMaskedOffset);
        x[u] = bit_cast<float>(bits << 16);
      }
      UQ_GFX950_UNROLL
      for (std::uint32_t u = 0; u < 16; ++u) {
        if (i + u < count) acc += w[u] * x[u];  // partitions in order, as the generic reducer
      }
    }
    barrier();  // every lane has read the list before the next round rewrites it
  }
  sum += shfl_xor<1>(sum);
  sum += shfl_xor<2>(sum);
  sum += shfl_xor<4>(sum);
  sum += shfl_xor<8>(sum);
  sum += shfl_xor<16>(sum);
  sum += shfl_xor<32>(sum);

  const bool nonfinite = ballot(nan_l) != 0u;  // wave-uniform

  const float y = sum > 0.0f ? acc / sum : 0.0f;
  const std::uint16_t out_bits =
      nonfinite ? static_cast<std::uint16_t>(kBf16NanPair & 0xFFFFu)
                : static_cast<std::uint16_t>(cvt_pk_bf16_f32(y, 0.0f) & 0xFFFFu);
  const buffer_rsrc out_rsrc = make_buffer_rsrc(
      a.out + static_cast<std::int64_t>(b) * a.out_stride_seq + static_cast<std::int64_t>(hq) * a.out_stride_head,
      a.out_row_bytes);
  buffer_store_b16(out_bits, out_rsrc, static_cast<std::uint32_t>(2 * static_cast<std::int64_t>(d) * a.out_stride_dim));
  if (a.lse != nullptr && chunk == 0 && lane == 0) {
    const buffer_rsrc lse_rsrc = make_buffer_rsrc(
        a.lse + static_cast<std::int64_t>(b) * a.lse_stride_seq + static_cast<std::int64_t>(hq) * a.lse_stride_head, 4u);
    buffer_store_b32(bit_cast<std::uint32_t>(lse_of(max_m, sum, nonfinite)), lse_rsrc, 0u);
  }
}

}  // namespace uq::gfx950
