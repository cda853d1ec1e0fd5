// The dequantising gather (spec ultraquant.md §7): the cached K (rotated, as stored) and V of
// each sequence's first n_b positions as bf16 rows, with §7's bad-data rules.
#include "uqref_formats.hpp"
#include "uqref_ultraquant.hpp"

#include <algorithm>

namespace uqref {
namespace {

constexpr int kDim = 256;

void store_bf16(const double* values, std::uint16_t* row) {
  // The values are FP4 x 2^k: exact in float wherever float holds them, so one rounding.
  for (int d = 0; d < kDim; ++d) row[d] = bf16_round(static_cast<float>(values[d]));
}

}  // namespace

GatherCounts uq_gather_kv(const GatherInputs& in, std::uint16_t* k, std::uint16_t* v) {
  GatherCounts counts;
  const std::int64_t capacity = static_cast<std::int64_t>(in.max_blocks_per_seq) * in.block_size;
  const std::int64_t row_elems = static_cast<std::int64_t>(in.num_kv_heads) * kDim;
  double values[kDim];
  for (int b = 0; b < in.num_seqs; ++b) {
    if (malformed_start_loc(in.kv_start_loc, in.num_seqs, b, in.num_tokens, 0)) {
      ++counts.bad_start_locs;
      continue;
    }
    const std::int64_t first = in.kv_start_loc[b];
    const std::int64_t n = in.kv_start_loc[b + 1] - first;
    if (n > capacity) ++counts.long_seq_lens;
    std::int64_t counted_block = -1;
    for (std::int64_t t = 0; t < n; ++t) {
      std::uint16_t* krow = k + (first + t) * row_elems;
      std::uint16_t* vrow = v + (first + t) * row_elems;
      const std::int32_t block =
          t < capacity ? in.block_tables[static_cast<std::int64_t>(b) * in.max_blocks_per_seq + t / in.block_size] : -1;
      if (t >= capacity || block < 0 || block >= in.num_blocks) {  // absent: zero rows
        if (t < capacity && t / in.block_size != counted_block) {
          ++counts.bad_block_ids;
          counted_block = t / in.block_size;
        }
        std::fill(krow, krow + row_elems, std::uint16_t{0});
        std::fill(vrow, vrow + row_elems, std::uint16_t{0});
        continue;
      }
      for (int h = 0; h < in.num_kv_heads; ++h) {
        const std::int64_t slot = (static_cast<std::int64_t>(block) * in.block_size + t % in.block_size) * in.num_kv_heads + h;
        const std::uint8_t* bytes = in.cache + slot * in.slot_bytes;
        uq_dequant_k(bytes, values);
        store_bf16(values, krow + h * kDim);
        uq_dequant_v(bytes, values);
        store_bf16(values, vrow + h * kDim);
      }
    }
  }
  return counts;
}

}  // namespace uqref
