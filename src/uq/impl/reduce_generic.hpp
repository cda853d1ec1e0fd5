// Generic Kokkos partition reducer (spec ultraquant.md §5): per (sequence, query
// head), M = max of the non-empty partitions' m, w_p = l_p * exp(m_p - M) (0 for empty
// ones), out = sum_p w_p * partial_p / sum_p w_p in fp32 (0 when the sum is 0), bf16;
// the optional lse = M + log(sum_p w_p) (-inf when the sum is 0). Only partitions with
// l > 0 (and a weight that did not underflow) have their partial row read; a NaN l (a
// non-finite query, decode_launch.hpp) makes the whole row NaN and the lse NaN.
// One team per (sequence, query head, 64-dim chunk) so a small batch still fills a GPU;
// inside a team the partitions are spread over the threads (kGroups interleaved
// partial sums per dimension), so the reducer is not latency-bound at small batch.
#pragma once

#include "uq/impl/decode_generic.hpp"
#include "uq/impl/math.hpp"
#include "uq/impl/team_policy.hpp"
#include "uq/types.hpp"
#include "uq/wht.hpp"

#include <Kokkos_Core.hpp>

namespace uq {
namespace impl {

// Dims per team of the generic reducer: its league is num_seqs * num_q_heads * (256 / 64).
inline constexpr int kReduceChunkDims = 64;

template <class ExecSpace, class OutView,
          class LseView = Kokkos::View<float**, Kokkos::LayoutStride, typename ExecSpace::memory_space>>
struct ReduceGeneric {
  using policy = TeamPolicyFor<ExecSpace>;
  using member = typename policy::member_type;
  using MemSpace = typename ExecSpace::memory_space;
  static constexpr int kChunk = kReduceChunkDims;    // dims per team
  static constexpr int kChunks = kHeadDim / kChunk;  // 4
  static constexpr int kGroups = 4;                  // partition groups summed in parallel

  DecodePartials<MemSpace> partials;
  OutView out;
  LseView lse;  // written when has_lse
  bool has_lse = false;
  int num_kv_heads = 0;
  int qg = 0;
  int partitions = 0;

  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    const int chunk = team.league_rank() % kChunks;
    const int hq = (team.league_rank() / kChunks) % (num_kv_heads * qg);
    const int b = team.league_rank() / (kChunks * num_kv_heads * qg);
    const int h = hq / qg, r = hq % qg;
    // row of partition p: ((b * Hk + h) * P + p) * QG + r
    const std::int64_t first = (static_cast<std::int64_t>(b) * num_kv_heads + h) * partitions * qg + r;
    auto row = [&](int p) { return first + static_cast<std::int64_t>(p) * qg; };

    float* w = static_cast<float*>(team.team_shmem().get_shmem(partitions * sizeof(float)));
    float* part = static_cast<float*>(team.team_shmem().get_shmem(kGroups * kChunk * sizeof(float)));

    float M = -codec::infinity();
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(team, partitions),
        [&](int p, float& mx) {
          const float mp = partials.m(row(p));
          if (mp > -codec::infinity()) mx = max_f32(mx, mp);
        },
        Kokkos::Max<float>(M));
    int nonfinite = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(team, partitions),
        [&](int p, int& any) {
          const float lp = partials.l(row(p)), mp = partials.m(row(p));
          any |= codec::is_nan(lp) ? 1 : 0;
          w[p] = lp > 0.0f && mp > -codec::infinity() ? lp * exp_f32(mp - M) : 0.0f;
        },
        Kokkos::BOr<int>(nonfinite));
    team.team_barrier();
    float total = 0.0f;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(team, partitions), [&](int p, float& sum) { sum += w[p]; }, total);
    if (nonfinite) {  // spec §6: the whole row is NaN, partial rows unread
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, kChunk), [&](int j) {
        out(b, hq, chunk * kChunk + j) = codec::float_to_bf16(codec::quiet_nan());
      });
      if (has_lse && chunk == 0) Kokkos::single(Kokkos::PerTeam(team), [&]() { lse(b, hq) = codec::quiet_nan(); });
      return;
    }

    // Partial sums: group g takes partitions g, g + kGroups, ... (those of weight 0
    // skipped: their partial rows were never written).
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, kGroups * kChunk), [&](int i) {
      const int g = i / kChunk, d = chunk * kChunk + i % kChunk;
      float acc = 0.0f;
      for (int p = g; p < partitions; p += kGroups)
        if (w[p] != 0.0f) acc += w[p] * codec::bf16_to_float(partials.out(row(p) * kHeadDim + d));
      part[i] = acc;
    });
    team.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, kChunk), [&](int j) {
      float acc = 0.0f;
      for (int g = 0; g < kGroups; ++g) acc += part[g * kChunk + j];
      out(b, hq, chunk * kChunk + j) = codec::float_to_bf16(total > 0.0f ? acc / total : 0.0f);
    });
    if (has_lse && chunk == 0)
      Kokkos::single(Kokkos::PerTeam(team),
                     [&]() { lse(b, hq) = total > 0.0f ? M + log_f32(total) : -codec::infinity(); });
  }

  void launch(const ExecSpace& exec, int num_seqs) const {
    // In 64 bits, then narrowed: DecodePlan checks max_seqs * num_kv_heads * qg * kChunks <= 2^31 - 1.
    const int league = static_cast<int>(static_cast<std::int64_t>(num_seqs) * num_kv_heads * qg * kChunks);
    if (league == 0) return;
    policy pol = runs_on_host<ExecSpace>() ? policy(exec, league, Kokkos::AUTO)
                                           : policy(exec, league, kGroups * kChunk);
    pol.set_scratch_size(0, Kokkos::PerTeam((partitions + kGroups * kChunk) * static_cast<int>(sizeof(float))));
    static_assert(fits_kernel_argument<std::decay_t<decltype(*this)>>, "the functor must travel as a kernel argument");
    Kokkos::parallel_for("uq::decode::reduce", pol, *this);
  }
};

}  // namespace impl
}  // namespace uq
