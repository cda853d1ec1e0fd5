// Launcher of the gfx950 NVFP4 index scorer, in plain C++ (no HIP types): what
// the score dispatch calls (through tuned_path.hpp) for Path::Gfx950 on a Kokkos HIP execution space. It is
// defined in score.hip (library uq_gfx950) and launches on `stream`, the execution space's
// hipStream_t passed as void*. The launch description and its construction from views are
// shared with the other tuned paths (uq/core/score_launch.hpp). It throws uq::Error for
// arguments the kernel cannot address (naming the argument) and when the HIP launch itself
// fails. score_emulated.hpp has the same function for the CPU emulator.
#pragma once

#include "gfx950/score_knobs.hpp"
#include "uq/core/score_launch.hpp"

namespace uq::gfx950 {

using ScoreLaunch = uq::impl::ScoreLaunchOf<ScoreKnobs>;

// Kokkos views -> ScoreLaunch, knobs at their defaults (uq/core/score_launch.hpp).
template <class... Args>
ScoreLaunch score_launch(const Args&... args) {
  return uq::impl::make_score_launch<ScoreKnobs>(args...);
}

void launch_score(const ScoreLaunch& args);

}  // namespace uq::gfx950
