// Run-time checks of the NVFP4 index cache argument (spec nvfp4-index.md §2), shared
// by write_index_keys and score.
#pragma once

#include "uq/impl/checks.hpp"
#include "uq/nvfp4.hpp"

#include <cstdint>

namespace uq {
namespace impl {

inline constexpr int kMaxScoreColumns = 32;  // H * QL per request

// index_cache: uint8 [num_blocks, 9216], pages dense (the kernels address it as
// base + page * 9216 + offset). Returns num_blocks.
template <class CacheView>
std::int64_t check_index_cache(const char* function, const CacheView& cache) {
  require_extent(function, "index_cache", cache, 1, nvfp4::kPageBytes, "bytes per page");
  require_stride(function, "index_cache", cache, 1, 1, "page bytes contiguous");
  require_stride(function, "index_cache", cache, 0, nvfp4::kPageBytes, "pages dense");
  return static_cast<std::int64_t>(cache.extent(0));
}

}  // namespace impl
}  // namespace uq
