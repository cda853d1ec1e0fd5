// The multi-token partition kernel's bookkeeping (spec ultraquant.md §5.9, DecodeQueriesLaunch):
// where a sequence's query tokens are, and which of the sequence's tokens each column of the
// MFMA N tiles sees. Row r = j * QG + g (column r % 16 of N tile r / 16) is query token j, query
// head h * QG + g (decode_args.hpp, kTileQueryRows); query token j of n sees the first visible_tokens(L, n, j)
// tokens (uq/core/sequence_rules.hpp, the rule every path shares).
#pragma once

#include "gfx950/decode_args.hpp"
#include "gfx950/decode_tile.hpp"
#include "gfx950/isa.hpp"
#include "uq/core/sequence_rules.hpp"

namespace uq::gfx950 {
namespace decode_detail {

// Sequence b's query tokens and length, wave-uniform: rows first .. first + n - 1 of q, out and
// lse; L (clamp_seq_len).
struct SequenceQueries {
  std::int32_t first;
  std::int32_t n;  // < 0: a malformed query_start_loc range
  std::int64_t len;
};

// The uniform form: b * query_len, query_len tokens. Else query_start_loc[b] and [b + 1], judged
// by malformed_start_range (with max_query_len): a malformed range is counted once per sequence
// by the workgroup that is `counting` (KV head 0, partition 0, as the generic kernel counts) and
// skipped, its length neither used nor counted (as generic). The two entries and seq_lens[b] are
// loaded together: one memory round trip, as the one-token kernel's length alone (the uniform
// form's entries come from a resource of 0 bytes: no memory traffic).
UQ_DEVICE inline SequenceQueries sequence_queries(const DecodeQueriesKernelArgs& a, std::uint32_t b, bool counting,
                                                  std::uint32_t lane) {
  const bool given = a.query_start_loc != nullptr;  // wave-uniform (an argument)
  const buffer_rsrc starts = make_buffer_rsrc(
      given ? a.query_start_loc + static_cast<std::int64_t>(b) * a.query_start_loc_stride : a.query_start_loc,
      given ? a.start_pair_bytes : 0u);
  const std::uint32_t s_raw = buffer_load_b32(starts, 0u);
  const std::uint32_t e_raw = buffer_load_b32(starts, a.start_pair_bytes - 4u);
  const std::uint32_t len_raw = buffer_load_b32(seq_len_rsrc(a, b), 0u);
  const std::int32_t s = static_cast<std::int32_t>(readfirstlane(s_raw));
  const std::int32_t e = static_cast<std::int32_t>(readfirstlane(e_raw));
  if (given && uq::impl::malformed_start_range<std::int32_t>(s, e, static_cast<std::int32_t>(b), a.num_seqs,
                                                              a.num_query_tokens, a.max_query_len)) {
    if (counting && lane == 0) atomic_add_u64(a.counters + kCounterBadStartLocs, 1ull);
    return SequenceQueries{0, -1, 0};
  }
  const std::int64_t len =
      clamp_seq_len(a, static_cast<std::int32_t>(readfirstlane(len_raw)), counting, lane);
  if (!given) return SequenceQueries{static_cast<std::int32_t>(b) * a.query_len, a.query_len, len};
  return SequenceQueries{s, e - s, len};
}

// The tokens the lane's column of N tile `tile` sees: visible_tokens(L, n, j) for its query token
// j, or -1 for a column past the n * QG in use (its row is zero, sees nothing and is never
// written).
template <int QG>
UQ_DEVICE inline std::int32_t column_tokens(std::int32_t len, std::int32_t n, std::uint32_t lane, int tile = 0) {
  const std::uint32_t row = static_cast<std::uint32_t>(kTileQueryRows * tile) + (lane & 15u);
  const std::int32_t j = static_cast<std::int32_t>(row / static_cast<std::uint32_t>(QG));
  return j < n ? uq::impl::visible_tokens<std::int32_t>(len, n, j) : -1;
}

// Of tile k's `valid` tokens, those a column that sees the first `row_tokens` tokens of the
// sequence sees (per lane). Counted from the tile's first position, never from `valid` alone:
// a column's masked tokens can span the last two tiles.
UQ_DEVICE inline std::uint32_t row_valid_tokens(const DecodeKernelArgs& a, std::int32_t p, std::int32_t k,
                                                std::uint32_t valid, std::int32_t row_tokens) {
  const std::int32_t first = static_cast<std::int32_t>(tile_first_token<std::uint32_t>(p, k, a.partitions));
  const std::int32_t seen = row_tokens - first;
  return seen <= 0 ? 0u : (static_cast<std::uint32_t>(seen) < valid ? static_cast<std::uint32_t>(seen) : valid);
}

// Whether partition p writes the non-finite state for the lane's row, as the generic kernel
// does (spec §5.9 allows NaN or the empty state where the partition sees none of the row's
// tokens): partition 0 always, another where it holds a token the row sees.
UQ_DEVICE inline bool holds_row(std::uint32_t p, std::int32_t row_tokens) {
  return p == 0 ||
         p < uq::impl::decode_tile_groups<std::uint32_t>(static_cast<std::uint32_t>(row_tokens > 0 ? row_tokens : 0));
}

}  // namespace decode_detail
}  // namespace uq::gfx950
