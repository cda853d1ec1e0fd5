// uq::write_index_keys: quantise index keys into the NVFP4 index cache (spec
// nvfp4-index.md §3): per group of 16, an E4M3 scale e4m3(A / 6) and 16 E2M1 codes.
#pragma once

#include "uq/backend.hpp"
#include "uq/error.hpp"
#include "uq/core/write_launch.hpp"
#include "uq/impl/checks.hpp"
#include "uq/impl/score_checks.hpp"
#include "uq/impl/status_counters.hpp"
#include "uq/impl/writer_core.hpp"
#include "uq/impl/write_index_keys_generic.hpp"
#include "uq/nvfp4.hpp"
#include "uq/types.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <limits>
#include <type_traits>

namespace uq {

struct IndexWriterConfig {
  Backend backend = Backend::Auto;  // Native: the host path on host spaces where built, else an error
  bool check = true;                // read the status counters back after the call, throw on bad data
};

// Holds the device status counters so repeated calls allocate nothing, and skips the
// host checks when a call's views are the last checked call's (same pointers, extents,
// strides; impl/writer_core.hpp). Not for concurrent use from several host threads.
// keys: [num_tokens, 128] bf16 or float, any layout (contiguous 16-byte aligned rows
// are read 16 bytes at a time, others element by element; on host execution spaces
// contiguous rows, aligned or not, take the vectorised host path, Path::HostSimd,
// impl/write_index_keys_host.hpp, bit-identical). slot_mapping: [num_tokens]
// int64 or int32, block * 128 + pos, negative = skip. index_cache: uint8 [num_blocks, 9216].
// Two tokens with the same slot in one call leave that slot undefined (its bytes may mix the
// two keys); nothing outside it is touched, nothing is accessed out of bounds.
//
// Launches: with check = false a call is exactly one kernel (any num_tokens; none when
// num_tokens = 0) and no host synchronisation. check = true adds a reset of the status
// counters before it (one fill), a copy of the counters to the host after it and a
// wait for that copy, then throws on bad data. The free functions below build a writer
// per call (counters allocated and reset): loops keep one.
template <class ExecSpace = Kokkos::DefaultExecutionSpace>
class IndexKeyWriter : public impl::WriterCore<ExecSpace, impl::IndexKeyWriteLaunch> {
  using Core = impl::WriterCore<ExecSpace, impl::IndexKeyWriteLaunch>;

 public:
  explicit IndexKeyWriter(const ExecSpace& exec = ExecSpace(), const IndexWriterConfig& cfg = {})
      : Core("uq::write_index_keys", exec, cfg.backend, cfg.check) {}

  template <class Keys, class Slots, class Cache>
  void run(const Keys& keys, const Slots& slot_mapping, const Cache& index_cache) const {
    static_assert(Kokkos::is_view<Keys>::value, "uq: every array argument must be a Kokkos::View");
    static_assert(std::is_same<typename Keys::non_const_value_type, bf16>::value ||
                      std::is_same<typename Keys::non_const_value_type, float>::value,
                  "uq::write_index_keys: keys must hold bf16 or float");
    using KeyType = typename Keys::non_const_value_type;
    static_assert(impl::ViewContract<ExecSpace, Keys, KeyType, 2>::ok, "");
    static_assert(impl::IndexViewContract<ExecSpace, Slots, 1, std::int64_t, std::int32_t>::ok, "");
    static_assert(impl::OutputViewContract<ExecSpace, Cache, std::uint8_t, 2>::ok, "");
    this->check_views([&] { check(keys, slot_mapping, index_cache); }, keys, slot_mapping, index_cache);
    using Counts = typename impl::StatusCounters<ExecSpace>::view_type;
    const impl::IndexKeyWriteLaunch launch = impl::index_key_write_launch(keys, slot_mapping, index_cache, this->counts());
    this->dispatch(launch, "keys/slot_mapping", [&] {
      impl::WriteIndexKeysGeneric<ExecSpace, Keys, Slots, Cache, Counts> kernel;
      kernel.keys = keys;
      kernel.slots = slot_mapping;
      kernel.cache = index_cache;
      kernel.counts = this->counts();
      kernel.num_tokens = static_cast<std::int64_t>(keys.extent(0));
      kernel.num_slots = static_cast<std::int64_t>(index_cache.extent(0)) * nvfp4::kBlockTokens;
      kernel.chunked = impl::wio::rows_are_chunked(keys);
      kernel.aligned_words = impl::wio::words_are_aligned(index_cache, 4);
      kernel.launch(this->exec());
    });
  }

 private:
  template <class Keys, class Slots, class Cache>
  static void check(const Keys& keys, const Slots& slot_mapping, const Cache& index_cache) {
    constexpr const char* fn = "uq::write_index_keys";
    impl::check_index_cache(fn, index_cache);
    const std::int64_t T = static_cast<std::int64_t>(keys.extent(0));
    impl::require_extent(fn, "keys", keys, 1, nvfp4::kHeadDim, "index head dim");
    impl::require_extent(fn, "slot_mapping", slot_mapping, 0, T, "num_tokens = keys.extent(0)");
    impl::require(T <= std::numeric_limits<int>::max(), fn, "keys", "extent(0) (num_tokens) <= 2^31 - 1",
                  T);
    impl::require_no_alias(fn, "index_cache", index_cache, "keys", keys);
    impl::require_no_alias(fn, "index_cache", index_cache, "slot_mapping", slot_mapping);
  }

};

template <class ExecSpace, class Keys, class Slots, class Cache,
          class = std::enable_if_t<Kokkos::is_execution_space<ExecSpace>::value>>
void write_index_keys(const ExecSpace& exec, const Keys& keys, const Slots& slot_mapping, const Cache& index_cache,
                      const IndexWriterConfig& cfg = {}) {
  IndexKeyWriter<ExecSpace>(exec, cfg).run(keys, slot_mapping, index_cache);
}

template <class Keys, class Slots, class Cache, class = std::enable_if_t<Kokkos::is_view<Keys>::value>>
void write_index_keys(const Keys& keys, const Slots& slot_mapping, const Cache& index_cache,
                      const IndexWriterConfig& cfg = {}) {
  write_index_keys(typename Cache::execution_space(), keys, slot_mapping, index_cache, cfg);
}

}  // namespace uq
