// uq::decode: paged split-K decode attention over the UltraQuant MXFP4 cache
// (spec ultraquant.md §5), and uq::DecodePlan, its reusable workspace.
#pragma once

#include "uq/backend.hpp"
#include "uq/error.hpp"
#include "uq/impl/checks.hpp"
#include "uq/impl/decode_generic.hpp"
#include "uq/impl/decode_spec.hpp"
#include "uq/impl/device_info.hpp"
#include "uq/impl/kv_cache_checks.hpp"
#include "uq/impl/reduce_generic.hpp"
#include "uq/impl/status_counters.hpp"
#include "uq/partitions.hpp"
#include "uq/types.hpp"

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

namespace uq {

struct DecodeConfig {
  float softmax_scale = 1.0f / 16.0f;  // 1/sqrt(256)
  int qg = 0;                          // query heads per KV head: 6, 8 or 16; 0 = num_q_heads / num_kv_heads
  bool q_rotated = false;              // q already holds WHT(q) (natural order): only E4M3 rounding applied
  int partitions = 0;                  // 0 = the spec's default choice; else P in [1, 4096]
  Backend backend = Backend::Auto;
  bool check = true;                   // read the status counters after the call; throw on bad data
};

// What a plan is sized for. num_seqs of a run may be anything up to max_seqs; the
// other values must match the run's arguments exactly.
struct DecodeShape {
  int max_seqs = 0;
  int num_kv_heads = 0;
  int qg = 0;                  // 6, 8 or 16
  int block_size = 0;          // 16, 32, 64, 128 or 256
  int max_blocks_per_seq = 0;  // block_tables.extent(1)
};

inline constexpr int kMaxPartitions = 4096;

// Workspace for decode: partial outputs, their l and m, and the status counters,
// allocated once. run() allocates nothing, does not synchronise when check = false,
// and always launches the same grid for a given num_seqs, so it can be captured in a
// CUDA/HIP graph and replayed. Counters accumulate across runs with check = false
// (read them with status(), clear them with reset_status()).
// Concurrency: the workspace is shared by every run of the plan, so runs must be ordered (one
// stream, or synchronised); use one plan per stream for concurrent work. Plans are not
// thread-safe. A captured graph fixes num_seqs = q.extent(0): pad with seq_len 0.
template <class ExecSpace = Kokkos::DefaultExecutionSpace>
class DecodePlan {
 public:
  using memory_space = typename ExecSpace::memory_space;

  DecodePlan(const ExecSpace& exec, const DecodeShape& shape, const DecodeConfig& cfg = {})
      : exec_(exec), shape_(shape), cfg_(cfg), device_(impl::device_info(exec)) {
    constexpr const char* fn = "uq::decode";
    using impl::require;
    using impl::str;
    require(shape.max_seqs >= 0, fn, "shape.max_seqs", ">= 0", str(shape.max_seqs));
    require(shape.num_kv_heads >= 1, fn, "shape.num_kv_heads", ">= 1", str(shape.num_kv_heads));
    require(shape.qg == 6 || shape.qg == 8 || shape.qg == 16, fn, "shape.qg", "6, 8 or 16", str(shape.qg));
    require(impl::valid_block_size(shape.block_size), fn, "shape.block_size", "16, 32, 64, 128 or 256",
            str(shape.block_size));
    require(shape.max_blocks_per_seq >= 0, fn, "shape.max_blocks_per_seq", ">= 0",
            str(shape.max_blocks_per_seq));
    require(std::isfinite(cfg.softmax_scale), fn, "config.softmax_scale", "a finite number",
            std::to_string(cfg.softmax_scale));
    require(cfg.partitions >= 0 && cfg.partitions <= kMaxPartitions, fn, "config.partitions",
            "0 (default) or 1.." + str(kMaxPartitions), str(cfg.partitions));
    require(cfg.qg == 0 || cfg.qg == shape.qg, fn, "config.qg", "0 or shape.qg = " + str(shape.qg),
            str(cfg.qg));

    choice_ = choose_partitions(shape.max_seqs, shape.max_blocks_per_seq, shape.block_size, cfg.partitions);
    const std::int64_t rows =
        static_cast<std::int64_t>(shape.max_seqs) * shape.num_kv_heads * choice_.partitions * shape.qg;
    require(static_cast<std::int64_t>(shape.max_seqs) * shape.num_kv_heads * choice_.partitions <=
                std::numeric_limits<int>::max(),
            fn, "shape", "max_seqs * num_kv_heads * partitions <= 2^31 - 1", str(rows / shape.qg));
    path_ = select_path("uq::decode", device_, cfg.backend, true, impl::built_paths());

    partials_.out = decltype(partials_.out)(Kokkos::view_alloc(Kokkos::WithoutInitializing, "uq::decode::partial_out"),
                                            rows * kHeadDim);
    partials_.l = decltype(partials_.l)(Kokkos::view_alloc(Kokkos::WithoutInitializing, "uq::decode::partial_l"), rows);
    partials_.m = decltype(partials_.m)(Kokkos::view_alloc(Kokkos::WithoutInitializing, "uq::decode::partial_m"), rows);
    counters_ = impl::StatusCounters<ExecSpace>(exec);
  }

