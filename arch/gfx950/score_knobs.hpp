// The launch knobs of the gfx950 NVFP4 index scorer and the host's choice of them: a pure
// function of (batch, max blocks, QL, H, CU count), never of the live seq_lens or block
// tables, so a captured HIP graph replays with the same grid whatever the lengths become.
//
// What the knobs mean (score_kernel.hpp):
//   chunk     requests per chunk, one lane each (<= chunk_max(R) so the chunk's Q fits LDS);
//             the grid has ceil(batch / chunk) chunks, so any batch is handled
//   splits    workgroups per chunk; workgroup s walks the chunk's units s, s + splits, ...
//   per_wave  the 4 waves of a workgroup walk units of their own (few requests: a position
//             has fewer pages than waves); otherwise they share each position's pages
//   unit      consecutive positions (logical blocks) per unit
//   buffered  the workgroup gathers a unit's scores in LDS and stores whole row pieces
//             (shared-position mode only)
//
// No gfx950 hardware was available: the choice below follows the sibling kernels' measured
// behaviour (docs/spec/nvfp4-index-sources.md §7, §10: about 4-8 waves per CU, 1-4 pages per wave
// at short contexts, deeper at long ones) but has not itself been timed.
#pragma once

#include "gfx950/score_args.hpp"

#include <cstdint>

namespace uq::gfx950 {

struct ScoreKnobs {
  int chunk = 1;
  int splits = 1;
  bool per_wave = false;
  int unit = 1;
  bool buffered = false;
};

namespace scorer {
constexpr int kDefaultComputeUnits = 256;  // MI350X / MI355X, when the device did not say
constexpr int kWorkgroupsPerCu = 2;        // the grid aims at 2 workgroups (8 waves) per CU
constexpr int kMinBufferedUnit = 4;        // whole-row stores pay from 4 consecutive blocks on

constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
constexpr std::int64_t clamp64(std::int64_t v, std::int64_t lo, std::int64_t hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}
}  // namespace scorer

// Chunks of a batch under knobs k (the grid is chunks * splits workgroups).
constexpr int score_chunks(int batch, const ScoreKnobs& k) {
  return batch > 0 && k.chunk > 0 ? static_cast<int>(scorer::ceil_div(batch, k.chunk)) : 0;
}

// Arguments out of range (negative counts, H * QL outside 1..32) are clamped into range;
// the launcher rejects them anyway.
constexpr ScoreKnobs choose_score_knobs(int batch, int max_blocks, int query_len, int heads, int compute_units) {
  using namespace scorer;
  ScoreKnobs k;
  const int columns = static_cast<int>(clamp64(static_cast<std::int64_t>(query_len) * heads, 1, kMaxColumns));
  const std::int64_t reqs = batch > 0 ? batch : 0;
  const std::int64_t blocks = max_blocks > 0 ? max_blocks : 0;
  const int cmax = chunk_max(padded_columns(columns));
  // Balanced chunks: as few as the LDS allows, equally full.
  const std::int64_t chunks = reqs > 0 ? ceil_div(reqs, cmax) : 1;
  k.chunk = reqs > 0 ? static_cast<int>(ceil_div(reqs, chunks)) : 1;
  k.per_wave = k.chunk < kWaves;

  const std::int64_t target = static_cast<std::int64_t>(kWorkgroupsPerCu) *
                              (compute_units > 0 ? compute_units : kDefaultComputeUnits);
  // Positions per workgroup if the grid were `target` wide: a long row per workgroup is
  // worth gathering in LDS and storing in whole pieces.
  const std::int64_t positions = blocks * chunks / target;
  if (!k.per_wave && positions >= kMinBufferedUnit) {
    k.buffered = true;
    k.unit = static_cast<int>(positions < kUnitMax ? positions : kUnitMax);
  }
  // As many workgroups as the target, but every unit slot of every workgroup gets work.
  const std::int64_t slots = k.per_wave ? kWaves : 1;
  const std::int64_t max_splits = blocks > 0 ? ceil_div(ceil_div(blocks, k.unit), slots) : 1;
  k.splits = static_cast<int>(clamp64(ceil_div(target, chunks), 1, max_splits));
  return k;
}

}  // namespace uq::gfx950
