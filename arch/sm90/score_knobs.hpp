// The launch knobs of the sm90 NVFP4 index scorer and the host's choice of them: a pure
// function of (batch, max blocks, QL, H, SM count), never of the live seq_lens or block
// tables, so a captured CUDA graph replays with the same grid whatever the lengths become.
//
// What the knobs mean (score_kernel.cuh):
//   span      consecutive logical blocks (pages) per CTA, a multiple of the CTA's 4 warps;
//             warp w takes the span's blocks w, w + 4, ... The grid is
//             batch * ceil(max_blocks / span) CTAs.
//   f16_mma   the dot products on fp16 MMAs (m16n8k16, k̂ and q converted exactly) instead
//             of the E4M3 MMA (m16n8k32). Both are exact per product and sum in fp32. Chosen
//             for more than 8 query columns (H * QL).
#pragma once

#include <cstdint>

namespace uq::sm90 {

struct ScoreKnobs {
  int span = 4;
  bool f16_mma = false;
};

namespace scorer {
constexpr int kWarps = 4;                 // warps per CTA
constexpr int kThreads = 32 * kWarps;     // 128
constexpr int kStages = 3;                // page buffers per warp (cp.async ring: 2 pages ahead)
constexpr int kCtasPerSm = 2;             // what the kernel's shared memory (2 x 110.6 KB) lets one SM hold
constexpr int kDefaultSms = 132;          // H100 / H200 SXM, when the device did not say
constexpr int kColumnsPerTileForKnobs = 8;  // query columns per MMA tile (score_args.hpp)

constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
constexpr std::int64_t clamp64(std::int64_t v, std::int64_t lo, std::int64_t hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}
}  // namespace scorer

// CTAs per request under knobs k (0 when there are no blocks).
constexpr std::int64_t score_spans_per_req(int max_blocks, const ScoreKnobs& k) {
  return max_blocks > 0 && k.span > 0 ? scorer::ceil_div(max_blocks, k.span) : 0;
}

// One wave: the batch's requests are split into as many spans as fill every resident CTA
// slot once (a CTA then streams its span's pages through its warps' pipelines, and its
// query fragments and table are loaded once). A batch larger than the resident slots gets
// one CTA per request. Arguments out of range are clamped; the launcher rejects them anyway.
constexpr ScoreKnobs choose_score_knobs(int batch, int max_blocks, int query_len, int heads, int sm_count) {
  using namespace scorer;
  ScoreKnobs k;
  const std::int64_t reqs = batch > 0 ? batch : 1;
  const std::int64_t blocks = max_blocks > 0 ? max_blocks : 0;
  const std::int64_t resident = static_cast<std::int64_t>(kCtasPerSm) * (sm_count > 0 ? sm_count : kDefaultSms);
  const std::int64_t max_splits = blocks > 0 ? ceil_div(blocks, kWarps) : 1;
  const std::int64_t splits = clamp64(resident / reqs, 1, max_splits);
  const std::int64_t span = blocks > 0 ? ceil_div(ceil_div(blocks, splits), kWarps) * kWarps : kWarps;
  k.span = static_cast<int>(span);
  // sm_90 runs the E4M3 MMA as conversions + two fp16 MMAs (SASS: F2FP, HMMA.16816), converting
  // the query operand again at every MMA; with more than one column tile the f16 variant,
  // whose query is converted once, was faster on the H200 (test_sm90_score's timing).
  k.f16_mma = static_cast<std::int64_t>(query_len) * heads > kColumnsPerTileForKnobs;
  return k;
}

}  // namespace uq::sm90
