// uq::score: per request, query row and index head, the maximum q.k̂ over each
// 128-token block of the NVFP4 index cache, causal for multi-token queries, with the
// init / local / invisible sentinels (spec nvfp4-index.md §4); and uq::ScorePlan, its
// reusable form.
#pragma once

#include "uq/backend.hpp"
#include "uq/error.hpp"
#include "uq/impl/checks.hpp"
#include "uq/impl/device_info.hpp"
#include "uq/impl/score_checks.hpp"
#include "uq/impl/score_dispatch.hpp"
#include "uq/impl/score_table.hpp"
#include "uq/impl/status_counters.hpp"
#include "uq/nvfp4.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <limits>
#include <type_traits>

namespace uq {

struct ScoreConfig {
  int query_len = 1;     // QL: query rows per request (the request's last QL tokens)
  int init_blocks = 0;   // leading blocks every row keeps (score 1e30)
  int local_blocks = 0;  // trailing visible blocks every row keeps (score 1e29)
  Backend backend = Backend::Auto;
  bool check = true;     // read the status counters after the call; throw on bad data
};

// What a plan is sized for. The number of requests of a run may be anything up to
// max_reqs; the other values must match the run's arguments exactly.
struct ScoreShape {
  int max_reqs = 0;
  int query_len = 1;   // QL >= 1, equal to config.query_len
  int heads = 1;       // H: 1, 2 or 4; H * QL <= 32
  int max_blocks = 0;  // block_tables.extent(1)
};

// Holds the format's dequantisation table on the device and the status counters.
// run() allocates nothing and, with check = false, does not synchronise, so it can be
// captured in a CUDA/HIP graph; counters then accumulate across runs (status(),
// reset_status()). Runs of one plan share its counters: order them (one stream, or
// synchronised), one plan per stream for concurrent work; plans are not thread-safe. A
// captured graph fixes num_reqs = seq_lens.extent(0): pad with seq_len 0.
template <class ExecSpace = Kokkos::DefaultExecutionSpace>
class ScorePlan {
 public:
  ScorePlan(const ExecSpace& exec, const ScoreShape& shape, const ScoreConfig& cfg = {})
      : exec_(exec), shape_(shape), cfg_(cfg), device_(impl::device_info(exec)) {
    constexpr const char* fn = "uq::ScorePlan";
    using impl::require;
    using impl::str;
    require(shape.max_reqs >= 0, fn, "shape.max_reqs", ">= 0", str(shape.max_reqs));
    require(shape.heads == 1 || shape.heads == 2 || shape.heads == 4, fn, "shape.heads", "1, 2 or 4",
            str(shape.heads));
    require(shape.query_len >= 1, fn, "shape.query_len", ">= 1", str(shape.query_len));
    require(static_cast<std::int64_t>(shape.heads) * shape.query_len <= impl::kMaxScoreColumns, fn,
            "shape.query_len", "heads * query_len <= 32 (heads = " + str(shape.heads) + ")",
            str(shape.query_len));
    require(shape.max_blocks >= 0, fn, "shape.max_blocks", ">= 0", str(shape.max_blocks));
    require(cfg.query_len == shape.query_len, fn, "config.query_len",
            "equal to shape.query_len = " + str(shape.query_len), str(cfg.query_len));
    require(cfg.init_blocks >= 0, fn, "config.init_blocks", ">= 0", str(cfg.init_blocks));
    require(cfg.local_blocks >= 0, fn, "config.local_blocks", ">= 0", str(cfg.local_blocks));
    const std::int64_t league = static_cast<std::int64_t>(shape.max_reqs) *
                                ((shape.max_blocks + kBlocksPerTeam - 1) / kBlocksPerTeam);
    require(league <= std::numeric_limits<int>::max(), fn, "shape",
            "max_reqs * ceil(max_blocks / " + str(kBlocksPerTeam) + ") <= 2^31 - 1", str(league));
    // The device's candidate (Native without one throws here); each run then asks the tuned
    // launcher whether it can take that run's arguments.
    candidate_ = choice_ = impl::ScoreDispatch<ExecSpace>::Call::candidate("uq::score", cfg.backend, device_);
    table_ = impl::DequantTable<ExecSpace>(exec);
    counters_ = impl::StatusCounters<ExecSpace>(exec);
  }

