// uq::gather_kv: the cached K (rotated, as stored) and V of given sequences' positions as bf16
// rows (spec ultraquant.md §7), for engines that run long extends through a prefill kernel: the
// inverse of uq::write_kv up to the format's rounding, exact against the cache.
#pragma once

#include "uq/backend.hpp"
#include "uq/core/gather_launch.hpp"
#include "uq/error.hpp"
#include "uq/impl/checks.hpp"
#include "uq/impl/decode_generic.hpp"
#include "uq/impl/gather_kv_generic.hpp"
#include "uq/impl/kv_cache_checks.hpp"
#include "uq/impl/start_locs.hpp"
#include "uq/impl/writer_core.hpp"
#include "uq/types.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <limits>
#include <type_traits>

namespace uq {

struct GatherKvConfig {
  Backend backend = Backend::Auto;  // Native: a tuned gather or an error (no path has one yet)
  bool check = true;  // read kv_start_loc on the host first and the status counters after; throw on bad data
};

// A reusable gather (its status counters allocated once; the host checks of the views skipped when
// a call's views are the last checked call's). Not for concurrent use from several host threads.
//
// kv_cache: uint8 [num_blocks, block_size, num_kv_heads, slot_bytes] (uq::write_kv's);
// block_tables: int32 [num_seqs, max_blocks_per_seq]; kv_start_loc: int32 [num_seqs + 1], 0,
// non-decreasing, ending at T (flash-attention's cu_seqlens_k): sequence b gives its positions
// 0 .. kv_start_loc[b + 1] - kv_start_loc[b] - 1, in order, to rows kv_start_loc[b] .. of k_out
// and v_out, bf16 [T, num_kv_heads, 256], any strides. Each element is bf16(FP4(code) x
// 2^(scale - 127)), +0 in a zero group; k_out holds K in the rotated basis, as stored (rotate
// queries alike, or apply uq::rotate_query's transform to k_out: it is its own inverse up to
// rounding). Positions in bad blocks or past the table's capacity give zero rows, counted
// (bad_block_ids, long_seq_lens); with check = true kv_start_loc is checked on the host before
// anything runs (uq::Error), with check = false a malformed range is skipped on the device and
// counted (bad_start_locs). One kernel launch; with check = false no host synchronisation.
template <class ExecSpace = Kokkos::DefaultExecutionSpace>
class KvGather : public impl::WriterCore<ExecSpace, impl::KvGatherLaunch> {
  using Core = impl::WriterCore<ExecSpace, impl::KvGatherLaunch>;

 public:
  explicit KvGather(const ExecSpace& exec = ExecSpace(), const GatherKvConfig& cfg = {})
      : Core("uq::gather_kv", exec, cfg.backend, cfg.check), check_(cfg.check) {}

  template <class Cache, class Tables, class Starts, class K, class V>
  void run(const Cache& kv_cache, const Tables& block_tables, const Starts& kv_start_loc, const K& k_out,
           const V& v_out) const {
    static_assert(impl::ViewContract<ExecSpace, Cache, std::uint8_t, 4>::ok, "");
    static_assert(impl::IndexViewContract<ExecSpace, Tables, 2, std::int32_t>::ok, "");
    static_assert(impl::IndexViewContract<ExecSpace, Starts, 1, std::int32_t>::ok, "");
    static_assert(impl::OutputViewContract<ExecSpace, K, bf16, 3>::ok, "");
    static_assert(impl::OutputViewContract<ExecSpace, V, bf16, 3>::ok, "");
    constexpr const char* fn = "uq::gather_kv";
    this->check_views([&] { check(kv_cache, block_tables, kv_start_loc, k_out, v_out); }, kv_cache, block_tables,
                      kv_start_loc, k_out, v_out);
    if (check_)
      impl::check_start_locs(fn, "kv_start_loc", impl::start_locs_on_host(this->exec(), kv_start_loc),
                             static_cast<std::int64_t>(k_out.extent(0)), "T = k_out.extent(0)", 0, "");
    using Counts = typename impl::StatusCounters<ExecSpace>::view_type;
    this->dispatch(impl::kv_gather_launch(kv_cache, block_tables, kv_start_loc, k_out, v_out, this->counts()),
                   "block_tables/kv_start_loc", [&] {
                     impl::GatherKvGeneric<ExecSpace, Tables, Starts, K, V, Counts> kernel;
                     kernel.cache = impl::cache_addressing(kv_cache);
                     kernel.block_tables = block_tables;
                     kernel.kv_start_loc = kv_start_loc;
                     kernel.k_out = k_out;
                     kernel.v_out = v_out;
                     kernel.counts = this->counts();
                     kernel.num_kv_heads = static_cast<int>(kv_cache.extent(2));
                     kernel.num_seqs = static_cast<int>(block_tables.extent(0));
                     kernel.num_tokens = static_cast<std::int64_t>(k_out.extent(0));
                     kernel.launch(this->exec());
                   });
  }

