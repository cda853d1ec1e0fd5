// Score dispatch: runs the path chosen by choose_path (uq/backend.hpp) — the generic Kokkos
// kernel, instantiated for a few column counts (H * QL rounded up to a power of two) so its
// per-thread accumulators have a compile-time size, or a tuned path's scorer on the execution
// space's own stream, found through the tuned-path seam (uq/impl/tuned_path.hpp).
#pragma once

#include "uq/backend.hpp"
#include "uq/impl/device_info.hpp"
#include "uq/impl/score_generic.hpp"
#include "uq/core/score_launch.hpp"
#include "uq/impl/tuned_path.hpp"

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
  // Why the tuned path `path` cannot take this call ("" when it can; always "" for Generic):
  // the tuned launcher's own checks on the launch it would make, run without launching, so
  // that Backend::Auto falls back to the generic path instead of throwing.
  template <class Q, class Tables, class Lens, class Out, class Lut, class Counts>
  static std::string rejection(Path path, const ExecSpace& exec, const Q& q, const IndexCacheAddressing& cache,
                               const Tables& block_tables, const Lens& seq_lens, const Out& scores, const Lut& lut,
                               const Counts& counts, const ScoreParams& p, std::int64_t num_reqs, int compute_units) {
    (void)path, (void)exec, (void)q, (void)cache, (void)block_tables, (void)seq_lens, (void)scores, (void)lut;
    (void)counts, (void)p, (void)num_reqs, (void)compute_units;
    try {
      with_tuned_path<ExecSpace>(path, [&](auto t) {
        using T = decltype(t);
        T::check(tuned_launch<T>(exec, q, cache, block_tables, seq_lens, scores, lut, counts, p, num_reqs, compute_units));
      });
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }

  // compute_units: the device's (DeviceInfo::compute_units), for the tuned kernels' grid.
  template <class Q, class Tables, class Lens, class Out, class Lut, class Counts>
  static void run(Path path, const ExecSpace& exec, const Q& q, const IndexCacheAddressing& cache,
                  const Tables& block_tables, const Lens& seq_lens, const Out& scores, const Lut& lut,
                  const Counts& counts, const ScoreParams& p, std::int64_t num_reqs, int compute_units) {
    const bool tuned = run_tuned_path<ExecSpace>("uq::score", path, [&](auto t) {
      using T = decltype(t);
      T::launch(tuned_launch<T>(exec, q, cache, block_tables, seq_lens, scores, lut, counts, p, num_reqs, compute_units));
    });
    if (tuned) return;
    switch (score_column_bucket(p.query_len * p.heads)) {
      case 1: return launch<1>(exec, q, cache, block_tables, seq_lens, scores, lut, counts, p, num_reqs, compute_units);
      case 2: return launch<2>(exec, q, cache, block_tables, seq_lens, scores, lut, counts, p, num_reqs, compute_units);
      case 4: return launch<4>(exec, q, cache, block_tables, seq_lens, scores, lut, counts, p, num_reqs, compute_units);
      case 8: return launch<8>(exec, q, cache, block_tables, seq_lens, scores, lut, counts, p, num_reqs, compute_units);
      case 16: return launch<16>(exec, q, cache, block_tables, seq_lens, scores, lut, counts, p, num_reqs, compute_units);
      default: return launch<32>(exec, q, cache, block_tables, seq_lens, scores, lut, counts, p, num_reqs, compute_units);
    }
  }

 private:
  // A tuned path's launch description, built one way for the launch and for the rejection.
  template <class Tuned, class Q, class Tables, class Lens, class Out, class Lut, class Counts>
  static typename Tuned::ScoreLaunch tuned_launch(const ExecSpace& exec, const Q& q, const IndexCacheAddressing& cache,
                                                  const Tables& block_tables, const Lens& seq_lens, const Out& scores,
                                                  const Lut& lut, const Counts& counts, const ScoreParams& p,
                                                  std::int64_t num_reqs, int compute_units) {
    auto l = make_score_launch<decltype(Tuned::ScoreLaunch::knobs)>(q, cache, block_tables, seq_lens, scores, lut,
                                                                     counts, p, num_reqs, Tuned::stream(exec));
    // From the shape only, never the lengths: a captured graph keeps its grid.
    l.knobs = Tuned::score_knobs(static_cast<int>(num_reqs), p.max_blocks, p.query_len, p.heads, compute_units);
    return l;
  }

  template <int Cols, class Q, class Tables, class Lens, class Out, class Lut, class Counts>
  static void launch(const ExecSpace& exec, const Q& q, const IndexCacheAddressing& cache,
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