  // q: [num_reqs * QL, H, 128] uint8 E4M3 bits, any strides (row req * QL + r is the
  // r-th of the request's last QL tokens). index_cache: uint8 [num_blocks, 9216].
  // block_tables: int32 [num_reqs, max_blocks]. seq_lens: int32 [num_reqs], total KV
  // length including the query tokens. scores: float [H, num_reqs * QL, S], any
  // strides, S >= max_blocks; entries of blocks past a request's length are not written.
  template <class Q, class Cache, class Tables, class Lens, class Out>
  void run(const Q& q, const Cache& index_cache, const Tables& block_tables, const Lens& seq_lens,
           const Out& scores) const {
    static_assert(impl::ViewContract<ExecSpace, Q, std::uint8_t, 3>::ok, "");
    static_assert(impl::ViewContract<ExecSpace, Cache, std::uint8_t, 2>::ok, "");
    static_assert(impl::IndexViewContract<ExecSpace, Tables, 2, std::int32_t>::ok, "");
    static_assert(impl::IndexViewContract<ExecSpace, Lens, 1, std::int32_t>::ok, "");
    static_assert(impl::OutputViewContract<ExecSpace, Out, float, 3>::ok, "");
    constexpr const char* fn = "uq::score";
    using impl::require;
    using impl::require_extent;
    using impl::str;

    impl::check_index_cache(fn, index_cache);
    const std::int64_t R = static_cast<std::int64_t>(seq_lens.extent(0));
    const std::int64_t QL = shape_.query_len;
    require(R <= shape_.max_reqs, fn, "seq_lens", "extent(0) (num_reqs) <= the plan's max_reqs = " +
            str(shape_.max_reqs), str(R));
    require_extent(fn, "q", q, 0, R * QL, "num_reqs * query_len");
    require_extent(fn, "q", q, 1, shape_.heads, "heads");
    require_extent(fn, "q", q, 2, nvfp4::kHeadDim, "index head dim");
    require_extent(fn, "block_tables", block_tables, 0, R, "num_reqs = seq_lens.extent(0)");
    require_extent(fn, "block_tables", block_tables, 1, shape_.max_blocks, "max_blocks of the plan");
    require_extent(fn, "scores", scores, 0, shape_.heads, "heads");
    require_extent(fn, "scores", scores, 1, R * QL, "num_reqs * query_len");
    require(static_cast<std::int64_t>(scores.extent(2)) >= shape_.max_blocks, fn, "scores",
            "extent(2) (S) >= max_blocks = " + str(shape_.max_blocks),
            str(static_cast<std::int64_t>(scores.extent(2))));
    impl::require_no_alias(fn, "scores", scores, "q", q);
    impl::require_no_alias(fn, "scores", scores, "index_cache", index_cache);
    impl::require_no_alias(fn, "scores", scores, "block_tables", block_tables);
    impl::require_no_alias(fn, "scores", scores, "seq_lens", seq_lens);

    if (cfg_.check) counters_.reset(exec_);
    impl::ScoreParams p;
    p.query_len = shape_.query_len;
    p.heads = shape_.heads;
    p.init_blocks = cfg_.init_blocks;
    p.local_blocks = cfg_.local_blocks;
    p.max_blocks = shape_.max_blocks;
    p.blocks_per_team = kBlocksPerTeam;
    impl::ScoreDispatch<ExecSpace>::run(exec_, candidate_, cfg_.backend, choice_, q,
                                        impl::index_cache_addressing(index_cache), block_tables, seq_lens, scores,
                                        table_.view(), counters_.view(), p, R, device_.compute_units);
    if (cfg_.check) throw_if_bad(fn, "block_tables/seq_lens", counters_.read(exec_));
  }

