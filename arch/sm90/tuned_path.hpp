// Path::Sm90's specialisation of the tuned-path seam (uq/impl/tuned_path.hpp): the Hopper
// decode, reducer and scorer launchers of library uq_sm90 on a Kokkos CUDA execution space.
// Included by uq/impl/tuned_path.hpp in a Kokkos CUDA build linked with uq_sm90.
#pragma once

#include "sm90/launch_checks.hpp"
#include "sm90/launch_decode.hpp"
#include "sm90/launch_score.hpp"
#include "sm90/score_checks.hpp"
#include "sm90/score_knobs.hpp"
#include "uq/backend.hpp"

#include <Kokkos_Core.hpp>

namespace uq {
namespace impl {

template <>
struct TunedPath<Path::Sm90> {
  static constexpr bool built = true;
  using ExecSpace = Kokkos::Cuda;
  using ScoreLaunch = sm90::ScoreLaunch;

  static void* stream(const ExecSpace& exec) { return static_cast<void*>(exec.cuda_stream()); }
  static sm90::ScoreKnobs score_knobs(int num_reqs, int max_blocks, int query_len, int heads, int sm_count) {
    return sm90::choose_score_knobs(num_reqs, max_blocks, query_len, heads, sm_count);
  }

  static void check(const DecodePartitionsLaunch& l) { (void)sm90::make_decode_kernel_args(l); }
  static void check(const DecodeReduceLaunch& l) { (void)sm90::make_reduce_kernel_args(l); }
  static void check(const ScoreLaunch& l) { (void)sm90::make_score_kernel_args(l); }
  static void launch(const DecodePartitionsLaunch& l) { sm90::launch_decode_partitions(l); }
  static void launch(const DecodeReduceLaunch& l) { sm90::launch_decode_reduce(l); }
  static void launch(const ScoreLaunch& l) { sm90::launch_score(l); }
};

}  // namespace impl
}  // namespace uq
