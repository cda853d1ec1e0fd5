// Run-time checks of the UltraQuant cache argument shared by write_kv and decode
// (spec ultraquant.md §2): [num_blocks, block_size, num_kv_heads, slot_bytes] uint8,
// dense in the last three dimensions.
#pragma once

#include "uq/impl/checks.hpp"
#include "uq/ultraquant.hpp"

#include <cstdint>
#include <limits>

namespace uq {
namespace impl {

struct KvCacheGeometry {
  std::int64_t num_blocks = 0;
  int block_size = 0;
  int num_kv_heads = 0;
  int slot_bytes = 0;
};

template <class CacheView>
KvCacheGeometry check_kv_cache(const char* function, const CacheView& cache) {
  KvCacheGeometry g;
  g.num_blocks = static_cast<std::int64_t>(cache.extent(0));
  const std::int64_t bs = static_cast<std::int64_t>(cache.extent(1));
  const std::int64_t slot = static_cast<std::int64_t>(cache.extent(3));
  require(is_decode_block_size(bs), function, "kv_cache", "extent(1) (block_size) in {16, 32, 64, 128, 256}",
          bs);
  require(slot >= ultraquant::kSlotContent && slot % 4 == 0 && slot < (1 << 20), function, "kv_cache",
          "extent(3) (slot_bytes) >= 272 and a multiple of 4", slot);
  require(cache.extent(2) >= 1, function, "kv_cache", "extent(2) (num_kv_heads) >= 1", "0");
  require(cache.extent(2) <= static_cast<std::size_t>(std::numeric_limits<int>::max()), function, "kv_cache",
          "extent(2) (num_kv_heads) <= 2^31 - 1", static_cast<std::int64_t>(cache.extent(2)));
  g.block_size = static_cast<int>(bs);
  g.num_kv_heads = static_cast<int>(cache.extent(2));
  g.slot_bytes = static_cast<int>(slot);
  require_stride(function, "kv_cache", cache, 3, 1, "slot bytes contiguous");
  require_stride(function, "kv_cache", cache, 2, slot, "heads dense: slot_bytes");
  require_stride(function, "kv_cache", cache, 1, slot * g.num_kv_heads,
                 "positions dense: num_kv_heads * slot_bytes");
  if (g.num_blocks > 1) {
    const std::int64_t block_stride = static_cast<std::int64_t>(cache.stride(0));
    require(block_stride >= slot * g.num_kv_heads * bs, function, "kv_cache",
            "stride(0) >= block_size * num_kv_heads * slot_bytes (blocks do not overlap)",
            block_stride);
  }
  return g;
}

}  // namespace impl
}  // namespace uq
