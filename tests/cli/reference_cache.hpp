// Decode inputs for the CLI tests built with the reference (reference/, independent of the
// library and of write-kv): bf16 rounding, block tables over shuffled blocks, and a cache
// whose every slot the reference writer filled.
#pragma once

#include "cli/cli_test_support.hpp"

#include "uqref.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

namespace cli_test {

inline std::vector<std::uint16_t> bf16_bits(const std::vector<float>& v) {
  std::vector<std::uint16_t> b(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) b[i] = uqref::bf16_round(v[i]);
  return b;
}

// Block tables [B, max_blocks] for sequences of the given lengths over num_blocks blocks of
// block_size tokens, shuffled with `seed`: each sequence's first ceil(len / block_size)
// entries are distinct blocks, the rest 0.
inline std::vector<std::int32_t> shuffled_block_tables(const std::vector<std::int32_t>& lens, int num_blocks,
                                                       int block_size, int max_blocks, std::uint64_t seed) {
  std::vector<std::int32_t> ids(num_blocks);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), std::mt19937_64(seed));
  std::vector<std::int32_t> tables(lens.size() * max_blocks, 0);
  int next = 0;
  for (std::size_t b = 0; b < lens.size(); ++b) {
    const int used = (lens[b] + block_size - 1) / block_size;
    for (int j = 0; j < used; ++j) tables[b * max_blocks + j] = ids[next++];
  }
  return tables;
}

// A cache [num_blocks, block_size, Hk, slot_bytes] whose every slot (also of blocks no
// sequence uses) holds a token: K and V random_values with k_seed and v_seed, rounded to bf16.
inline std::vector<std::uint8_t> reference_filled_cache(int num_blocks, int block_size, int Hk, int slot_bytes,
                                                        std::uint64_t k_seed, std::uint64_t v_seed) {
  const int T = num_blocks * block_size;
  const std::vector<std::uint16_t> k = bf16_bits(random_values(std::size_t(T) * Hk * 256, k_seed));
  const std::vector<std::uint16_t> v = bf16_bits(random_values(std::size_t(T) * Hk * 256, v_seed));
  std::vector<std::int64_t> slots(T);
  std::iota(slots.begin(), slots.end(), 0);
  std::vector<std::uint8_t> cache(std::size_t(T) * Hk * slot_bytes, 0);
  uqref::uq_write_kv(k.data(), v.data(), slots.data(), T, Hk, cache.data(), num_blocks, block_size, slot_bytes);
  return cache;
}

}  // namespace cli_test
