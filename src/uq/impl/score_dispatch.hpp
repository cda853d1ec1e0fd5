// Score dispatch: a scorer call's launch description (uq/core/score_launch.hpp) through the one
// dispatcher (uq/impl/dispatch.hpp) — a tuned path's scorer on the execution space's own stream,
// or the generic Kokkos kernel, instantiated for a few column counts (H * QL rounded up to a
// power of two) so its per-thread accumulators have a compile-time size.
#pragma once

#include "uq/backend.hpp"
#include "uq/impl/device_info.hpp"
#include "uq/impl/score_generic.hpp"
#include "uq/core/score_launch.hpp"
#include "uq/impl/dispatch.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>
#include <type_traits>

namespace uq {
namespace impl {

// Columns (query rows x heads) a generic kernel instance holds per thread.
inline int score_column_bucket(int cols) {
  int bucket = 1;
  while (bucket < cols) bucket *= 2;
  return bucket;
}

template <class ExecSpace>
struct ScoreDispatch {
  using Call = TunedCall<ExecSpace, ScoreLaunch>;

  // The tuned path Auto takes on this device for score calls it accepts (Generic: none).
  static Path tuned_path(const DeviceInfo& dev) { return Call::tuned_path(dev); }

  // One scorer call on candidate.path (Call::candidate), or the generic kernel; `ran`: the path
  // that ran, and why. compute_units: the device's (DeviceInfo::compute_units), for the grids.
  template <class Q, class Tables, class Lens, class Out, class Lut, class Counts>
  static void run(const ExecSpace& exec, const PathChoice& candidate, Backend requested, PathChoice& ran, const Q& q,
                        const IndexCacheAddressing& cache, const Tables& block_tables, const Lens& seq_lens,
                        const Out& scores, const Lut& lut, const Counts& counts, const ScoreParams& p,
                        std::int64_t num_reqs, int compute_units) {
    const ScoreLaunch l =
        make_score_launch(q, cache, block_tables, seq_lens, scores, lut, counts, p, num_reqs, compute_units);
    Call::run("uq::score", exec, candidate, requested, {l}, ran, [&] {
      switch (score_column_bucket(p.query_len * p.heads)) {
        case 1: return generic<1>(exec, q, cache, block_tables, seq_lens, scores, lut, counts, p, num_reqs, compute_units);
        case 2: return generic<2>(exec, q, cache, block_tables, seq_lens, scores, lut, counts, p, num_reqs, compute_units);
        case 4: return generic<4>(exec, q, cache, block_tables, seq_lens, scores, lut, counts, p, num_reqs, compute_units);
        case 8: return generic<8>(exec, q, cache, block_tables, seq_lens, scores, lut, counts, p, num_reqs, compute_units);
        case 16: return generic<16>(exec, q, cache, block_tables, seq_lens, scores, lut, counts, p, num_reqs, compute_units);
        default: return generic<32>(exec, q, cache, block_tables, seq_lens, scores, lut, counts, p, num_reqs, compute_units);
      }
    });
  }

 private:
  template <int Cols, class Q, class Tables, class Lens, class Out, class Lut, class Counts>
  static void generic(const ExecSpace& exec, const Q& q, const IndexCacheAddressing& cache,
                     const Tables& block_tables, const Lens& seq_lens, const Out& scores, const Lut& lut,
                     const Counts& counts, const ScoreParams& p, std::int64_t num_reqs, int compute_units) {
    ScoreGeneric<ExecSpace, Cols, Q, Tables, Lens, Out, Lut, Counts> k;
    k.q = q;
    k.cache = cache;
    k.block_tables = block_tables;
    k.seq_lens = seq_lens;
    k.scores = scores;
    k.lut = lut;
    k.counts = counts;
    k.p = p;
    k.launch(exec, num_reqs, compute_units);
  }
};

}  // namespace impl
}  // namespace uq
