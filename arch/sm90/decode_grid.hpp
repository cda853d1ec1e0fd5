// How many CTAs the sm90 partition kernel gives each (sequence, KV head): R CTAs share its P
// partitions (CTA r takes r, r + R, ...), so a CTA streams several partitions through one
// ring without the per-CTA ramp (sequence length -> block table -> copies, three dependent
// memory round trips) between them, stages its query once, and passes over empty partitions
// almost for free. R trades that against balance: the grid runs in ceil(nbh R / slots) waves
// of CTAs whose work is ceil(filled / R) partitions each. R is chosen for the longest length
// the table holds; the kernel gives a shorter sequence's partitions with tokens to fewer of its
// R CTAs (decode_tile.cuh, locate_seq). Host code only.
#pragma once

#include <cstdint>

namespace uq::sm90 {

// The ramp of a CTA, in tile-times (the length, table and first copies cost about two tiles of
// one SM's time at 3 CTAs per SM): the fixed cost per CTA in the model below. 2 picks R = 99 at
// the headline and 37 at 64 x 131k; ramps 0 (one partition with tokens per CTA) and 4 measured
// slower on the H200 (docs/perf-log/2026-12-01-sm90-persistent-decode.md).
constexpr int kRampTiles = 2;

// At most this many partitions per CTA: the model above sees only full lengths, where one CTA
// per (sequence, KV head) can be best (an engine's batch of 256 x 4 at 4 CTAs per SM: 2 waves),
// but then a shorter sequence's partitions all fall to that one CTA, one after another, and the
// batch's longest sequences set the time (ragged lengths of mean 4k in a 128k-token table:
// R = 8 faster than R = 1 on the H200, docs/perf-log/2026-12-02-sm90-third-pass.md).
constexpr int kMaxPartitionsPerCta = 32;

// nbh = num_seqs * num_kv_heads; tokens = the longest length the table can hold
// (max_blocks_per_seq * block_size), which the plan's P and TGPP cover; slots = SMs x CTAs per
// SM, sms = SMs. Returns R in 1..partitions.
inline int decode_ctas_per_bh(std::int64_t nbh, int partitions, int tgpp, std::int64_t tokens, int sms, int ctas_per_sm) {
  const std::int64_t total_tg = (tokens + 255) / 256;
  const std::int64_t filled = total_tg < partitions ? total_tg : partitions;  // partitions with tokens
  if (filled <= 1 || nbh <= 0 || sms <= 0) return 1;
  const std::int64_t trips = (total_tg + partitions - 1) / partitions;
  const std::int64_t tiles = 4 * (trips < tgpp ? trips : tgpp);  // tiles per full partition
  const std::int64_t slots = static_cast<std::int64_t>(sms) * ctas_per_sm;
  const std::int64_t r_min = (filled + kMaxPartitionsPerCta - 1) / kMaxPartitionsPerCta;
  double best = 0.0;
  int best_r = static_cast<int>(r_min);
  for (std::int64_t r = r_min; r <= filled; ++r) {
    const std::int64_t grid = nbh * r;
    const std::int64_t waves = (grid + slots - 1) / slots;
    double cost = static_cast<double>(waves) * static_cast<double>(((filled + r - 1) / r) * tiles + kRampTiles);
    // one partial wave: the SMs holding the most CTAs set the time
    if (grid < slots) cost *= static_cast<double>(((grid + sms - 1) / sms) * sms) / static_cast<double>(grid);
    if (r == r_min || cost <= best) {  // ties: the larger R (more, shorter CTAs)
      best = cost;
      best_r = static_cast<int>(r);
    }
  }
  return best_r;
}

}  // namespace uq::sm90
