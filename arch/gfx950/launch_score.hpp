// Launcher of the gfx950 NVFP4 index scorer, in plain C++ (no HIP types): what the dispatch
// calls (through tuned_path.hpp) for Path::Gfx950 on a Kokkos HIP execution space. It is defined
// in score.hip (library uq_gfx950) and launches on `l.stream`, the execution space's hipStream_t
// passed as void*, the kernel arguments that score_launch_args.hpp made from the launch (the
// checks are done there, once; that header also has the one-argument form). The launch
// description and its construction from views are shared with the other tuned paths
// (uq/core/score_launch.hpp). It throws uq::Error when the HIP launch itself fails.
// score_emulated.hpp has the same function for the CPU emulator.
#pragma once

#include "gfx950/score_args.hpp"
#include "gfx950/score_knobs.hpp"
#include "uq/core/score_launch.hpp"

namespace uq::gfx950 {

using ScoreLaunch = uq::impl::ScoreLaunchOf<ScoreKnobs>;

// Kokkos views -> ScoreLaunch, knobs at their defaults (uq/core/score_launch.hpp: the arguments
// of make_score_launch without compute_units).
template <class... Views>
ScoreLaunch score_launch(const Views&... views) {
  return uq::impl::with_knobs(uq::impl::make_score_launch(views...), ScoreKnobs{});
}

void launch_score(const ScoreLaunch& l, const scorer::ScoreKernelArgs& a);

}  // namespace uq::gfx950
