// The per-row rules of the NVFP4 scorer and the block selection (spec nvfp4-index.md §4-§5):
// the request's table capacity (the length rule is core/sequence_rules.hpp), what each query row may see, and which of a row's
// blocks get a sentinel instead of a computed score. Pure integer functions, Kokkos-free, so
// the generic scorer, the selection and every tuned kernel share one definition.
#pragma once

#include "uq/core/host_device.hpp"
#include "uq/core/nvfp4_format.hpp"
#include "uq/core/sequence_rules.hpp"

#include <cstdint>

namespace uq {
namespace impl {

// The one clamp of the scorer and the selection: a request holds at most max_blocks * 128
// tokens, max_blocks being the width of the block table given to the scorer. Selection
// uses the same width, so it never reads a score entry that the scorer did not write.
UQ_CORE_FN RequestLength request_length_in_table(std::int64_t seq_len, std::int64_t max_blocks) {
  return request_length(seq_len, max_blocks * nvfp4::kBlockTokens);
}

// Each rule is one template on the integer type (a kernel may keep 32-bit registers: the
// gfx950 scorer does) with the 64-bit form the generic code calls.
template <class I>
UQ_CORE_FN constexpr I blocks_for_tokens_of(I tokens) {
  return (tokens + I(nvfp4::kBlockTokens) - I(1)) / I(nvfp4::kBlockTokens);
}
UQ_CORE_FN std::int64_t blocks_for_tokens(std::int64_t tokens) { return blocks_for_tokens_of<std::int64_t>(tokens); }

// Tokens query row r (of QL) may see: causal and inclusive, max(L - QL + r + 1, 0).
template <class I>
UQ_CORE_FN constexpr I visible_tokens_of(I L, I query_len, I r) {
  const I v = L - query_len + r + I(1);
  return v > I(0) ? v : I(0);
}
UQ_CORE_FN std::int64_t visible_tokens(std::int64_t L, int query_len, int r) {
  return visible_tokens_of<std::int64_t>(L, query_len, r);
}

// How block b's score of one row is decided (spec §4), given the row's visible block
// count nb: invisible blocks are -inf, init wins over local, the rest need the
// computed maximum.
enum class BlockKind { Invisible, Init, Local, Computed };

template <class I>
UQ_CORE_FN constexpr BlockKind block_kind_of(I b, I nb, I init_blocks, I local_blocks) {
  if (b >= nb) return BlockKind::Invisible;
  if (b < init_blocks) return BlockKind::Init;
  if (b >= nb - local_blocks) return BlockKind::Local;
  return BlockKind::Computed;
}
UQ_CORE_FN BlockKind block_kind(std::int64_t b, std::int64_t nb, int init_blocks, int local_blocks) {
  return block_kind_of<std::int64_t>(b, nb, init_blocks, local_blocks);
}

}  // namespace impl
}  // namespace uq
