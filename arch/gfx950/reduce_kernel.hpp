// The gfx950 partition reducer (spec ultraquant.md §5.4, §5.6): the same math as
// src/uq/impl/reduce_generic.hpp. Workgroup (b, hq, c) of the grid (num_seqs, num_q_heads,
// kReduceChunks), kReduceWaves waves, combines the P partial rows of query head hq = h * QG + r
// for the kReduceChunk dims of chunk c (several chunks, so that a small batch still spreads
// over the GPU):
//
//   M   = max of m_p over the partitions with m_p > -inf
//   w_p = l_p e^(m_p - M) (0 for a partition with l_p = 0, whose partial row was never
//         written and is never read), S = sum_p w_p
//   out = bf16(sum_p w_p partial_p / S), 0 when S = 0; lse = M + log S (-inf when S = 0),
//         written by the workgroups of chunk 0 when asked for
//   a NaN l_p (a non-finite query, src/uq/core/decode_launch.hpp) makes out NaN and lse NaN
//
// Designed to the memory's latency (docs/perf-log/2026-12-05-gfx950-speed.md): a
// workgroup waits for HBM twice when its row's partitions with tokens fit one batch
// (kReduceSlots x kReduceBatch = 512 of them), once more per further batch:
//   1. every lane loads the m and l of partitions t, t + 256, ... (t = its work-item index;
//      MlLoads of each: the kernel is built for P <= 1024 and for P <= 4096) at once; M, a NaN
//      l and the live partitions (1 + the last with l > 0) by one wave butterfly and the waves'
//      results through LDS; the lane's weights into an LDS array w[p] (no list: an empty
//      partition's weight is 0, and its partial load goes to a masked offset, which reads 0
//      and moves nothing);
//   2. lane (slot s, dims 8j .. 8j+7 of the chunk) loads the partial rows of partitions
//      s, s + kReduceSlots, ... below the live ones with 16-byte loads, kReduceBatch in
//      flight, and sums w_p x_p and (for S) w_p; the slots' sums are added in LDS by wave 0,
//      which stores the out row and the lse.
// Fixed reduction order (what the emulated tests reproduce bit for bit, tests/emu/
// test_emu_decode_reduce.cpp): the numerator of a dim = A + B, A the sum of the slot sums
// s = 0 .. 31 in order, B that of slots 32 .. 63, a slot's sum the sum over its partitions
// s, s + kReduceSlots, ... in increasing order, each term the fp32 product w_p x_p; S the same
// with w_p for w_p x_p.
// e^x is exp2(x log2 e).
#pragma once

#include "gfx950/decode_args.hpp"
#include "gfx950/decode_lse.hpp"
#include "gfx950/isa.hpp"

