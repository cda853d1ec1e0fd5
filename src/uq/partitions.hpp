// Default split-K partition choice for decode (spec ultraquant.md §5): the original
// launcher's algorithm. It sizes for the worst case (the block table's width, not
// the live seq_lens) so the grid of a captured graph stays valid for every replay.
#pragma once

#include "uq/core/ultraquant_format.hpp"

#include <algorithm>
#include <cstdint>

namespace uq {

struct PartitionChoice {
  int partitions = 2;             // P: a power of two >= 2 by default
  int tile_groups_per_part = 1;   // TGPP: a power of two; P * TGPP * 256 covers W
};

inline std::int64_t next_pow2(std::int64_t x) {
  std::int64_t p = 1;
  while (p < x) p <<= 1;
  return p;
}

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// TGPP for a given P so that P * TGPP * 256 >= max_blocks_per_seq * block_size.
inline int tile_groups_per_partition(std::int64_t max_blocks_per_seq, int block_size, int partitions) {
  const std::int64_t required = ceil_div(max_blocks_per_seq * block_size, kTileGroupTokens);
  return static_cast<int>(next_pow2(std::max<std::int64_t>(1, ceil_div(required, partitions))));
}

// partitions_override > 0 forces P (TGPP follows); 0 takes the default.
inline PartitionChoice choose_partitions(std::int64_t num_seqs, std::int64_t max_blocks_per_seq,
                                         int block_size, int partitions_override = 0) {
  PartitionChoice c;
  if (partitions_override > 0) {
    c.partitions = partitions_override;
  } else {
    const std::int64_t W = max_blocks_per_seq * block_size;
    const std::int64_t required = ceil_div(W, kTileGroupTokens);
    const std::int64_t max_parts = num_seqs <= 8 ? 512 : 256;
    const std::int64_t floor_parts = std::min<std::int64_t>(max_parts, 32);
    std::int64_t actual = std::max(floor_parts, std::min(max_parts, required));
    actual = std::min(actual, std::max<std::int64_t>(1, ceil_div(W, 192)));
    c.partitions = static_cast<int>(std::max<std::int64_t>(2, next_pow2(actual)));
  }
  c.tile_groups_per_part = tile_groups_per_partition(max_blocks_per_seq, block_size, c.partitions);
  return c;
}

}  // namespace uq
