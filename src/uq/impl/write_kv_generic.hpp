// Generic Kokkos cache writer (spec ultraquant.md §4). One team per (token, KV head,
// side K|V): the 256 values go to team scratch, K is rotated with the team-parallel
// WHT, then each of the 8 groups gets its scale byte and each byte its two codes.
#pragma once

#include "uq/error.hpp"
#include "uq/impl/status_counters.hpp"
#include "uq/types.hpp"
#include "uq/ultraquant.hpp"
#include "uq/wht.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace uq {
namespace impl {

template <class ExecSpace, class KView, class VView, class SlotView, class CacheView, class CountView>
struct WriteKvGeneric {
  using policy = Kokkos::TeamPolicy<ExecSpace>;
  using member = typename policy::member_type;

  KView k;
  VView v;
  SlotView slots;
  CacheView cache;
  CountView counts;
  int num_heads;
  std::int64_t num_slots;  // num_blocks * block_size
  int block_size;

  static constexpr int kScratchBytes = ultraquant::kHeadDim * sizeof(float) + 16 * sizeof(int);

  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    const std::int64_t league = team.league_rank();
    const int side = static_cast<int>(league % 2);  // 0 = K (rotated), 1 = V
    const int head = static_cast<int>((league / 2) % num_heads);
    const std::int64_t token = league / (2 * num_heads);

    const std::int64_t slot = static_cast<std::int64_t>(slots(token));
    if (slot < 0) return;  // skipped token: slot untouched
    if (slot >= num_slots) {
      Kokkos::single(Kokkos::PerTeam(team), [&]() {
        if (side == 0 && head == 0) count(counts, Counter::bad_slots);
      });
      return;
    }
    const std::int64_t block = slot / block_size;
    const std::int64_t pos = slot % block_size;

    float* x = static_cast<float*>(team.team_shmem().get_shmem(ultraquant::kHeadDim * sizeof(float)));
    int* group_byte = static_cast<int*>(team.team_shmem().get_shmem(ultraquant::kGroups * sizeof(int)));
    int* group_bad = static_cast<int*>(team.team_shmem().get_shmem(ultraquant::kGroups * sizeof(int)));

    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, ultraquant::kHeadDim), [&](int d) {
      x[d] = codec::bf16_to_float(side == 0 ? k(token, head, d) : v(token, head, d));
    });
    team.team_barrier();
    if (side == 0) wht256_team(team, x, 1);

    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, ultraquant::kGroups), [&](int g) {
      float absmax = 0.0f;
      bool finite = true;
      for (int i = 0; i < ultraquant::kGroup; ++i) {
        const float r = x[g * ultraquant::kGroup + i];
        finite = finite && codec::is_finite(r);
        const float a = r < 0.0f ? -r : r;
        absmax = a > absmax ? a : absmax;
      }
      group_bad[g] = finite ? 0 : 1;
      group_byte[g] = finite ? ultraquant::scale_byte_for_absmax(absmax) : 0;
    });
    team.team_barrier();

    const int code_base = side == 0 ? ultraquant::kKCodes : ultraquant::kVCodes;
    const int scale_base = side == 0 ? ultraquant::kKScales : ultraquant::kVScales;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, ultraquant::kHeadDim / 2), [&](int j) {
      const int g = (2 * j) / ultraquant::kGroup;
      const int b = group_byte[g];
      unsigned lo = 0, hi = 0;
      if (b != 0) {
        // y = r / 2^e. A division: 2^-e is subnormal for e = 127, 2^e never is.
        const float pow2e = codec::pow2(b - 127);
        lo = ultraquant::fp4_code_ties_down(x[2 * j] / pow2e);
        hi = ultraquant::fp4_code_ties_down(x[2 * j + 1] / pow2e);
      }
      cache(block, pos, head, code_base + j) = static_cast<std::uint8_t>(lo | (hi << 4));
    });
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, ultraquant::kGroups), [&](int g) {
      cache(block, pos, head, scale_base + g) = static_cast<std::uint8_t>(group_byte[g]);
    });
    Kokkos::single(Kokkos::PerTeam(team), [&]() {
      int bad = 0;
      for (int g = 0; g < ultraquant::kGroups; ++g) bad |= group_bad[g];
      if (bad) count(counts, Counter::nonfinite_inputs);
    });
  }

  void launch(const ExecSpace& exec, std::int64_t num_tokens) const {
    if (num_tokens == 0 || num_heads == 0) return;
    policy p(exec, static_cast<int>(num_tokens * num_heads * 2), Kokkos::AUTO);
    p.set_scratch_size(0, Kokkos::PerTeam(kScratchBytes));
    Kokkos::parallel_for("uq::write_kv", p, *this);
  }
};

}  // namespace impl
}  // namespace uq
