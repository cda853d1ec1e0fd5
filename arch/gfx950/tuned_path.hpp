// Path::Gfx950's specialisation of the tuned-path seam (uq/impl/tuned_path.hpp): the gfx950
// decode, reducer and scorer launchers of library uq_gfx950 on a Kokkos HIP execution space.
// Included by uq/impl/tuned_path.hpp in a Kokkos HIP build linked with uq_gfx950.
#pragma once

#include "gfx950/decode_launch_args.hpp"
#include "gfx950/launch_decode.hpp"
#include "gfx950/launch_score.hpp"
#include "gfx950/score_knobs.hpp"
#include "gfx950/score_launch_args.hpp"
#include "uq/backend.hpp"
#include "uq/impl/kokkos_compat.hpp"

#include <Kokkos_Core.hpp>

namespace uq {
namespace impl {

template <>
struct TunedPath<Path::Gfx950> {
  static constexpr bool built = true;
  using ExecSpace = HipSpace;
  using ScoreLaunch = gfx950::ScoreLaunch;

  static void* stream(const ExecSpace& exec) { return static_cast<void*>(exec.hip_stream()); }
  static gfx950::ScoreKnobs score_knobs(int num_reqs, int max_blocks, int query_len, int heads, int cus) {
    return gfx950::choose_score_knobs(num_reqs, max_blocks, query_len, heads, cus);
  }

  static void check(const DecodePartitionsLaunch& l) { (void)gfx950::make_decode_kernel_args(l); }
  static void check(const DecodeReduceLaunch& l) { (void)gfx950::make_reduce_kernel_args(l); }
  static void check(const ScoreLaunch& l) { (void)gfx950::make_score_kernel_args(l); }
  static void launch(const DecodePartitionsLaunch& l) { gfx950::launch_decode_partitions(l); }
  static void launch(const DecodeReduceLaunch& l) { gfx950::launch_decode_reduce(l); }
  static void launch(const ScoreLaunch& l) { gfx950::launch_score(l); }
};

}  // namespace impl
}  // namespace uq
