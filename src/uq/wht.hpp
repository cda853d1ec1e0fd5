// The fast Walsh-Hadamard transform of spec ultraquant.md §3, in fp32 and in the
// spec's exact order: stage s = 0..7, every pair (i, i + 2^s) with bit s of i clear
// becomes (x[i] + x[i+2^s], x[i] - x[i+2^s]); then every element times 1/16 (exact).
// Each butterfly's result depends only on its two inputs, so any schedule that keeps
// the stage order (serial, or one thread per butterfly with a barrier per stage)
// gives bit-identical values.
#pragma once

#include "uq/core/ultraquant_format.hpp"

#include <Kokkos_Core.hpp>

namespace uq {

using ultraquant::kHeadDim;  // 256: the transform's length is the head dim

// Butterfly j (0..127) of stage s: the pair's lower index.
KOKKOS_INLINE_FUNCTION int wht_pair_low(int s, int j) {
  const int low_mask = (1 << s) - 1;
  return ((j & ~low_mask) << 1) | (j & low_mask);
}

KOKKOS_INLINE_FUNCTION void wht_butterfly(float* x, int s, int j) {
  const int i = wht_pair_low(s, j);
  const int k = i + (1 << s);
  const float a = x[i];
  const float b = x[k];
  x[i] = a + b;
  x[k] = a - b;
}

// In place on `rows` rows of 256 floats (row r at x + r * 256) in team scratch, the
// team's threads sharing the butterflies. Ends with a team barrier.
template <class Member>
KOKKOS_INLINE_FUNCTION void wht256_team(const Member& team, float* x, int rows) {
  for (int s = 0; s < 8; ++s) {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rows * (kHeadDim / 2)),
                         [&](int idx) { wht_butterfly(x + (idx / 128) * kHeadDim, s, idx % 128); });
    team.team_barrier();
  }
  Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rows * kHeadDim), [&](int i) { x[i] *= 0.0625f; });
  team.team_barrier();
}

// The same transform by one thread on `rows` rows of 256 floats (row r at x + r * 256), stage
// by stage, each stage's pairs in blocks of 2^(s+1) whose halves are contiguous: loops a CPU
// compiler vectorises, with the same butterflies (and so the same bits) as wht256_team.
KOKKOS_INLINE_FUNCTION void wht256_rows(float* x, int rows) {
  for (int r = 0; r < rows; ++r) {
    float* v = x + r * kHeadDim;
    for (int s = 0; s < 8; ++s) {
      const int h = 1 << s;
      for (int i0 = 0; i0 < kHeadDim; i0 += 2 * h)
        for (int i = i0; i < i0 + h; ++i) {
          const float a = v[i];
          const float b = v[i + h];
          v[i] = a + b;
          v[i + h] = a - b;
        }
    }
    for (int d = 0; d < kHeadDim; ++d) v[d] *= 0.0625f;
  }
}

}  // namespace uq
