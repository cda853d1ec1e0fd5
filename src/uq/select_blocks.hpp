// uq::select_blocks: per (head, query row), the k highest-scoring visible blocks in
// descending order, equal scores -> smaller block first, NaN as -inf, -1 padding
// (spec nvfp4-index.md §5). This is what block-sparse attention consumes.
#pragma once

#include "uq/error.hpp"
#include "uq/impl/checks.hpp"
#include "uq/impl/select_blocks_generic.hpp"
#include "uq/impl/status_counters.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <limits>
#include <type_traits>

namespace uq {

struct SelectConfig {
  int query_len = 1;  // QL: query rows per request, as given to score
  // The block-table width given to score (ScoreShape::max_blocks): seq_lens clamp to
  // max_blocks * 128 tokens exactly as score clamps them, so selection reads only entries
  // that score wrote. 0: scores.extent(2) (right when scores is [H, rows, max_blocks]).
  int max_blocks = 0;
  bool check = true;  // read the status counters after the call; throw on bad seq_lens
};

// Holds the status counters so repeated calls allocate nothing (and, with check =
// false, do not synchronise).
// scores: float [H, num_reqs * QL, S] (any strides), as score writes it; only entries
// of blocks b < nb(row) are read. seq_lens: int32 [num_reqs]; a length above
// max_blocks * 128 (config.max_blocks, default S) is clamped (and counted), a negative one
// counts as 0. out: int32 [H, num_reqs * QL, k],
// k = out.extent(2) <= S.
template <class ExecSpace = Kokkos::DefaultExecutionSpace>
class BlockSelector {
 public:
  explicit BlockSelector(const ExecSpace& exec = ExecSpace(), const SelectConfig& cfg = {})
      : exec_(exec), cfg_(cfg), counters_(exec) {
    impl::require(cfg.query_len >= 1, "uq::select_blocks", "config.query_len", ">= 1", impl::str(cfg.query_len));
    impl::require(cfg.max_blocks >= 0, "uq::select_blocks", "config.max_blocks", ">= 0 (0: scores.extent(2))",
                  impl::str(cfg.max_blocks));
  }

  template <class Scores, class Lens, class Out>
  void run(const Scores& scores, const Lens& seq_lens, const Out& out) const {
    static_assert(impl::ViewContract<ExecSpace, Scores, float, 3>::ok, "");
    static_assert(impl::IndexViewContract<ExecSpace, Lens, 1, std::int32_t>::ok, "");
    static_assert(impl::OutputViewContract<ExecSpace, Out, std::int32_t, 3>::ok, "");
    constexpr const char* fn = "uq::select_blocks";
    using impl::require;
    using impl::require_extent;
    using impl::str;

    const std::int64_t R = static_cast<std::int64_t>(seq_lens.extent(0));
    const std::int64_t H = static_cast<std::int64_t>(scores.extent(0));
    const std::int64_t rows = R * cfg_.query_len;
    const std::int64_t S = static_cast<std::int64_t>(scores.extent(2));
    const std::int64_t k = static_cast<std::int64_t>(out.extent(2));
    require_extent(fn, "scores", scores, 1, rows, "num_reqs * query_len");
    require_extent(fn, "out", out, 0, H, "heads = scores.extent(0)");
    require_extent(fn, "out", out, 1, rows, "num_reqs * query_len");
    const std::int64_t max_blocks = cfg_.max_blocks > 0 ? cfg_.max_blocks : S;
    require(max_blocks <= S, fn, "config.max_blocks", "<= scores.extent(2) = " + str(S), str(max_blocks));
    require(k <= S, fn, "out", "extent(2) (k) <= scores.extent(2) = " + str(S), str(k));
    require(S < std::numeric_limits<std::int32_t>::max(), fn, "scores", "extent(2) < 2^31 - 1", str(S));
    require(H * rows <= std::numeric_limits<int>::max(), fn, "scores",
            "extent(0) * extent(1) <= 2^31 - 1", str(H * rows));
    impl::require_no_alias(fn, "out", out, "scores", scores);
    impl::require_no_alias(fn, "out", out, "seq_lens", seq_lens);

    if (cfg_.check) counters_.reset(exec_);
    using Counts = typename impl::StatusCounters<ExecSpace>::view_type;
    impl::SelectBlocksGeneric<ExecSpace, Scores, Lens, Out, Counts> kernel;
    kernel.scores = scores;
    kernel.seq_lens = seq_lens;
    kernel.out = out;
    kernel.counts = counters_.view();
    kernel.query_len = cfg_.query_len;
    kernel.rows = rows;
    kernel.max_blocks = max_blocks;
    kernel.k = static_cast<int>(k);
    kernel.launch(exec_, H);
    if (cfg_.check) throw_if_bad(fn, "seq_lens", counters_.read(exec_));
  }

  Status status() const { return counters_.read(exec_); }
  void reset_status() const { counters_.reset(exec_); }

 private:
  ExecSpace exec_;
  SelectConfig cfg_;
  impl::StatusCounters<ExecSpace> counters_;
};

template <class ExecSpace, class Scores, class Lens, class Out,
          class = std::enable_if_t<Kokkos::is_execution_space<ExecSpace>::value>>
void select_blocks(const ExecSpace& exec, const Scores& scores, const Lens& seq_lens, const Out& out,
                   const SelectConfig& cfg = {}) {
  BlockSelector<ExecSpace>(exec, cfg).run(scores, seq_lens, out);
}

template <class Scores, class Lens, class Out, class = std::enable_if_t<Kokkos::is_view<Scores>::value>>
void select_blocks(const Scores& scores, const Lens& seq_lens, const Out& out, const SelectConfig& cfg = {}) {
  select_blocks(typename Out::execution_space(), scores, seq_lens, out, cfg);
}

}  // namespace uq
