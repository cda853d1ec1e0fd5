// Launcher of the Hopper (sm_90) NVFP4 index scorer, in plain C++ (no CUDA types): what
// the dispatch calls (through tuned_path.hpp) for Path::Sm90 on a Kokkos CUDA execution space. It
// is defined in score.cu (library uq_sm90) and launches on `l.stream`, the execution space's
// cudaStream_t passed as void*, the kernel arguments that score_launch_args.hpp made from the
// launch (the checks are done there, once; that header also has the one-argument form). The
// launch description and its construction from views are shared with the other tuned paths
// (uq/core/score_launch.hpp). It throws uq::Error when the CUDA launch itself fails. Nothing is
// allocated and nothing synchronises, so the launch can be captured in a CUDA graph.
#pragma once

#include "sm90/score_args.hpp"
#include "sm90/score_knobs.hpp"
#include "uq/core/score_launch.hpp"

namespace uq::sm90 {

using ScoreLaunch = uq::impl::ScoreLaunchOf<ScoreKnobs>;

// Kokkos views -> ScoreLaunch, knobs at their defaults (uq/core/score_launch.hpp: the arguments
// of make_score_launch without compute_units).
template <class... Views>
ScoreLaunch score_launch(const Views&... views) {
  return uq::impl::with_knobs(uq::impl::make_score_launch(views...), ScoreKnobs{});
}

void launch_score(const ScoreLaunch& l, const ScoreKernelArgs& a);

}  // namespace uq::sm90
