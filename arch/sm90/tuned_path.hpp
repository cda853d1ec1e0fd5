// Path::Sm90's specialisations of the tuned-path seam (uq/impl/tuned_path.hpp): where it runs (a
// Kokkos CUDA execution space) and the operations it implements — the decode partition kernel,
// its multi-token variant (spec §5.9, where a sequence's query rows fit the N of one wgmma: the
// launcher refuses the others, which then run generic), the reducer and the index scorer of
// library uq_sm90. Any other launch type is unavailable here.
// Included by uq/impl/tuned_path.hpp in a Kokkos CUDA build linked with uq_sm90.
#pragma once

#include "sm90/decode_launch_args.hpp"
#include "sm90/launch_decode.hpp"
#include "sm90/launch_score.hpp"
#include "sm90/score_launch_args.hpp"
#include "uq/backend.hpp"

#include <Kokkos_Core.hpp>

#include <type_traits>

namespace uq {
namespace impl {

template <>
struct TunedSpace<Path::Sm90> {
  static constexpr bool built = true;
  template <class ExecSpace>
  static constexpr bool runs_on = std::is_same<ExecSpace, Kokkos::Cuda>::value;
  static void* stream(const Kokkos::Cuda& exec) { return static_cast<void*>(exec.cuda_stream()); }
};

template <>
struct TunedOp<Path::Sm90, DecodePartitionsLaunch>
    : LauncherOp<DecodePartitionsLaunch, sm90::DecodeKernelArgs, &sm90::make_decode_kernel_args,
                 &sm90::launch_decode_partitions> {};

// Several query tokens per sequence: max_query_len * qg <= 32 (make_decode_queries_kernel_args).
template <>
struct TunedOp<Path::Sm90, DecodeQueriesLaunch>
    : LauncherOp<DecodeQueriesLaunch, sm90::DecodeQueriesKernelArgs, &sm90::make_decode_queries_kernel_args,
                 &sm90::launch_decode_queries> {};

template <>
struct TunedOp<Path::Sm90, DecodeReduceLaunch>
    : LauncherOp<DecodeReduceLaunch, sm90::ReduceKernelArgs, &sm90::make_reduce_kernel_args,
                 &sm90::launch_decode_reduce> {};

// The scorer's knobs are this path's own, chosen from the shape (sm90/score_knobs.hpp).
template <>
struct TunedOp<Path::Sm90, ScoreLaunch> {
  static constexpr bool available = true;
  struct Prepared {
    sm90::ScoreLaunch launch;
    sm90::ScoreKernelArgs args;
  };
  static Prepared prepare(const ScoreLaunch& l) {
    const sm90::ScoreLaunch k = with_chosen_knobs(l, &sm90::choose_score_knobs);
    return Prepared{k, sm90::make_score_kernel_args(k)};
  }
  template <class ExecSpace>
  static void launch(const ExecSpace&, const ScoreLaunch&, const Prepared& p) {
    sm90::launch_score(p.launch, p.args);
  }
};

}  // namespace impl
}  // namespace uq
