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

UQ_CORE_FN std::int64_t blocks_for_tokens(std::int64_t tokens) {
  return (tokens + nvfp4::kBlockTokens - 1) / nvfp4::kBlockTokens;
}

// Tokens query row r (of QL) may see: causal and inclusive, max(L - QL + r + 1, 0).
UQ_CORE_FN std::int64_t visible_tokens(std::int64_t L, int query_len, int r) {
  const std::int64_t v = L - query_len + r + 1;
  return v > 0 ? v : 0;
}

// How block b's score of one row is decided (spec §4), given the row's visible block
// count nb: invisible blocks are -inf, init wins over local, the rest need the
// computed maximum.
enum class BlockKind { Invisible, Init, Local, Computed };

UQ_CORE_FN BlockKind block_kind(std::int64_t b, std::int64_t nb, int init_blocks,
                                            int local_blocks) {
  if (b >= nb) return BlockKind::Invisible;
  if (b < init_blocks) return BlockKind::Init;
  if (b >= nb - local_blocks) return BlockKind::Local;
  return BlockKind::Computed;
}

}  // namespace impl
}  // namespace uq
