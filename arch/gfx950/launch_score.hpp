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

#include <cstdint>

namespace uq::gfx950 {

using ScoreLaunch = uq::impl::ScoreLaunchOf<ScoreKnobs>;

// Kokkos views -> ScoreLaunch, knobs at their defaults (uq/core/score_launch.hpp).
template <class Q, class Cache, class Tables, class Lens, class Out, class Table, class Counters, class Params>
ScoreLaunch score_launch(const Q& q, const Cache& cache, const Tables& tables, const Lens& lens, const Out& scores,
                         const Table& table, const Counters& counters, const Params& params, std::int64_t num_reqs,
                         void* stream) {
  return uq::impl::with_knobs(uq::impl::make_score_launch(q, cache, tables, lens, scores, table, counters, params,
                                                          num_reqs, 0, stream),
                              ScoreKnobs{});
}

// The description with the knobs this path chooses from its shape and the device's CUs.
inline ScoreLaunch with_chosen_knobs(const uq::impl::ScoreLaunch& l) {
  return uq::impl::with_knobs(l, choose_score_knobs(l.num_reqs, l.max_blocks, l.query_len, l.heads, l.compute_units));
}

void launch_score(const ScoreLaunch& l, const scorer::ScoreKernelArgs& a);

}  // namespace uq::gfx950
