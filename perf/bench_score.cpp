// Google Benchmark: the NVFP4 index scorer (uq::ScorePlan) at the served shapes of the
// model it serves (nvfp4-index-sources.md: 4 query rows x 1 head and 8 rows x 4 heads,
// batch 32, 128k context) and a small sweep, against the copy bandwidth measured in the
// same process. Bytes: every page of every request once (9216 B) plus q, the block table
// and the written scores. Each result also has b2b_us, the mean of 20 back-to-back calls;
// on a CUDA build score_sol/<shape> is the speed-of-light read of the same inputs
// (perf/sm90/score_sol.cuh), timed both ways.
//
//   bench_score [--uq_full] [google benchmark flags]
#include "bench_score_sol.hpp"
#include "bench_support.hpp"
#include "uq/uq.hpp"

#include <Kokkos_Core.hpp>
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace {

using uqbench::Exec;
using Mem = Exec::memory_space;
template <class T>
using DView = Kokkos::View<T, Kokkos::LayoutRight, Mem>;

struct ScoreShapeArgs {
  int batch, context, query_len, heads;
  std::string name() const {
    return "B" + std::to_string(batch) + "/ctx" + std::to_string(context) + "/QL" + std::to_string(query_len) +
           "/H" + std::to_string(heads);
  }
  int blocks() const { return (context + 127) / 128; }
  // Bytes a call must move: the cache blocks (9216 B each), the table, q (128 B per row and
  // head) and the scores written (4 B per block per row and head).
  double bytes() const {
    const int nb = blocks();
    return static_cast<double>(batch) * nb * 9216.0 + 4.0 * batch * nb +
           static_cast<double>(batch) * query_len * heads * (128.0 + 4.0 * nb);
  }
};

struct ScoreInputs {
  DView<std::uint8_t***> q;
  DView<std::uint8_t**> cache;
  DView<std::int32_t**> tables;
  DView<std::int32_t*> lens;
};

ScoreInputs make_inputs(const ScoreShapeArgs& s, std::uint64_t seed) {
  ScoreInputs in;
  const int nb = s.blocks();
  const std::int64_t pages = static_cast<std::int64_t>(s.batch) * nb;
  in.q = decltype(in.q)("q", s.batch * s.query_len, s.heads, 128);
  in.cache = decltype(in.cache)(Kokkos::view_alloc(Kokkos::WithoutInitializing, "cache"), pages, 9216);
  in.tables = decltype(in.tables)("tables", s.batch, nb);
  in.lens = decltype(in.lens)("lens", s.batch);
  auto flat = Kokkos::View<std::uint8_t*, Mem, Kokkos::MemoryUnmanaged>(in.cache.data(), in.cache.size());
  Kokkos::parallel_for(
      "bench::fill_index_cache", Kokkos::RangePolicy<Exec, Kokkos::IndexType<std::int64_t>>(0, flat.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i) {
        const std::uint32_t h = uqbench::hash32(static_cast<std::uint64_t>(i) + seed);
        // codes random; scale bytes (page offset >= 8192) E4M3 values in [0.25, 8)
        flat(i) = static_cast<std::uint8_t>(i % 9216 >= 8192 ? 0x28 + h % 40 : h);
      });
  auto q = in.q;
  Kokkos::parallel_for(
      "bench::fill_index_q", Kokkos::RangePolicy<Exec>(0, static_cast<int>(q.size())), KOKKOS_LAMBDA(const int i) {
        const std::uint32_t h = uqbench::hash32(static_cast<std::uint64_t>(i) * 7 + seed);
        q.data()[i] = static_cast<std::uint8_t>((h % 0x70) | (h & 0x80));  // finite E4M3, both signs
      });
  uqbench::fill_scattered_tables(in.tables, in.lens, s.context, seed);
  return in;
}

// Enough input copies that back-to-back calls read from memory, not from the last-level cache.
std::vector<ScoreInputs> cold_inputs(const ScoreShapeArgs& s) {
  const int copies = uqbench::cold_copies(static_cast<std::size_t>(s.bytes()));
  std::vector<ScoreInputs> inputs;
  for (int i = 0; i < copies; ++i) inputs.push_back(make_inputs(s, 99 + i));
  return inputs;
}

void bench_score(benchmark::State& state, ScoreShapeArgs s, uq::Backend backend) {
  const int nb = s.blocks();
  const double bytes = s.bytes();
  const std::vector<ScoreInputs> inputs = cold_inputs(s);
  const int copies = static_cast<int>(inputs.size());
  uq::ScoreConfig cfg;
  cfg.query_len = s.query_len;
  cfg.local_blocks = 1;
  cfg.check = false;
  cfg.backend = backend;
  const Exec exec;
  uq::ScorePlan<Exec> plan(exec, uq::ScoreShape{s.batch, s.query_len, s.heads, nb}, cfg);
  DView<float***> scores("scores", s.heads, s.batch * s.query_len, nb);
  for (const auto& in : inputs) plan.run(in.q, in.cache, in.tables, in.lens, scores);  // warm-up
  double total = 0.0;
  std::size_t i = 0;
  for (auto _ : state) {
    const ScoreInputs& in = inputs[i++ % inputs.size()];
    const double t = uqbench::time_on_device(exec, [&] { plan.run(in.q, in.cache, in.tables, in.lens, scores); });
    state.SetIterationTime(t);
    total += t;
  }
  uqbench::set_bandwidth_counters(state, bytes, total);
  state.counters["cold_copies"] = copies;
  state.counters["b2b_us"] = 1e6 * uqbench::back_to_back_seconds(exec, 20, [&](int k) {
    const ScoreInputs& in = inputs[static_cast<std::size_t>(k) % inputs.size()];
    plan.run(in.q, in.cache, in.tables, in.lens, scores);
  });
  state.SetLabel(std::string(uq::path_name(plan.path())) + " on " + plan.device().name);
  if (!plan.status().ok()) state.SkipWithError(("device status: " + plan.status().describe()).c_str());
}

#if defined(KOKKOS_ENABLE_CUDA)
// The speed-of-light read of the same inputs (bench_score_sol.hpp): one launch per iteration
// (manual time), then the back-to-back mean.
void bench_score_sol(benchmark::State& state, ScoreShapeArgs s) {
  const int nb = s.blocks();
  const double bytes = s.bytes();
  const std::vector<ScoreInputs> inputs = cold_inputs(s);
  const int copies = static_cast<int>(inputs.size());
  const uqbench::SolBuffers buf = uqbench::make_sol_buffers(s.batch, s.context, nb, s.query_len * s.heads, 0, 1);
  std::vector<uqsol::SolArgs> args;
  for (const auto& in : inputs) args.push_back(uqbench::sol_args(in.q, in.cache, in.tables, buf, s.batch));
  const Exec exec;
  auto launch = [&](int k) { uqsol::launch_sol(args[static_cast<std::size_t>(k) % args.size()], exec.cuda_stream()); };
  for (int k = 0; k < copies; ++k) launch(k);  // warm-up
  double total = 0.0;
  int i = 0;
  for (auto _ : state) {
    const double t = uqbench::time_on_device(exec, [&] { launch(i++); });
    state.SetIterationTime(t);
    total += t;
  }
  uqbench::set_bandwidth_counters(state, bytes, total);
  state.counters["cold_copies"] = copies;
  state.counters["b2b_us"] = 1e6 * uqbench::back_to_back_seconds(exec, 20, launch);
  state.SetLabel("speed-of-light read (score_sol.cuh)");
}
#endif

void register_all(bool full) {
  const bool host = uqbench::on_host() && !full;
  std::vector<ScoreShapeArgs> shapes;
  // The served shapes: MTP with 4 query rows x 1 head, and 8 rows x 4 heads, batch 32.
  const int ctx = host ? 16384 : 131072;
  shapes.push_back({host ? 4 : 32, ctx, 4, 1});
  shapes.push_back({host ? 4 : 32, ctx, 8, 4});
  for (int b : host ? std::vector<int>{1} : std::vector<int>{1, 8, 64}) shapes.push_back({b, ctx, 1, 1});
  // On a host also 2, 8 and 16 columns: the host compiler's code differs by column count far
  // more than a GPU's (docs/perf-log/2026-12-03-generic-scorer-offsets.md), so each instance
  // is measured.
  if (host) {
    for (const auto& ql_h : {std::pair<int, int>{2, 1}, {2, 4}, {4, 4}}) shapes.push_back({4, ctx, ql_h.first, ql_h.second});
  }
  // Where a tuned scorer runs, the generic path on the same shapes too (score_generic/...).
  const bool native = uq::impl::ScoreDispatch<Exec>::tuned_path(uq::impl::device_info(Exec())) != uq::Path::Generic;
  auto reg = [](const std::string& name, ScoreShapeArgs s, uq::Backend backend) {
    benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& st) { bench_score(st, s, backend); })
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  };
  for (const auto& s : shapes) {
    reg("score/" + s.name(), s, uq::Backend::Auto);
    if (native) reg("score_generic/" + s.name(), s, uq::Backend::Generic);
#if defined(KOKKOS_ENABLE_CUDA)
    if (!uqbench::on_host())
      benchmark::RegisterBenchmark(("score_sol/" + s.name()).c_str(),
                                   [=](benchmark::State& st) { bench_score_sol(st, s); })
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
#endif
  }
}

}  // namespace

int main(int argc, char** argv) { return uqbench::benchmark_main(argc, argv, register_all); }
