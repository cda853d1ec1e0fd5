// Generic query rotation: q_rot = WHT(fp32(q)) per row (spec ultraquant.md §3), one
// team per (sequence, head) row.
#pragma once

#include "uq/impl/team_policy.hpp"
#include "uq/types.hpp"
#include "uq/wht.hpp"

#include <Kokkos_Core.hpp>

namespace uq {
namespace impl {

template <class ExecSpace, class QView, class OutView>
struct RotateQueryGeneric {
  using policy = TeamPolicyFor<ExecSpace>;
  using member = typename policy::member_type;

  QView q;
  OutView out;
  int heads;

  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    const int b = team.league_rank() / heads;
    const int h = team.league_rank() % heads;
    float* x = static_cast<float*>(team.team_shmem().get_shmem(kHeadDim * sizeof(float)));
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, kHeadDim),
                         [&](int d) { x[d] = codec::bf16_to_float(q(b, h, d)); });
    team.team_barrier();
    wht256_team(team, x, 1);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, kHeadDim), [&](int d) { out(b, h, d) = x[d]; });
  }

  void launch(const ExecSpace& exec, int rows) const {
    if (rows == 0) return;
    policy p(exec, rows, Kokkos::AUTO);
    p.set_scratch_size(0, Kokkos::PerTeam(kHeadDim * sizeof(float)));
    static_assert(fits_kernel_argument<std::decay_t<decltype(*this)>>, "the functor must travel as a kernel argument");
    Kokkos::parallel_for("uq::rotate_query", p, *this);
  }
};

}  // namespace impl
}  // namespace uq
