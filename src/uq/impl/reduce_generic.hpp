// Generic Kokkos partition reducer (spec ultraquant.md §5): per (sequence, query
// head), M = max of the non-empty partitions' m, w_p = l_p * exp(m_p - M) (0 for empty
// ones), out = sum_p w_p * partial_p / sum_p w_p in fp32 (0 when the sum is 0), bf16.
// One team per (sequence, query head, 64-dim chunk) so a small batch still fills a GPU.
#pragma once

#include "uq/impl/decode_generic.hpp"
#include "uq/impl/math.hpp"
#include "uq/types.hpp"
#include "uq/wht.hpp"

#include <Kokkos_Core.hpp>

namespace uq {
namespace impl {

template <class ExecSpace, class OutView>
struct ReduceGeneric {
  using policy = Kokkos::TeamPolicy<ExecSpace>;
  using member = typename policy::member_type;
  using MemSpace = typename ExecSpace::memory_space;
  static constexpr int kChunk = 64;
  static constexpr int kChunks = kHeadDim / kChunk;

  DecodePartials<MemSpace> partials;
  OutView out;
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

    float* w = static_cast<float*>(team.team_shmem().get_shmem(partitions * sizeof(float)));
    float total = 0.0f;
    // One thread, partitions in order: the same sum on every backend.
    Kokkos::single(
        Kokkos::PerTeam(team),
        [&](float& sum) {
          float M = -codec::infinity();
          for (int p = 0; p < partitions; ++p) {
            const float mp = partials.m(first + static_cast<std::int64_t>(p) * qg);
            if (mp > -codec::infinity()) M = max_f32(M, mp);
          }
          sum = 0.0f;
          for (int p = 0; p < partitions; ++p) {
            const std::int64_t row = first + static_cast<std::int64_t>(p) * qg;
            const float mp = partials.m(row);
            w[p] = mp > -codec::infinity() ? partials.l(row) * exp_f32(mp - M) : 0.0f;
            sum += w[p];
          }
        },
        total);
    team.team_barrier();

    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, kChunk), [&](int j) {
      const int d = chunk * kChunk + j;
      float acc = 0.0f;
      for (int p = 0; p < partitions; ++p) {
        if (w[p] == 0.0f) continue;  // empty partitions add nothing (and are 0 anyway)
        const std::int64_t row = first + static_cast<std::int64_t>(p) * qg;
        acc += w[p] * codec::bf16_to_float(partials.out(row * kHeadDim + d));
      }
      out(b, hq, d) = codec::float_to_bf16(total > 0.0f ? acc / total : 0.0f);
    });
  }

  void launch(const ExecSpace& exec, int num_seqs) const {
    const int league = num_seqs * num_kv_heads * qg * kChunks;
    if (league == 0) return;
    policy pol(exec, league, Kokkos::AUTO);
    pol.set_scratch_size(0, Kokkos::PerTeam(partitions * static_cast<int>(sizeof(float))));
    Kokkos::parallel_for("uq::decode::reduce", pol, *this);
  }
};

}  // namespace impl
}  // namespace uq
