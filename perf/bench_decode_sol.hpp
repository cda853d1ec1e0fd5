// The decode benchmarks' speed of light and back-to-back timing. The SOL kernel
// (arch/sm90/sol.cu) reads exactly the bytes a decode must read -- every present token's slot of
// every KV head through the same block tables and lengths -- and nothing else; it exists where
// the sm90 path is built (UQ_ENABLE_SM90) and runs on a Kokkos::Cuda space. Times are reported
// two ways: one call between two events (what the benchmark loop measures) and the mean of calls
// issued back to back (what an engine replaying a graph sees).
#pragma once

#include "bench_support.hpp"

#include <Kokkos_Core.hpp>
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <type_traits>
#include <vector>

#if defined(UQ_ENABLE_SM90) && defined(KOKKOS_ENABLE_CUDA)
#include "sm90/launch_sol.hpp"
#define UQ_BENCH_HAVE_SOL 1
#endif

namespace uqbench {

// Mean seconds of `reps` calls of f(i) (i = 0, 1, ...) issued back to back on exec.
template <class F>
double time_back_to_back(const Exec& exec, int reps, F&& f) {
  return time_on_device(exec, [&] {
           for (int i = 0; i < reps; ++i) f(i);
         }) /
         reps;
}

// Sets "b2b_us" (decode back to back) and, where the SOL kernel exists, "sol_us" (SOL back to
// back), "sol_1x_us" (SOL, one call) and "pct_sol" (SOL time / decode time, back to back) on
// state. run(i) runs the decode on input copy i % copies; cache/tables/lens(i) give copy i's views.
template <class Cache, class Tables, class Lens>
void set_sol_counters(benchmark::State& state, const Exec& exec, int copies, const std::function<void(int)>& run,
                      const std::function<Cache(int)>& cache, const std::function<Tables(int)>& tables,
                      const std::function<Lens(int)>& lens, int qg) {
  constexpr int kReps = 20;
  const double b2b = time_back_to_back(exec, kReps, [&](int i) { run(i % copies); });
  state.counters["b2b_us"] = 1e6 * b2b;
#if defined(UQ_BENCH_HAVE_SOL)
  if constexpr (std::is_same<Exec, Kokkos::Cuda>::value) {
    Kokkos::View<unsigned*, typename Exec::memory_space> sink("sol_sink", 1);
    auto sol = [&](int i) {
      const Cache c = cache(i % copies);
      const Tables t = tables(i % copies);
      const Lens l = lens(i % copies);
      uq::impl::DecodePartitionsLaunch d;
      d.stream = exec.cuda_stream();
      d.cache = reinterpret_cast<const std::uint8_t*>(c.data());
      d.num_blocks = static_cast<std::int64_t>(c.extent(0));
      d.block_size = static_cast<int>(c.extent(1));
      d.num_kv_heads = static_cast<int>(c.extent(2));
      d.slot_bytes = static_cast<int>(c.extent(3));
      d.block_stride = static_cast<std::int64_t>(c.extent(1) * c.extent(2) * c.extent(3));
      d.block_tables = t.data();
      d.table_stride_seq = static_cast<std::int64_t>(t.stride(0));
      d.table_stride_block = static_cast<std::int64_t>(t.stride(1));
      d.max_blocks_per_seq = static_cast<int>(t.extent(1));
      d.seq_lens = l.data();
      d.seq_lens_stride = static_cast<std::int64_t>(l.stride(0));
      d.num_seqs = static_cast<int>(t.extent(0));
      d.qg = qg;
      d.partitions = 1;  // (unused by the SOL kernel; a valid cover of the table)
      d.tgpp = static_cast<int>((static_cast<std::int64_t>(d.max_blocks_per_seq) * d.block_size + 255) / 256 + 1);
      d.scale = 1.0f;
      uq::sm90::launch_decode_sol(d, sink.data());
    };
    for (int i = 0; i < copies; ++i) sol(i);  // warm-up
    std::vector<double> one;
    for (int i = 0; i < 9; ++i) one.push_back(time_on_device(exec, [&] { sol(i); }));
    std::sort(one.begin(), one.end());
    const double sol_b2b = time_back_to_back(exec, kReps, sol);
    state.counters["sol_1x_us"] = 1e6 * one[4];
    state.counters["sol_us"] = 1e6 * sol_b2b;
    state.counters["pct_sol"] = 100.0 * sol_b2b / b2b;
  }
#else
  (void)cache;
  (void)tables;
  (void)lens;
  (void)qg;
#endif
}

}  // namespace uqbench