namespace uq::gfx950 {
namespace reduce_detail {

UQ_DEVICE inline float partition_weight(float m, float l, float max_m) {
  return l > 0.0f && m > -__builtin_inff() ? l * fast_exp2((m - max_m) * kLog2e) : 0.0f;
}

UQ_DEVICE inline float max_f32(float a, float b) { return a > b ? a : b; }

// The same values in every lane: the maxima over the wave by xor butterflies; the two maxima of
// round 1 go through one butterfly, so that their shuffles' latencies overlap.
template <int Mask>
UQ_DEVICE inline void max_step(float& m, std::uint32_t& n) {
  const float om = shfl_xor<Mask>(m);
  const std::uint32_t on = shfl_xor<Mask>(n);
  m = max_f32(m, om);
  n = n > on ? n : on;
}
UQ_DEVICE inline void wave_max2(float& m, std::uint32_t& n) {
  max_step<1>(m, n);
  max_step<2>(m, n);
  max_step<4>(m, n);
  max_step<8>(m, n);
  max_step<16>(m, n);
  max_step<32>(m, n);
}

struct WeightsTag {};
struct WaveStateTag {};
struct SlotSumsTag {};
struct SlotWeightsTag {};

}  // namespace reduce_detail

// MlLoads: m and l loads a lane (P <= 256 MlLoads; the launchers pick the build, reduce.hip).
template <std::uint32_t MlLoads>
UQ_DEVICE inline void decode_reduce_kernel(const ReduceKernelArgs& a) {
  using namespace reduce_detail;
  constexpr std::uint32_t kMaxP = kReduceLanes * MlLoads;
  static_assert(kMaxP <= kReduceMaxPartitions && (kMaxP / kReduceSlots) % kReduceBatch == 0,
                "a batch never reaches past the weights (see the weight reads)");
  static_assert(kReduceSlots == 64, "wave 0 adds the slot sums in two halves of 32");
  const std::uint32_t t = thread_id(), lane = lane_id(), wave = wave_id();
  const std::uint32_t b = workgroup_id_x(), hq = workgroup_id_y(), chunk = workgroup_id_z();
  const std::uint32_t qg = static_cast<std::uint32_t>(a.qg);
  const std::uint32_t h = hq / qg, r = hq % qg;
  const std::uint32_t P = static_cast<std::uint32_t>(a.partitions);  // <= kMaxP (the launcher's choice)
  // The P * QG rows of (b, h): row p * QG + r is this query head's partition p.
  const std::int64_t first_row = (static_cast<std::int64_t>(b) * a.num_kv_heads + h) * P * a.qg;
  const std::uint32_t rows = P * qg;
  const buffer_rsrc l_rsrc = make_buffer_rsrc(a.partial_l + first_row, 4u * rows);
  const buffer_rsrc m_rsrc = make_buffer_rsrc(a.partial_m + first_row, 4u * rows);
  const buffer_rsrc part_rsrc = make_buffer_rsrc(a.partial_out + first_row * kHeadDim, 2u * kHeadDim * rows);

  const std::uint32_t weights = lds_allocate<4 * kMaxP, WeightsTag>();
  // per wave: {max m, a NaN l seen, 1 + the last partition with l > 0}
  const std::uint32_t wave_state = lds_allocate<16 * kReduceWaves, WaveStateTag>();
  const std::uint32_t slot_sums = lds_allocate<4 * kReduceSlots * kReduceChunk, SlotSumsTag>();
  const std::uint32_t slot_weights = lds_allocate<4 * kReduceSlots, SlotWeightsTag>();

  // ---- round 1: every m and l of the row; M, the live partitions, the weights
  float m[MlLoads], l[MlLoads];
  UQ_GFX950_UNROLL
  for (std::uint32_t i = 0; i < MlLoads; ++i) {
    const std::uint32_t p = t + kReduceLanes * i;
    const std::uint32_t at = p < P ? 4u * (p * qg + r) : kMaskedOffset;  // reads 0: l = 0, empty
    m[i] = bit_cast<float>(buffer_load_b32(m_rsrc, at));
    l[i] = bit_cast<float>(buffer_load_b32(l_rsrc, at));
  }
  float wmax = -__builtin_inff();
  std::uint32_t wlive = 0;
  bool nan_l = false;
  UQ_GFX950_UNROLL
  for (std::uint32_t i = 0; i < MlLoads; ++i) {
    // Only partitions with tokens (l > 0) count: an empty one has m = -inf, and a masked load
    // (p >= P) reads m = l = 0. (Testing l rather than p < P keeps no lane masks alive across
    // the loads: the P <= 4096 build spilled SGPRs holding them.)
    const bool tokens = l[i] > 0.0f;
    if (tokens) wmax = max_f32(wmax, m[i]);
    wlive = tokens ? t + kReduceLanes * i + 1 : wlive;
    nan_l = nan_l || l[i] != l[i];
  }
  wave_max2(wmax, wlive);
  const bool wnan = ballot(nan_l) != 0u;
  if (lane == 0) lds_store(wave_state + 16u * wave, u32x4{bit_cast<std::uint32_t>(wmax), wnan ? 1u : 0u, wlive, 0u});
  barrier();
  float max_m = -__builtin_inff();
  bool nonfinite = false;
  std::uint32_t live = 0;  // partitions at or past it have l = 0: no weight, no partial row
  UQ_GFX950_UNROLL
  for (std::uint32_t w = 0; w < kReduceWaves; ++w) {
    const u32x4 s = lds_load<u32x4>(wave_state + 16u * w);
    max_m = max_f32(max_m, bit_cast<float>(s[0]));
    nonfinite = nonfinite || s[1] != 0u;
    live = s[2] > live ? s[2] : live;
  }

  const buffer_rsrc out_rsrc = make_buffer_rsrc(
      a.out + static_cast<std::int64_t>(b) * a.out_stride_seq + static_cast<std::int64_t>(hq) * a.out_stride_head,
      a.out_row_bytes);
  // wave 0, lanes below kReduceChunk, store the out row: dim d, and (chunk 0, lane 0) the lse
  const std::uint32_t d = kReduceChunk * chunk + (lane & 31u);
  const bool storing = wave == 0 && lane < kReduceChunk;
  const auto store_lse = [&](float value) {
    if (a.lse == nullptr || chunk != 0 || wave != 0 || lane != 0) return;
    const buffer_rsrc lse_rsrc = make_buffer_rsrc(
        a.lse + static_cast<std::int64_t>(b) * a.lse_stride_seq + static_cast<std::int64_t>(hq) * a.lse_stride_head, 4u);
    buffer_store_b32(bit_cast<std::uint32_t>(value), lse_rsrc, 0u);
  };
  if (nonfinite) {  // workgroup-uniform: the row is NaN, no partial row is read (spec §6)
    if (storing) {
      buffer_store_b16(static_cast<std::uint16_t>(kBf16NanPair & 0xFFFFu), out_rsrc,
                       static_cast<std::uint32_t>(2 * static_cast<std::int64_t>(d) * a.out_stride_dim));
    }
    store_lse(lse_of(max_m, 0.0f, true));
    return;
  }

  UQ_GFX950_UNROLL
  for (std::uint32_t i = 0; i < MlLoads; ++i) {
    // every entry below kMaxP is written: those at or past P (masked loads: l = 0) get 0
    const float w = partition_weight(m[i], l[i], max_m);
    lds_store(weights + 4u * (t + kReduceLanes * i), bit_cast<std::uint32_t>(w));
  }
  barrier();

  // ---- round 2: the weighted sum of the partial rows, slot s = t / kReduceRowLanes taking
  // partitions s, s + kReduceSlots, ... below `live` (workgroup-uniform)
  const std::uint32_t slot = t / kReduceRowLanes, piece = t % kReduceRowLanes;
  const std::uint32_t dims = kReduceChunk * chunk + kReduceDimsPerLane * piece;
  float acc[kReduceDimsPerLane];
  UQ_GFX950_UNROLL
  for (std::uint32_t e = 0; e < kReduceDimsPerLane; ++e) acc[e] = 0.0f;
  float slot_w = 0.0f;  // the slot's share of S: its weights, in the same order
  const std::uint32_t steps = (live + kReduceSlots - 1) / kReduceSlots;  // partitions per slot
  for (std::uint32_t k0 = 0; k0 < steps; k0 += kReduceBatch) {
    float w[kReduceBatch];
    u32x4 x[kReduceBatch];
    // The batch's weights first, then its loads: left to itself the compiler waits for each
    // LDS read before the load that needs it, an LDS round trip per partition. The reads need
    // no guard (immediate offsets): k0 < steps <= kMaxP / kReduceSlots and k0 is a multiple of
    // kReduceBatch, so p < kMaxP; the weights past `live` are 0.
    UQ_GFX950_UNROLL
    for (std::uint32_t j = 0; j < kReduceBatch; ++j) {
      w[j] = bit_cast<float>(lds_load<std::uint32_t>(weights + 4u * (slot + kReduceSlots * (k0 + j))));
    }
    sched_barrier<0>();
    UQ_GFX950_UNROLL
    for (std::uint32_t j = 0; j < kReduceBatch; ++j) {
      const std::uint32_t p = slot + kReduceSlots * (k0 + j);
      // only partitions with a weight are read (the generic reducer skips the others too)
      const std::uint32_t at = w[j] != 0.0f ? 2u * ((p * qg + r) * kHeadDim + dims) : kMaskedOffset;
      x[j] = buffer_load_b128(part_rsrc, at);
    }
    // A masked term adds w x = 0 x 0 = +0, which leaves the sum's bits as they are (it is
    // never -0: it starts at +0 and a sum of two values is -0 only when both are).
    UQ_GFX950_UNROLL
    for (std::uint32_t j = 0; j < kReduceBatch; ++j) {
      slot_w += w[j];
      UQ_GFX950_UNROLL
      for (std::uint32_t e = 0; e < kReduceDimsPerLane; ++e) {
        const std::uint32_t word = x[j][e >> 1];
        const float v = bit_cast<float>((e & 1u) ? (word & 0xFFFF0000u) : (word << 16));
        acc[e] += w[j] * v;
      }
    }
  }
  if (piece == 0) lds_store(slot_weights + 4u * slot, bit_cast<std::uint32_t>(slot_w));
  const std::uint32_t mine = slot_sums + 4u * (slot * kReduceChunk + kReduceDimsPerLane * piece);
  UQ_GFX950_UNROLL
  for (std::uint32_t e = 0; e < kReduceDimsPerLane; e += 4) {
    lds_store(mine + 4u * e, u32x4{bit_cast<std::uint32_t>(acc[e]), bit_cast<std::uint32_t>(acc[e + 1]),
                                   bit_cast<std::uint32_t>(acc[e + 2]), bit_cast<std::uint32_t>(acc[e + 3])});
  }
  barrier();
  if (wave != 0) return;  // wave-uniform; no barrier follows

  // lane L sums column L & 31 and the weights over slots 32 (L >> 5) .. + 31; the halves meet
  // by a swap
  float half_sum = 0.0f, half_w = 0.0f;
  const std::uint32_t column = lane & 31u, first_slot = 32u * (lane >> 5);
  UQ_GFX950_UNROLL
  for (std::uint32_t s = 0; s < kReduceSlots / 2; ++s) {
    const std::uint32_t at = slot_sums + 4u * ((first_slot + s) * kReduceChunk + (column < kReduceChunk ? column : 0u));
    half_sum += bit_cast<float>(lds_load<std::uint32_t>(at));
    half_w += bit_cast<float>(lds_load<std::uint32_t>(slot_weights + 4u * (first_slot + s)));
  }
  const bool low = (lane >> 5) == 0;
  const float other_sum = shfl_xor<32>(half_sum), other_w = shfl_xor<32>(half_w);
  const float total = low ? half_sum + other_sum : other_sum + half_sum;
  const float sum = low ? half_w + other_w : other_w + half_w;
  const float y = sum > 0.0f ? total / sum : 0.0f;
  const std::uint16_t out_bits = static_cast<std::uint16_t>(cvt_pk_bf16_f32(y, 0.0f) & 0xFFFFu);
  if (storing) {
    buffer_store_b16(out_bits, out_rsrc, static_cast<std::uint32_t>(2 * static_cast<std::int64_t>(d) * a.out_stride_dim));
  }
  store_lse(lse_of(max_m, sum, false));
}

// The reducer's m and l loads a lane for a launch of P partitions (its two builds).
constexpr std::uint32_t reduce_ml_loads(std::int32_t partitions) {
  return static_cast<std::uint32_t>(partitions) <= kReduceNarrowPartitions ? kReduceNarrowPartitions / kReduceLanes
                                                                          : kReduceMaxPartitions / kReduceLanes;
}

}  // namespace uq::gfx950