  // The path of the last run (before any run: the device's candidate), and why it is not the
  // tuned path ("" when it is).
  Path path() const { return choice_.path; }
  const std::string& path_reason() const { return choice_.reason; }
  const DeviceInfo& device() const { return device_; }
  const ScoreShape& shape() const { return shape_; }
  const ScoreConfig& config() const { return cfg_; }

  Status status() const { return counters_.read(exec_); }
  void reset_status() const { counters_.reset(exec_); }

 private:
  static constexpr int kBlocksPerTeam = 4;

  ExecSpace exec_;
  ScoreShape shape_;
  ScoreConfig cfg_;
  DeviceInfo device_;
  PathChoice candidate_;       // the device's tuned path (or Generic) and why
  mutable PathChoice choice_;  // of the last run
  impl::DequantTable<ExecSpace> table_;
  impl::StatusCounters<ExecSpace> counters_;
};

// The shape a plan needs for these arguments (heads from q, query_len from config);
// checks the configuration under the convenience function's name.
template <class Q, class Tables, class Lens>
ScoreShape score_shape_of(const Q& q, const Tables& block_tables, const Lens& seq_lens, const ScoreConfig& cfg) {
  constexpr const char* fn = "uq::score";
  using impl::require;
  using impl::str;
  const std::int64_t heads = static_cast<std::int64_t>(q.extent(1));
  require(heads == 1 || heads == 2 || heads == 4, fn, "q", "extent(1) (heads) in {1, 2, 4}", str(heads));
  require(cfg.query_len >= 1, fn, "config.query_len", ">= 1", str(cfg.query_len));
  require(heads * cfg.query_len <= impl::kMaxScoreColumns, fn, "config.query_len",
          "heads * query_len <= 32 (heads = " + str(heads) + ")", str(cfg.query_len));
  require(cfg.init_blocks >= 0, fn, "config.init_blocks", ">= 0", str(cfg.init_blocks));
  require(cfg.local_blocks >= 0, fn, "config.local_blocks", ">= 0", str(cfg.local_blocks));
  const std::int64_t R = static_cast<std::int64_t>(seq_lens.extent(0));
  const std::int64_t MB = static_cast<std::int64_t>(block_tables.extent(1));
  require(R <= std::numeric_limits<int>::max(), fn, "seq_lens", "extent(0) <= 2^31 - 1", str(R));
  require(MB <= std::numeric_limits<int>::max(), fn, "block_tables", "extent(1) <= 2^31 - 1", str(MB));
  ScoreShape s;
  s.max_reqs = static_cast<int>(R);
  s.query_len = cfg.query_len;
  s.heads = static_cast<int>(heads);
  s.max_blocks = static_cast<int>(MB);
  return s;
}

template <class ExecSpace, class Q, class Cache, class Tables, class Lens, class Out,
          class = std::enable_if_t<Kokkos::is_execution_space<ExecSpace>::value>>
void score(const ExecSpace& exec, const Q& q, const Cache& index_cache, const Tables& block_tables,
           const Lens& seq_lens, const Out& scores, const ScoreConfig& cfg = {}) {
  ScorePlan<ExecSpace>(exec, score_shape_of(q, block_tables, seq_lens, cfg), cfg)
      .run(q, index_cache, block_tables, seq_lens, scores);
}

template <class Q, class Cache, class Tables, class Lens, class Out,
          class = std::enable_if_t<Kokkos::is_view<Q>::value>>
void score(const Q& q, const Cache& index_cache, const Tables& block_tables, const Lens& seq_lens,
           const Out& scores, const ScoreConfig& cfg = {}) {
  score(typename Out::execution_space(), q, index_cache, block_tables, seq_lens, scores, cfg);
}

}  // namespace uq
