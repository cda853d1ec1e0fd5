// Score dispatch: runs the path chosen by select_path (uq/backend.hpp) — the generic
// Kokkos kernel, instantiated for a few column counts (H * QL rounded up to a power of two)
// so its per-thread accumulators have a compile-time size, or, in a Kokkos HIP build linked
// with uq::gfx950 (UQ_ENABLE_GFX950), the gfx950 kernel (arch/gfx950/launch_score.hpp), or, in
// a Kokkos CUDA build linked with uq::sm90 (UQ_ENABLE_SM90), the sm90 kernel
// (arch/sm90/launch_score.hpp), each on the execution space's own stream.
#pragma once

#include "uq/backend.hpp"
#include "uq/impl/device_info.hpp"
#include "uq/impl/score_generic.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>
#include <type_traits>

#if defined(KOKKOS_ENABLE_HIP) && defined(UQ_ENABLE_GFX950)
// The gfx950 scorer's launcher (library uq::gfx950, whose usage requirements define
// UQ_ENABLE_GFX950 and put arch/ on the include path).
#include "gfx950/launch_score.hpp"
#include "gfx950/score_launch_args.hpp"
#endif

#if defined(KOKKOS_ENABLE_CUDA) && defined(UQ_ENABLE_SM90)
// The sm90 scorer's launcher (library uq::sm90, whose usage requirements define
// UQ_ENABLE_SM90 and put arch/ on the include path).
#include "sm90/launch_score.hpp"
#include "sm90/score_checks.hpp"
#endif

namespace uq {
namespace impl {

// The tuned scorers compiled into this build: gfx950 in a Kokkos HIP build linked with
// uq::gfx950, sm90 in a Kokkos CUDA build linked with uq::sm90.
inline BuiltPaths built_score_paths() {
  BuiltPaths b;
#if defined(KOKKOS_ENABLE_HIP) && defined(UQ_ENABLE_GFX950)
  b.gfx950 = true;
#endif
#if defined(KOKKOS_ENABLE_CUDA) && defined(UQ_ENABLE_SM90)
  b.sm90 = true;
#endif
  return b;
}

// Columns (query rows x heads) a generic kernel instance holds per thread.
inline int score_column_bucket(int cols) {
  int bucket = 1;
  while (bucket < cols) bucket *= 2;
  return bucket;
}

template <class ExecSpace>
struct ScoreSpec {
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
#if defined(KOKKOS_ENABLE_HIP) && defined(UQ_ENABLE_GFX950)
      if constexpr (std::is_same<ExecSpace, HipSpace>::value)
        if (path == Path::Gfx950)
          (void)gfx950::make_score_kernel_args(
              gfx950_launch(exec, q, cache, block_tables, seq_lens, scores, lut, counts, p, num_reqs, compute_units));
#endif
#if defined(KOKKOS_ENABLE_CUDA) && defined(UQ_ENABLE_SM90)
      if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value)
        if (path == Path::Sm90)
          (void)sm90::make_score_kernel_args(
              sm90_launch(exec, q, cache, block_tables, seq_lens, scores, lut, counts, p, num_reqs, compute_units));
#endif
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
#if defined(KOKKOS_ENABLE_HIP) && defined(UQ_ENABLE_GFX950)
    if constexpr (std::is_same<ExecSpace, HipSpace>::value) {
      if (path == Path::Gfx950) {
        gfx950::launch_score(
            gfx950_launch(exec, q, cache, block_tables, seq_lens, scores, lut, counts, p, num_reqs, compute_units));
        return;
      }
    }
#endif
#if defined(KOKKOS_ENABLE_CUDA) && defined(UQ_ENABLE_SM90)
    if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value) {
      if (path == Path::Sm90) {
        sm90::launch_score(
            sm90_launch(exec, q, cache, block_tables, seq_lens, scores, lut, counts, p, num_reqs, compute_units));
        return;
      }
    }
#endif
    (void)path;  // select_path gives a tuned path only where this build has its launcher
    (void)compute_units;
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
#if defined(KOKKOS_ENABLE_HIP) && defined(UQ_ENABLE_GFX950)
  template <class Q, class Tables, class Lens, class Out, class Lut, class Counts>
  static gfx950::ScoreLaunch gfx950_launch(const ExecSpace& exec, const Q& q, const IndexCacheAddressing& cache,
                                           const Tables& block_tables, const Lens& seq_lens, const Out& scores,
                                           const Lut& lut, const Counts& counts, const ScoreParams& p,
                                           std::int64_t num_reqs, int compute_units) {
    gfx950::ScoreLaunch l = gfx950::score_launch(q, cache, block_tables, seq_lens, scores, lut, counts, p, num_reqs,
                                                 static_cast<void*>(exec.hip_stream()));
    // From the shape only, never the lengths: a captured graph keeps its grid.
    l.knobs = gfx950::choose_score_knobs(static_cast<int>(num_reqs), p.max_blocks, p.query_len, p.heads, compute_units);
    return l;
  }
#endif
#if defined(KOKKOS_ENABLE_CUDA) && defined(UQ_ENABLE_SM90)
  template <class Q, class Tables, class Lens, class Out, class Lut, class Counts>
  static sm90::ScoreLaunch sm90_launch(const ExecSpace& exec, const Q& q, const IndexCacheAddressing& cache,
                                       const Tables& block_tables, const Lens& seq_lens, const Out& scores,
                                       const Lut& lut, const Counts& counts, const ScoreParams& p,
                                       std::int64_t num_reqs, int compute_units) {
    sm90::ScoreLaunch l = sm90::score_launch(q, cache, block_tables, seq_lens, scores, lut, counts, p, num_reqs,
                                             static_cast<void*>(exec.cuda_stream()));
    // From the shape only, never the lengths: a captured graph keeps its grid.
    l.knobs = sm90::choose_score_knobs(static_cast<int>(num_reqs), p.max_blocks, p.query_len, p.heads, compute_units);
    return l;
  }
#endif

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
