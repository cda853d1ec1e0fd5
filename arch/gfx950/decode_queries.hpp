// The multi-token partition kernel's bookkeeping (spec ultraquant.md §5.9, DecodeQueriesLaunch):
// where a sequence's query tokens are, and which of the sequence's tokens each column of the
// MFMA N tile sees. Column r = j * QG + g of the tile is query token j, query head h * QG + g
// (decode_args.hpp, kTileQueryRows); query token j of n sees the first visible_tokens(L, n, j)
// tokens (uq/core/sequence_rules.hpp, the rule every path shares).
#pragma once

#include "gfx950/decode_args.hpp"
#include "gfx950/decode_tile.hpp"
#include "gfx950/isa.hpp"
#include "uq/core/sequence_rules.hpp"

namespace uq::gfx950 {
namespace decode_detail {

// Sequence b's query tokens, wave-uniform: rows first .. first + n - 1 of q, out and lse.
struct SequenceQueries {
  std::int32_t first;
  std::int32_t n;  // < 0: a malformed query_start_loc range
};

// The uniform form: b * query_len, query_len tokens. Else query_start_loc[b] and [b + 1], judged
// by malformed_start_range (with max_query_len); a malformed range is counted once per sequence
// by the workgroup that `counting` (KV head 0, partition 0, as the generic kernel counts), and
// nothing else is read for it.
UQ_DEVICE inline SequenceQueries sequence_queries(const DecodeQueriesKernelArgs& a, std::uint32_t b, bool counting,
                                                  std::uint32_t lane) {
  if (a.query_start_loc == nullptr)  // wave-uniform (an argument)
    return SequenceQueries{static_cast<std::int32_t>(b) * a.query_len, a.query_len};
  const buffer_rsrc starts =
      make_buffer_rsrc(a.query_start_loc + static_cast<std::int64_t>(b) * a.query_start_loc_stride, a.start_pair_bytes);
  const std::int32_t s = static_cast<std::int32_t>(readfirstlane(buffer_load_b32(starts, 0u)));
  const std::int32_t e =
      static_cast<std::int32_t>(readfirstlane(buffer_load_b32(starts, a.start_pair_bytes - 4u)));
  if (uq::impl::malformed_start_range<std::int32_t>(s, e, static_cast<std::int32_t>(b), a.num_seqs,
                                                     a.num_query_tokens, a.max_query_len)) {
    if (counting && lane == 0) atomic_add_u64(a.counters + kCounterBadStartLocs, 1ull);
    return SequenceQueries{0, -1};
  }
  return SequenceQueries{s, e - s};
}

// The tokens the lane's column sees: visible_tokens(L, n, j) for its query token j, or -1 for a
// column past the n * QG in use (its row is zero, sees nothing and is never written).
template <int QG>
UQ_DEVICE inline std::int32_t column_tokens(std::int32_t len, std::int32_t n, std::uint32_t lane) {
  const std::int32_t j = static_cast<std::int32_t>((lane & 15u) / static_cast<std::uint32_t>(QG));
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
