// The launch knobs of the sm90 NVFP4 index scorer and the host's choice of them: a pure
// function of (batch, max blocks, QL, H, SM count), never of the live seq_lens or block
// tables, so a captured CUDA graph replays with the same grid whatever the lengths become.
//
// What the knob means (score_kernel.cuh):
//   span      consecutive logical blocks (pages) per CTA (one warpgroup), >= 1. The grid is
//             batch * ceil(max_blocks / span) CTAs.
#pragma once

#include "uq/core/score_grid.hpp"

#include <cstdint>

namespace uq::sm90 {

struct ScoreKnobs {
  int span = 4;
};

namespace scorer {
constexpr int kWarps = 4;                 // one warpgroup per CTA
constexpr int kThreads = 32 * kWarps;     // 128
constexpr int kStages = 3;                // page buffers per CTA (bulk copies two pages ahead)
constexpr int kCtasPerSm = 4;             // what shared memory (score_args.hpp) and 128 registers allow
constexpr int kDefaultSms = 132;          // H100 / H200 SXM, when the device did not say
constexpr int kColumnsPerTileForKnobs = 8;  // query columns per wgmma column tile (score_args.hpp)

constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
}  // namespace scorer

// CTAs per request under knobs k (0 when there are no blocks).
constexpr std::int64_t score_spans_per_req(int max_blocks, const ScoreKnobs& k) {
  return max_blocks > 0 && k.span > 0 ? scorer::ceil_div(max_blocks, k.span) : 0;
}

// One wave (uq/core/score_grid.hpp, the generic scorer's rule too): the batch's requests are
// split into as many spans as fill every resident CTA slot once (a CTA then streams its
// span's pages through its ring, and its query operand and table are built once). A batch
// larger than the resident slots gets one CTA per request. Arguments out of range are
// clamped; the launcher rejects them anyway.
constexpr ScoreKnobs choose_score_knobs(int batch, int max_blocks, int query_len, int heads, int sm_count) {
  using namespace scorer;
  (void)query_len;
  (void)heads;
  ScoreKnobs k;
  const std::int64_t resident = static_cast<std::int64_t>(kCtasPerSm) * (sm_count > 0 ? sm_count : kDefaultSms);
  k.span = static_cast<int>(uq::impl::one_wave_span(batch, max_blocks, resident));
  return k;
}

}  // namespace uq::sm90
