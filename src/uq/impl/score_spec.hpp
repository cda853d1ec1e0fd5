// Score dispatch: runs the path chosen by select_path (uq/backend.hpp). Only the
// generic Kokkos kernel exists for the scorer so far; it is instantiated for a few
// column counts (H * QL rounded up to a power of two) so its per-thread accumulators
// have a compile-time size.
#pragma once

#include "uq/backend.hpp"
#include "uq/impl/score_generic.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace uq {
namespace impl {

// No tuned scorer is built yet: Auto takes the generic path and Native is refused by
// select_path. (When arch/gfx950 gains one, report it here.)
inline BuiltPaths built_score_paths() { return BuiltPaths{}; }

// Columns (query rows x heads) a generic kernel instance holds per thread.
inline int score_column_bucket(int cols) {
  int bucket = 1;
  while (bucket < cols) bucket *= 2;
  return bucket;
}

template <class ExecSpace>
struct ScoreSpec {
  template <class Q, class Tables, class Lens, class Out, class Lut, class Counts>
  static void run(Path path, const ExecSpace& exec, const Q& q, const IndexCacheAddressing& cache,
                  const Tables& block_tables, const Lens& seq_lens, const Out& scores, const Lut& lut,
                  const Counts& counts, const ScoreParams& p, std::int64_t num_reqs) {
    (void)path;  // only the generic path exists (built_score_paths())
    switch (score_column_bucket(p.query_len * p.heads)) {
      case 1: return launch<1>(exec, q, cache, block_tables, seq_lens, scores, lut, counts, p, num_reqs);
      case 2: return launch<2>(exec, q, cache, block_tables, seq_lens, scores, lut, counts, p, num_reqs);
      case 4: return launch<4>(exec, q, cache, block_tables, seq_lens, scores, lut, counts, p, num_reqs);
      case 8: return launch<8>(exec, q, cache, block_tables, seq_lens, scores, lut, counts, p, num_reqs);
      case 16: return launch<16>(exec, q, cache, block_tables, seq_lens, scores, lut, counts, p, num_reqs);
      default: return launch<32>(exec, q, cache, block_tables, seq_lens, scores, lut, counts, p, num_reqs);
    }
  }

 private:
  template <int Cols, class Q, class Tables, class Lens, class Out, class Lut, class Counts>
  static void launch(const ExecSpace& exec, const Q& q, const IndexCacheAddressing& cache,
                     const Tables& block_tables, const Lens& seq_lens, const Out& scores, const Lut& lut,
                     const Counts& counts, const ScoreParams& p, std::int64_t num_reqs) {
    ScoreGeneric<ExecSpace, Cols, Q, Tables, Lens, Out, Lut, Counts> k;
    k.q = q;
    k.cache = cache;
    k.block_tables = block_tables;
    k.seq_lens = seq_lens;
    k.scores = scores;
    k.lut = lut;
    k.counts = counts;
    k.p = p;
    k.launch(exec, num_reqs);
  }
};

}  // namespace impl
}  // namespace uq