  // q: [num_seqs, num_kv_heads * qg, 256] bf16, any strides. kv_cache: uint8
  // [num_blocks, block_size, num_kv_heads, slot_bytes]. block_tables: int32
  // [num_seqs, max_blocks_per_seq]. seq_lens: int32 [num_seqs]. out: like q.
  template <class Q, class Cache, class Tables, class Lens, class Out>
  void run(const Q& q, const Cache& kv_cache, const Tables& block_tables, const Lens& seq_lens,
           const Out& out) const {
    constexpr const char* fn = "uq::decode";
    check_inputs(q, kv_cache, block_tables, seq_lens);
    check_output(static_cast<int>(q.extent(0)), out);
    impl::require_no_alias(fn, "out", out, "q", q);
    impl::require_no_alias(fn, "out", out, "kv_cache", kv_cache);
    impl::require_no_alias(fn, "out", out, "block_tables", block_tables);
    impl::require_no_alias(fn, "out", out, "seq_lens", seq_lens);
    if (cfg_.check) counters_.reset(exec_);
    launch_partitions(q, kv_cache, block_tables, seq_lens);
    launch_reduce(static_cast<int>(q.extent(0)), out);
    if (cfg_.check) throw_if_bad(fn, "block_tables/seq_lens", counters_.read(exec_));
  }

  // The two stages separately (benchmarks and tests). run_partitions writes the
  // partial outputs of num_seqs = q.extent(0) sequences; run_reduce combines them.
  template <class Q, class Cache, class Tables, class Lens>
  void run_partitions(const Q& q, const Cache& kv_cache, const Tables& block_tables, const Lens& seq_lens) const {
    check_inputs(q, kv_cache, block_tables, seq_lens);
    launch_partitions(q, kv_cache, block_tables, seq_lens);
  }

  template <class Out>
  void run_reduce(int num_seqs, const Out& out) const {
    check_output(num_seqs, out);
    launch_reduce(num_seqs, out);
  }

  Path path() const { return path_; }
  const DeviceInfo& device() const { return device_; }
  int partitions() const { return choice_.partitions; }
  int tile_groups_per_partition() const { return choice_.tile_groups_per_part; }
  const DecodeShape& shape() const { return shape_; }
  const DecodeConfig& config() const { return cfg_; }
  const impl::DecodePartials<memory_space>& partials() const { return partials_; }

  Status status() const { return counters_.read(exec_); }
  void reset_status() const { counters_.reset(exec_); }

 private:
  template <class Q, class Cache, class Tables, class Lens>
  void check_inputs(const Q& q, const Cache& kv_cache, const Tables& block_tables, const Lens& seq_lens) const {
    static_assert(impl::ViewContract<ExecSpace, Q, bf16, 3>::ok, "");
    static_assert(impl::ViewContract<ExecSpace, Cache, std::uint8_t, 4>::ok, "");
    static_assert(impl::IndexViewContract<ExecSpace, Tables, 2, std::int32_t>::ok, "");
    static_assert(impl::IndexViewContract<ExecSpace, Lens, 1, std::int32_t>::ok, "");
    constexpr const char* fn = "uq::decode";
    using impl::require;
    using impl::str;
    impl::require_extent(fn, "q", q, 2, kHeadDim, "head dim");
    const impl::KvCacheGeometry geo = impl::check_kv_cache(fn, kv_cache);
    const std::int64_t num_seqs = static_cast<std::int64_t>(q.extent(0));
    require(num_seqs <= shape_.max_seqs, fn, "q", "extent(0) (num_seqs) <= the plan's max_seqs = " + str(shape_.max_seqs),
            str(num_seqs));
    require(geo.num_kv_heads == shape_.num_kv_heads, fn, "kv_cache",
            "extent(2) (num_kv_heads) == " + str(shape_.num_kv_heads), str(geo.num_kv_heads));
    require(geo.block_size == shape_.block_size, fn, "kv_cache",
            "extent(1) (block_size) == " + str(shape_.block_size), str(geo.block_size));
    impl::require_extent(fn, "q", q, 1, static_cast<std::int64_t>(shape_.num_kv_heads) * shape_.qg,
                         "num_q_heads = num_kv_heads * qg");
    impl::require_extent(fn, "block_tables", block_tables, 0, num_seqs, "num_seqs = q.extent(0)");
    impl::require_extent(fn, "block_tables", block_tables, 1, shape_.max_blocks_per_seq,
                         "max_blocks_per_seq of the plan");
    impl::require_extent(fn, "seq_lens", seq_lens, 0, num_seqs, "num_seqs = q.extent(0)");
  }

