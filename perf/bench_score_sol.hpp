// The scorer's speed-of-light read (perf/sm90/score_sol.cuh) on bench_score's inputs, and
// back-to-back timing: bench_score registers score_sol/<shape> next to score/<shape> on a
// CUDA build, so that every scorer time has the floor of the same bytes, timed the same way,
// in the same process. The SOL part is for CUDA builds only (the kernel is plain CUDA).
#pragma once

#include "bench_support.hpp"

#include <Kokkos_Core.hpp>  // KOKKOS_ENABLE_CUDA

#include <cstdint>
#include <vector>

namespace uqbench {

// Mean seconds of one call over `n` back-to-back calls f(i), timed around them all.
template <class F>
double back_to_back_seconds(const Exec& exec, int n, F&& f) {
  f(0);  // warm
  return time_on_device(exec, [&] {
           for (int i = 0; i < n; ++i) f(i);
         }) /
         n;
}

}  // namespace uqbench

#if defined(KOKKOS_ENABLE_CUDA)
#include "sm90/score_sol.cuh"

namespace uqbench {

// Device buffers of the SOL read of one shape (every request of length `context`, the
// sentinel blocks of init_blocks / local_blocks skipped as the scorer skips them).
struct SolBuffers {
  Kokkos::View<std::int64_t*, Kokkos::CudaSpace> first;
  Kokkos::View<std::int32_t*, Kokkos::CudaSpace> lo;
  Kokkos::View<float*, Kokkos::CudaSpace> out;
  Kokkos::View<unsigned*, Kokkos::CudaSpace> sink;
  std::int64_t total = 0;
  int cols = 1;
};

inline SolBuffers make_sol_buffers(int batch, int context, int blocks, int cols, int init_blocks, int local_blocks) {
  const std::vector<std::int32_t> lens(static_cast<std::size_t>(batch), context);
  const uqsol::SolPlan plan = uqsol::make_sol_plan(lens, blocks, init_blocks, local_blocks);
  SolBuffers b;
  b.total = plan.total;
  b.cols = cols;
  b.first = decltype(b.first)("sol_first", plan.first.size());
  b.lo = decltype(b.lo)("sol_lo", plan.lo.size());
  b.out = decltype(b.out)("sol_out", static_cast<std::size_t>(plan.total) * cols + 1);
  b.sink = decltype(b.sink)("sol_sink", 1);
  Kokkos::deep_copy(b.first, Kokkos::View<const std::int64_t*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                                 plan.first.data(), plan.first.size()));
  Kokkos::deep_copy(b.lo, Kokkos::View<const std::int32_t*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                              plan.lo.data(), plan.lo.size()));
  return b;
}

// q: [batch * QL][H][128] LayoutRight (a request's rows contiguous); cache: [pages][9216];
// tables: [batch][blocks] LayoutRight.
template <class Q, class Cache, class Tables>
uqsol::SolArgs sol_args(const Q& q, const Cache& cache, const Tables& tables, const SolBuffers& b, int batch) {
  uqsol::SolArgs a;
  a.cache = cache.data();
  a.block_tables = tables.data();
  a.t_req = static_cast<std::int64_t>(tables.stride(0));
  a.t_block = static_cast<std::int64_t>(tables.stride(1));
  a.first = b.first.data();
  a.lo = b.lo.data();
  a.num_reqs = batch;
  a.total = b.total;
  a.q = q.data();
  a.q_bytes = static_cast<std::int64_t>(q.size()) / batch;
  a.out = b.out.data();
  a.cols = b.cols;
  a.sink = b.sink.data();
  return a;
}

}  // namespace uqbench
#endif
