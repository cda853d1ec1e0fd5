// The plain-C++ description of uq::gather_kv's launch (spec ultraquant.md §7): the seam's launch
// type for the dequantising gather (uq/impl/tuned_path.hpp; no tuned path implements it), and
// its construction from the Kokkos views. No Kokkos, HIP or CUDA types: pointers are the
// execution space's, strides are in elements, `stream` is the space's native stream as void*.
#pragma once

#include <cstdint>

namespace uq {
namespace impl {

struct KvGatherLaunch {
  static constexpr const char* kName = "KV cache gather";
  void* stream = nullptr;
  unsigned long long* counters = nullptr;  // uq::kNumCounters status counters

  // kv_cache: uint8 [num_blocks][block_size][num_kv_heads][slot_bytes], dense in the last three
  // dimensions; block_stride in bytes.
  const std::uint8_t* cache = nullptr;
  std::int64_t num_blocks = 0, block_stride = 0;
  int block_size = 0, num_kv_heads = 0, slot_bytes = 0;

  // block_tables: int32 [num_seqs][max_blocks_per_seq]; kv_start_loc: int32 [num_seqs + 1].
  const std::int32_t* block_tables = nullptr;
  std::int64_t table_stride_seq = 0, table_stride_block = 1;
  int max_blocks_per_seq = 0;
  const std::int32_t* kv_start_loc = nullptr;
  std::int64_t kv_start_loc_stride = 1;
  int num_seqs = 0;

  // k_out, v_out: bf16 [num_tokens][num_kv_heads][256], any non-negative strides.
  std::uint16_t* k_out = nullptr;
  std::uint16_t* v_out = nullptr;
  std::int64_t k_stride[3] = {0, 0, 1}, v_stride[3] = {0, 0, 1};
  std::int64_t num_tokens = 0;
};

template <class Cache, class Tables, class Starts, class K, class V, class Counters>
KvGatherLaunch kv_gather_launch(const Cache& cache, const Tables& tables, const Starts& starts, const K& k,
                                const V& v, const Counters& counters) {
  static_assert(sizeof(*k.data()) == 2 && sizeof(*v.data()) == 2, "bf16 views hold 16-bit values");
  KvGatherLaunch l;
  l.counters = counters.data();
  l.cache = reinterpret_cast<const std::uint8_t*>(cache.data());
  l.num_blocks = static_cast<std::int64_t>(cache.extent(0));
  l.block_size = static_cast<int>(cache.extent(1));
  l.num_kv_heads = static_cast<int>(cache.extent(2));
  l.slot_bytes = static_cast<int>(cache.extent(3));
  l.block_stride = static_cast<std::int64_t>(cache.stride(0));
  l.block_tables = tables.data();
  l.table_stride_seq = static_cast<std::int64_t>(tables.stride(0));
  l.table_stride_block = static_cast<std::int64_t>(tables.stride(1));
  l.max_blocks_per_seq = static_cast<int>(tables.extent(1));
  l.kv_start_loc = starts.data();
  l.kv_start_loc_stride = static_cast<std::int64_t>(starts.stride(0));
  l.num_seqs = static_cast<int>(tables.extent(0));
  l.k_out = reinterpret_cast<std::uint16_t*>(k.data());
  l.v_out = reinterpret_cast<std::uint16_t*>(v.data());
  for (int d = 0; d < 3; ++d) {
    l.k_stride[d] = static_cast<std::int64_t>(k.stride(d));
    l.v_stride[d] = static_cast<std::int64_t>(v.stride(d));
  }
  l.num_tokens = static_cast<std::int64_t>(k.extent(0));
  return l;
}

}  // namespace impl
}  // namespace uq
