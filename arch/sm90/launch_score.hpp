// Launcher of the Hopper (sm_90) NVFP4 index scorer, in plain C++ (no CUDA types): what
// the score dispatch calls (through tuned_path.hpp) for Path::Sm90 on a Kokkos CUDA execution space. It is
// defined in score.cu (library uq_sm90) and launches on `stream`, the execution space's
// cudaStream_t passed as void*. The launch description and its construction from views are
// shared with the other tuned paths (uq/core/score_launch.hpp). It throws uq::Error for
// arguments the kernel cannot address (naming the argument) and when the CUDA launch itself
// fails. Nothing is allocated and nothing synchronises, so the launch can be captured in a
// CUDA graph.
#pragma once

#include "sm90/score_knobs.hpp"
#include "uq/core/score_launch.hpp"

namespace uq::sm90 {

using ScoreLaunch = uq::impl::ScoreLaunchOf<ScoreKnobs>;

// Kokkos views -> ScoreLaunch, knobs at their defaults (uq/core/score_launch.hpp).
template <class... Args>
ScoreLaunch score_launch(const Args&... args) {
  return uq::impl::make_score_launch<ScoreKnobs>(args...);
}

void launch_score(const ScoreLaunch& args);

}  // namespace uq::sm90
