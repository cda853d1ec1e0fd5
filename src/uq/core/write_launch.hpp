// The plain-C++ descriptions of the cache writers' launches: the seam's launch types for
// uq::write_kv and uq::write_index_keys (uq/impl/tuned_path.hpp), which a tuned writer takes
// (the index writer's host path does: uq/impl/host_simd_path.hpp), and their construction from
// the Kokkos views. No Kokkos, HIP or CUDA types: pointers are the execution space's, strides
// are in elements, `stream` is the space's native stream as void* (nullptr on hosts).
#pragma once

#include <cstdint>

namespace uq {
namespace impl {

// uq::write_kv's arguments (spec ultraquant.md §4).
struct KvWriteLaunch {
  static constexpr const char* kName = "KV cache writer";
  void* stream = nullptr;
  unsigned long long* counters = nullptr;  // uq::kNumCounters status counters

  // k, v: bf16 [num_tokens][num_kv_heads][256], any non-negative strides.
  const std::uint16_t* k = nullptr;
  const std::uint16_t* v = nullptr;
  std::int64_t k_stride[3] = {0, 0, 1}, v_stride[3] = {0, 0, 1};
  std::int64_t num_tokens = 0;

  // slot_mapping: int32 or int64 (slot_bytes 4 or 8) [num_tokens], negative = skip.
  const void* slots = nullptr;
  int slot_bytes = 8;
  std::int64_t slots_stride = 1;

  // kv_cache: uint8 [num_blocks][block_size][num_kv_heads][cache_slot_bytes], dense in the last
  // three dimensions; block_stride in bytes.
  std::uint8_t* cache = nullptr;
  std::int64_t num_blocks = 0, block_stride = 0;
  int block_size = 0, num_kv_heads = 0, cache_slot_bytes = 0;
};

// uq::write_index_keys' arguments (spec nvfp4-index.md §3).
struct IndexKeyWriteLaunch {
  static constexpr const char* kName = "index key writer";
  void* stream = nullptr;
  unsigned long long* counters = nullptr;

  // keys: bf16 (key_bytes 2) or float (4) [num_tokens][128], any non-negative strides.
  const void* keys = nullptr;
  int key_bytes = 2;
  std::int64_t key_stride_token = 0, key_stride_dim = 1;
  std::int64_t num_tokens = 0;

  const void* slots = nullptr;  // int32 or int64 (slot_bytes 4 or 8) [num_tokens], negative = skip
  int slot_bytes = 8;
  std::int64_t slots_stride = 1;

  // index_cache: uint8 [num_blocks][9216], pages dense.
  std::uint8_t* cache = nullptr;
  std::int64_t num_blocks = 0;
};

template <class K, class V, class Slots, class Cache, class Counters>
KvWriteLaunch kv_write_launch(const K& k, const V& v, const Slots& slots, const Cache& cache, const Counters& counters) {
  static_assert(sizeof(*k.data()) == 2 && sizeof(*v.data()) == 2, "bf16 views hold 16-bit values");
  static_assert(sizeof(*slots.data()) == 4 || sizeof(*slots.data()) == 8, "int32 or int64 slots");
  KvWriteLaunch l;
  l.counters = counters.data();
  l.k = reinterpret_cast<const std::uint16_t*>(k.data());
  l.v = reinterpret_cast<const std::uint16_t*>(v.data());
  for (int d = 0; d < 3; ++d) {
    l.k_stride[d] = static_cast<std::int64_t>(k.stride(d));
    l.v_stride[d] = static_cast<std::int64_t>(v.stride(d));
  }
  l.num_tokens = static_cast<std::int64_t>(k.extent(0));
  l.slots = slots.data();
  l.slot_bytes = static_cast<int>(sizeof(*slots.data()));
  l.slots_stride = static_cast<std::int64_t>(slots.stride(0));
  l.cache = reinterpret_cast<std::uint8_t*>(cache.data());
  l.num_blocks = static_cast<std::int64_t>(cache.extent(0));
  l.block_stride = static_cast<std::int64_t>(cache.stride(0));
  l.block_size = static_cast<int>(cache.extent(1));
  l.num_kv_heads = static_cast<int>(cache.extent(2));
  l.cache_slot_bytes = static_cast<int>(cache.extent(3));
  return l;
}

template <class Keys, class Slots, class Cache, class Counters>
IndexKeyWriteLaunch index_key_write_launch(const Keys& keys, const Slots& slots, const Cache& cache,
                                           const Counters& counters) {
  static_assert(sizeof(*keys.data()) == 2 || sizeof(*keys.data()) == 4, "bf16 or float keys");
  static_assert(sizeof(*slots.data()) == 4 || sizeof(*slots.data()) == 8, "int32 or int64 slots");
  IndexKeyWriteLaunch l;
  l.counters = counters.data();
  l.keys = keys.data();
  l.key_bytes = static_cast<int>(sizeof(*keys.data()));
  l.key_stride_token = static_cast<std::int64_t>(keys.stride(0));
  l.key_stride_dim = static_cast<std::int64_t>(keys.stride(1));
  l.num_tokens = static_cast<std::int64_t>(keys.extent(0));
  l.slots = slots.data();
  l.slot_bytes = static_cast<int>(sizeof(*slots.data()));
  l.slots_stride = static_cast<std::int64_t>(slots.stride(0));
  l.cache = reinterpret_cast<std::uint8_t*>(cache.data());
  l.num_blocks = static_cast<std::int64_t>(cache.extent(0));
  return l;
}

}  // namespace impl
}  // namespace uq
