// uq::rotate_query: q_rot = WHT(fp32(q)) (spec ultraquant.md §3), before the E4M3
// rounding that decode applies. Useful to pre-rotate q once (DecodeConfig::q_rotated
// then takes bf16(q_rot)) or to inspect the rotated query.
#pragma once

#include "uq/impl/checks.hpp"
#include "uq/impl/rotate_query_generic.hpp"
#include "uq/types.hpp"
#include "uq/wht.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <limits>
#include <type_traits>

namespace uq {

// q: [num_seqs, num_heads, 256] bf16, any layout; q_rot: same shape, float.
template <class ExecSpace, class Q, class Out,
          class = std::enable_if_t<Kokkos::is_execution_space<ExecSpace>::value>>
void rotate_query(const ExecSpace& exec, const Q& q, const Out& q_rot) {
  static_assert(impl::ViewContract<ExecSpace, Q, bf16, 3>::ok, "");
  static_assert(impl::OutputViewContract<ExecSpace, Out, float, 3>::ok, "");
  constexpr const char* fn = "uq::rotate_query";
  impl::require_extent(fn, "q", q, 2, kHeadDim, "head dim");
  for (int d = 0; d < 3; ++d)
    impl::require_extent(fn, "q_rot", q_rot, d, static_cast<std::int64_t>(q.extent(d)), "same shape as q");
  const std::int64_t rows = static_cast<std::int64_t>(q.extent(0)) * static_cast<std::int64_t>(q.extent(1));
  impl::require(rows <= std::numeric_limits<int>::max(), fn, "q", "num_seqs * num_heads <= 2^31 - 1",
                impl::str(rows));
  impl::require_no_alias(fn, "q_rot", q_rot, "q", q);
  impl::RotateQueryGeneric<ExecSpace, Q, Out>{q, q_rot, static_cast<int>(q.extent(1))}.launch(
      exec, static_cast<int>(rows));
}

template <class Q, class Out, class = std::enable_if_t<Kokkos::is_view<Q>::value>>
void rotate_query(const Q& q, const Out& q_rot) {
  rotate_query(typename Out::execution_space(), q, q_rot);
}

}  // namespace uq
