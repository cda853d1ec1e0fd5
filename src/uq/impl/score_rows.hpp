// The stored score of a block (spec nvfp4-index.md §4). The rules it applies (request length,
// visible tokens, block kinds) are the Kokkos-free core's (uq/core/nvfp4_rules.hpp), shared
// with every tuned kernel.
#pragma once

#include "uq/core/nvfp4_rules.hpp"
#include "uq/nvfp4.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace uq {
namespace impl {

// The stored score of a block of kind k whose computed maximum is raw.
KOKKOS_INLINE_FUNCTION float block_score(BlockKind k, float raw) {
  switch (k) {
    case BlockKind::Invisible: return -codec::infinity();
    case BlockKind::Init: return nvfp4::kInitScore;
    case BlockKind::Local: return nvfp4::kLocalScore;
    case BlockKind::Computed: break;
  }
  return raw;
}

}  // namespace impl
}  // namespace uq
