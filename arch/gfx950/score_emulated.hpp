// The emulator's launcher of the NVFP4 index scorer: the same launch description, checks,
// argument struct and grid as the HIP launcher in score.hip, with the kernel's source run by
// the CPU wavefront emulator (link uq::gfx950_emu, which defines UQ_GFX950_EMULATE). Pointers
// are host pointers; `stream` is ignored. Returns when the kernel has finished; throws
// uq::Error for bad arguments and uq::emu::Fault when the kernel breaks an emulator rule.
#pragma once

#if !defined(UQ_GFX950_EMULATE)
#error "score_emulated.hpp runs the scorer in the emulator: link uq::gfx950_emu"
#endif

#include "emu/emulator.hpp"
#include "gfx950/score_kernel.hpp"
#include "gfx950/score_launch_args.hpp"

namespace uq::gfx950 {

namespace score_emulated_detail {
template <int R>
void run(const scorer::ScoreKernelArgs& a, const uq::emu::LaunchConfig& config, bool buffered) {
  if (buffered)
    uq::emu::launch(config, [&] { score_kernel<R, true>(a); });
  else
    uq::emu::launch(config, [&] { score_kernel<R, false>(a); });
}
}  // namespace score_emulated_detail

inline void emulate_score(const ScoreLaunch& l) {
  const scorer::ScoreKernelArgs a = make_score_kernel_args(l);
  const std::uint32_t grid = score_grid(l);
  if (grid == 0) return;
  uq::emu::LaunchConfig config;
  config.grid = {grid, 1, 1};
  config.waves_per_workgroup = scorer::kWaves;
  switch (scorer::padded_columns(l.query_len * l.heads)) {
    case 1: return score_emulated_detail::run<1>(a, config, l.knobs.buffered);
    case 2: return score_emulated_detail::run<2>(a, config, l.knobs.buffered);
    case 4: return score_emulated_detail::run<4>(a, config, l.knobs.buffered);
    case 8: return score_emulated_detail::run<8>(a, config, l.knobs.buffered);
    case 16: return score_emulated_detail::run<16>(a, config, l.knobs.buffered);
    default: return score_emulated_detail::run<32>(a, config, l.knobs.buffered);
  }
}

}  // namespace uq::gfx950
