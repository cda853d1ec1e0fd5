// The rules about a sequence's tokens that every path of both operations shares (spec
// ultraquant.md §5-§6, nvfp4-index.md §4): what a seq_len means after the bad-data rules, and
// which tile-groups a decode partition owns. Pure integer functions, Kokkos-free
// (core/host_device.hpp), so the generic kernels, the sm90 and gfx950 kernels and the emulator
// share one definition.
#pragma once

#include "uq/core/host_device.hpp"
#include "uq/core/ultraquant_format.hpp"

#include <cstdint>

namespace uq {
namespace impl {

// What a seq_len means after the bad-data rules: negative counts as 0, more than the block
// table holds is clamped (both are counted once per sequence by the caller).
// (One template on the integer type: a kernel may keep 32-bit registers, as the gfx950
// scorer does; RequestLength / request_length are the 64-bit form.)
template <class I>
struct RequestLengthOf {
  I tokens;       // L
  bool negative;  // seq_len < 0
  bool too_long;  // seq_len > capacity
};

template <class I>
UQ_CORE_FN constexpr RequestLengthOf<I> request_length_of(I seq_len, I capacity_tokens) {
  RequestLengthOf<I> r{seq_len, false, false};
  if (seq_len < I(0)) {
    r.tokens = I(0);
    r.negative = true;
  } else if (seq_len > capacity_tokens) {
    r.tokens = capacity_tokens;
    r.too_long = true;
  }
  return r;
}

using RequestLength = RequestLengthOf<std::int64_t>;
UQ_CORE_FN RequestLength request_length(std::int64_t seq_len, std::int64_t capacity_tokens) {
  return request_length_of<std::int64_t>(seq_len, capacity_tokens);
}

// The decode's partition map (spec ultraquant.md §5): a sequence of L tokens has
// ceil(L / 256) tile-groups; partition p of P owns tile-groups p, p + P, p + 2P, ... below
// that, at most tgpp of them. The integer type is the caller's: a kernel may compute in 32-bit
// unsigned arithmetic (a 64-bit division by a run-time value is a long subroutine on GPUs).
template <class I>
UQ_CORE_FN constexpr I decode_tile_groups(I tokens) {
  return (tokens + I(kTileGroupTokens) - I(1)) / I(kTileGroupTokens);
}

template <class I>
UQ_CORE_FN constexpr I partition_trip(I p, I partitions, I tgpp, I tile_groups) {
  const I owned = p < tile_groups ? (tile_groups - p + partitions - I(1)) / partitions : I(0);
  return owned < tgpp ? owned : tgpp;
}

// Several query tokens per sequence (spec ultraquant.md §5.9), and the gather's positions (§7):
// sequence b's range [start, end) of a start-location array of num_seqs + 1 entries over T rows
// is malformed when it is not a well-formed piece of a tiling of [0, T) — every condition is one
// between neighbours, so when no range is malformed they tile [0, T) exactly. max_len 0: no
// limit on end - start.
template <class I>
UQ_CORE_FN constexpr bool malformed_start_range(I start, I end, I b, I num_seqs, I T, I max_len) {
  return start < I(0) || end < start || end > T || (max_len > I(0) && end - start > max_len) ||
         (b == I(0) && start != I(0)) || (b == num_seqs - I(1) && end != T);
}

// The tokens query token j (0 <= j < n) of a sequence of length L with n query tokens sees:
// positions 0 .. L - n + j, i.e. max(L - n + j + 1, 0) of them (L itself for the last one).
template <class I>
UQ_CORE_FN constexpr I visible_tokens(I L, I n, I j) {
  return L - n + j + I(1) > I(0) ? L - n + j + I(1) : I(0);
}

}  // namespace impl
}  // namespace uq