 private:
  template <class Cache, class Tables, class Starts, class K, class V>
  static void check(const Cache& kv_cache, const Tables& block_tables, const Starts& kv_start_loc, const K& k_out,
                    const V& v_out) {
    constexpr const char* fn = "uq::gather_kv";
    const impl::KvCacheGeometry geo = impl::check_kv_cache(fn, kv_cache);
    const std::int64_t num_seqs = static_cast<std::int64_t>(block_tables.extent(0));
    const std::int64_t T = static_cast<std::int64_t>(k_out.extent(0));
    impl::require(num_seqs < std::numeric_limits<int>::max(), fn, "block_tables", "extent(0) < 2^31 - 1", num_seqs);
    impl::require(block_tables.extent(1) <= static_cast<std::size_t>(std::numeric_limits<int>::max()), fn,
                  "block_tables", "extent(1) <= 2^31 - 1", static_cast<std::int64_t>(block_tables.extent(1)));
    impl::require_extent(fn, "kv_start_loc", kv_start_loc, 0, num_seqs + 1, "num_seqs + 1 = block_tables.extent(0) + 1");
    impl::require(T < std::numeric_limits<int>::max(), fn, "k_out", "extent(0) (T) < 2^31 - 1", T);
    impl::require_extent(fn, "k_out", k_out, 1, geo.num_kv_heads, "num_kv_heads = kv_cache.extent(2)");
    impl::require_extent(fn, "k_out", k_out, 2, ultraquant::kHeadDim, "head dim");
    for (int d = 0; d < 3; ++d)
      impl::require_extent(fn, "v_out", v_out, d, static_cast<std::int64_t>(k_out.extent(d)), "same shape as k_out");
    impl::require_no_alias(fn, "k_out", k_out, "v_out", v_out);
    for (const char* out : {"k_out", "v_out"}) {
      const bool k = out[0] == 'k';
      const auto check_one = [&](const auto& o) {
        impl::require_no_alias(fn, out, o, "kv_cache", kv_cache);
        impl::require_no_alias(fn, out, o, "block_tables", block_tables);
        impl::require_no_alias(fn, out, o, "kv_start_loc", kv_start_loc);
      };
      if (k) check_one(k_out); else check_one(v_out);
    }
  }

  bool check_;
};

template <class ExecSpace, class Cache, class Tables, class Starts, class K, class V,
          class = std::enable_if_t<Kokkos::is_execution_space<ExecSpace>::value>>
void gather_kv(const ExecSpace& exec, const Cache& kv_cache, const Tables& block_tables, const Starts& kv_start_loc,
               const K& k_out, const V& v_out, const GatherKvConfig& cfg = {}) {
  KvGather<ExecSpace>(exec, cfg).run(kv_cache, block_tables, kv_start_loc, k_out, v_out);
}

template <class Cache, class Tables, class Starts, class K, class V, class = std::enable_if_t<Kokkos::is_view<Cache>::value>>
void gather_kv(const Cache& kv_cache, const Tables& block_tables, const Starts& kv_start_loc, const K& k_out,
               const V& v_out, const GatherKvConfig& cfg = {}) {
  gather_kv(typename K::execution_space(), kv_cache, block_tables, kv_start_loc, k_out, v_out, cfg);
}

}  // namespace uq
