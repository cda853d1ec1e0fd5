// uq::write_kv: quantise K (rotated) and V into the UltraQuant MXFP4 cache
// (spec ultraquant.md §4).
#pragma once

#include "uq/backend.hpp"
#include "uq/error.hpp"
#include "uq/impl/checks.hpp"
#include "uq/core/write_launch.hpp"
#include "uq/impl/device_info.hpp"
#include "uq/impl/kv_cache_checks.hpp"
#include "uq/impl/status_counters.hpp"
#include "uq/impl/writer_core.hpp"
#include "uq/impl/write_kv_generic.hpp"
#include "uq/types.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <limits>
#include <type_traits>

namespace uq {

struct WriteKvConfig {
  Backend backend = Backend::Auto;  // Native: a tuned writer or an error (no path has one yet)
  bool check = true;                // read the status counters back after the call, throw on bad data
};

// Holds the device status counters so repeated calls allocate nothing, and skips the
// host checks when a call's views are the last checked call's (same pointers, extents,
// strides; impl/writer_core.hpp). Not for concurrent use from several host threads.
// k, v: [num_tokens, num_kv_heads, 256] bf16, any layout (rows that are contiguous and
// 16-byte aligned are read 16 bytes at a time, others element by element). slot_mapping:
// [num_tokens] int64 or int32, block * block_size + pos, negative = skip. kv_cache: uint8
// [num_blocks, block_size, num_kv_heads, slot_bytes], dense in the last three dims.
// Two tokens with the same slot in one call leave that slot undefined (its bytes may mix the
// two rows); nothing outside it is touched, nothing is accessed out of bounds.
//
// Launches: with check = false a call is exactly one kernel (any num_tokens; none when
// num_tokens = 0) and no host synchronisation, so it can be captured in a graph
// (times against an empty launch: docs/PERF.md, cache writers). check = true adds a reset of the
// status counters before it (one fill), a copy of the counters to the host after it and
// a wait for that copy (the host synchronises), then throws on bad data. The free
// functions below build a writer per call (counters allocated and reset): loops keep one.
template <class ExecSpace = Kokkos::DefaultExecutionSpace>
class KvWriter : public impl::WriterCore<ExecSpace, impl::KvWriteLaunch> {
  using Core = impl::WriterCore<ExecSpace, impl::KvWriteLaunch>;

 public:
  explicit KvWriter(const ExecSpace& exec = ExecSpace(), const WriteKvConfig& cfg = {})
      : Core("uq::write_kv", exec, cfg.backend, cfg.check) {}

  template <class K, class V, class Slots, class Cache>
  void run(const K& k, const V& v, const Slots& slot_mapping, const Cache& kv_cache) const {
    static_assert(impl::ViewContract<ExecSpace, K, bf16, 3>::ok, "");
    static_assert(impl::ViewContract<ExecSpace, V, bf16, 3>::ok, "");
    static_assert(impl::IndexViewContract<ExecSpace, Slots, 1, std::int64_t, std::int32_t>::ok, "");
    static_assert(impl::OutputViewContract<ExecSpace, Cache, std::uint8_t, 4>::ok, "");
    this->check_views([&] { check(k, v, slot_mapping, kv_cache); }, k, v, slot_mapping, kv_cache);
    using Counts = typename impl::StatusCounters<ExecSpace>::view_type;
    this->dispatch(impl::kv_write_launch(k, v, slot_mapping, kv_cache, this->counts()), "k/v/slot_mapping", [&] {
      const impl::WriteKvGeneric<ExecSpace, K, V, Slots, Cache, Counts> kernel(k, v, slot_mapping, kv_cache,
                                                                              this->counts());
      kernel.launch(this->exec());
    });
  }

 private:
  template <class K, class V, class Slots, class Cache>
  static void check(const K& k, const V& v, const Slots& slot_mapping, const Cache& kv_cache) {
    constexpr const char* fn = "uq::write_kv";
    const impl::KvCacheGeometry geo = impl::check_kv_cache(fn, kv_cache);
    const std::int64_t T = static_cast<std::int64_t>(k.extent(0));
    impl::require_extent(fn, "k", k, 2, ultraquant::kHeadDim, "head dim");
    impl::require_extent(fn, "k", k, 1, geo.num_kv_heads, "num_kv_heads = kv_cache.extent(2)");
    for (int d = 0; d < 3; ++d)
      impl::require_extent(fn, "v", v, d, static_cast<std::int64_t>(k.extent(d)), "same shape as k");
    impl::require_extent(fn, "slot_mapping", slot_mapping, 0, T, "num_tokens = k.extent(0)");
    impl::require(T * geo.num_kv_heads * 2 <= std::numeric_limits<int>::max(), fn, "k",
                  "num_tokens * num_kv_heads * 2 <= 2^31 - 1", T * geo.num_kv_heads * 2);
    impl::require_no_alias(fn, "kv_cache", kv_cache, "k", k);
    impl::require_no_alias(fn, "kv_cache", kv_cache, "v", v);
    impl::require_no_alias(fn, "kv_cache", kv_cache, "slot_mapping", slot_mapping);
  }

};

template <class ExecSpace, class K, class V, class Slots, class Cache,
          class = std::enable_if_t<Kokkos::is_execution_space<ExecSpace>::value>>
void write_kv(const ExecSpace& exec, const K& k, const V& v, const Slots& slot_mapping,
              const Cache& kv_cache, const WriteKvConfig& cfg = {}) {
  KvWriter<ExecSpace>(exec, cfg).run(k, v, slot_mapping, kv_cache);
}

template <class K, class V, class Slots, class Cache,
          class = std::enable_if_t<Kokkos::is_view<K>::value>>
void write_kv(const K& k, const V& v, const Slots& slot_mapping, const Cache& kv_cache,
              const WriteKvConfig& cfg = {}) {
  write_kv(typename Cache::execution_space(), k, v, slot_mapping, kv_cache, cfg);
}

}  // namespace uq