  template <class Q, class Cache, class Tables, class Lens>
  void launch_partitions(const Q& q, const Cache& kv_cache, const Tables& block_tables, const Lens& seq_lens) const {
    impl::DecodeSpec<ExecSpace>::partitions(path_, exec_, q, impl::cache_addressing(kv_cache), block_tables,
                                            seq_lens, partials_, counters_.view(), params(),
                                            static_cast<int>(q.extent(0)));
  }

  template <class Out>
  void check_output(int num_seqs, const Out& out) const {
    static_assert(impl::OutputViewContract<ExecSpace, Out, bf16, 3>::ok, "");
    constexpr const char* fn = "uq::decode";
    impl::require(num_seqs >= 0 && num_seqs <= shape_.max_seqs, fn, "num_seqs",
                  "0.." + impl::str(shape_.max_seqs), impl::str(num_seqs));
    impl::require_extent(fn, "out", out, 0, num_seqs, "num_seqs");
    impl::require_extent(fn, "out", out, 1, static_cast<std::int64_t>(shape_.num_kv_heads) * shape_.qg,
                         "num_q_heads = num_kv_heads * qg");
    impl::require_extent(fn, "out", out, 2, kHeadDim, "head dim");
  }

  template <class Out>
  void launch_reduce(int num_seqs, const Out& out) const {
    impl::DecodeSpec<ExecSpace>::reduce(path_, exec_, partials_, out, params(), num_seqs);
  }

  impl::DecodeParams params() const {
    impl::DecodeParams p;
    p.num_kv_heads = shape_.num_kv_heads;
    p.qg = shape_.qg;
    p.max_blocks_per_seq = shape_.max_blocks_per_seq;
    p.partitions = choice_.partitions;
    p.tgpp = choice_.tile_groups_per_part;
    p.scale = cfg_.softmax_scale;
    p.q_rotated = cfg_.q_rotated;
    return p;
  }

  ExecSpace exec_;
  DecodeShape shape_;
  DecodeConfig cfg_;
  DeviceInfo device_;
  PartitionChoice choice_;
  Path path_ = Path::Generic;
  impl::DecodePartials<memory_space> partials_;
  impl::StatusCounters<ExecSpace> counters_;
};

// The shape a plan needs for these arguments (qg from config or num_q_heads / num_kv_heads).
template <class Q, class Cache, class Tables>
DecodeShape decode_shape_of(const Q& q, const Cache& kv_cache, const Tables& block_tables,
                            const DecodeConfig& cfg) {
  constexpr const char* fn = "uq::decode";
  const impl::KvCacheGeometry geo = impl::check_kv_cache(fn, kv_cache);
  DecodeShape s;
  s.max_seqs = static_cast<int>(q.extent(0));
  s.num_kv_heads = geo.num_kv_heads;
  const std::int64_t hq = static_cast<std::int64_t>(q.extent(1));
  if (cfg.qg != 0) {
    s.qg = cfg.qg;
  } else {
    impl::require(hq % s.num_kv_heads == 0, fn, "q",
                  "extent(1) (num_q_heads) a multiple of num_kv_heads = " + impl::str(s.num_kv_heads),
                  impl::str(hq));
    s.qg = static_cast<int>(hq / s.num_kv_heads);
    impl::require(s.qg == 6 || s.qg == 8 || s.qg == 16, fn, "q",
                  "extent(1) / num_kv_heads (the query group size) in {6, 8, 16}", impl::str(s.qg));
  }
  s.block_size = static_cast<int>(kv_cache.extent(1));
  s.max_blocks_per_seq = static_cast<int>(block_tables.extent(1));
  impl::require(q.extent(0) <= static_cast<std::size_t>(std::numeric_limits<int>::max()), fn, "q",
                "extent(0) <= 2^31 - 1", impl::str(static_cast<std::int64_t>(q.extent(0))));
  return s;
}

template <class ExecSpace, class Q, class Cache, class Tables, class Lens, class Out,
          class = std::enable_if_t<Kokkos::is_execution_space<ExecSpace>::value>>
void decode(const ExecSpace& exec, const Q& q, const Cache& kv_cache, const Tables& block_tables,
            const Lens& seq_lens, const Out& out, const DecodeConfig& cfg = {}) {
  DecodePlan<ExecSpace>(exec, decode_shape_of(q, kv_cache, block_tables, cfg), cfg)
      .run(q, kv_cache, block_tables, seq_lens, out);
}

template <class Q, class Cache, class Tables, class Lens, class Out,
          class = std::enable_if_t<Kokkos::is_view<Q>::value>>
void decode(const Q& q, const Cache& kv_cache, const Tables& block_tables, const Lens& seq_lens,
            const Out& out, const DecodeConfig& cfg = {}) {
  decode(typename Out::execution_space(), q, kv_cache, block_tables, seq_lens, out, cfg);
}

}  // namespace uq
