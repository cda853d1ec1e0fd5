// Google Benchmark: write_kv and decode (partitions, reducer, both) over a sweep of
// shapes, on the default execution space of this build, each against the copy
// bandwidth measured in the same process. Cold cache: inputs rotate through enough
// copies to exceed 4x the last-level cache.
//
//   bench_decode [--uq_full] [google benchmark flags, e.g. --benchmark_out=x.json]
//
// Host builds run a reduced sweep (a Serial decode of 64 x 128k tokens takes minutes);
// --uq_full forces the device sweep.
//
// decode_queries/QL<n>/...: several query tokens per sequence (spec ultraquant.md §5.9, an MTP or
// draft verification: each sequence's last QL tokens are new), one call (mode "one_call", on the
// device's default path: the sm90 multi-token kernel on Hopper, where QL x QG <= 32; and
// "one_call_generic" where that is a tuned one) against today's way, QL one-token calls with
// seq_len = L - QL + j + 1 (mode "per_token", on the device's default path, and "per_token_generic"
// where that is a tuned one); kv_reads counts the passes over the cache. The target:
// the generic QL = 4 call within 2x the QL = 1 call.
#include "bench_decode_sol.hpp"
#include "bench_support.hpp"
#include "uq/uq.hpp"

#include <Kokkos_Core.hpp>
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace {

using uqbench::Exec;
using Mem = Exec::memory_space;

struct DecodeShapeArgs {
  int batch, context, qg, kv_heads, block_size;
  std::string name() const {
    return "B" + std::to_string(batch) + "/ctx" + std::to_string(context) + "/QG" + std::to_string(qg) + "/Hk" +
           std::to_string(kv_heads) + "/BS" + std::to_string(block_size);
  }
};

// One copy of a decode problem's inputs, on the device.
struct DecodeInputs {
  Kokkos::View<uq::bf16***, Kokkos::LayoutRight, Mem> q;
  Kokkos::View<std::uint8_t****, Kokkos::LayoutRight, Mem> cache;
  Kokkos::View<std::int32_t**, Kokkos::LayoutRight, Mem> tables;
  Kokkos::View<std::int32_t*, Kokkos::LayoutRight, Mem> lens;
};

// Random cache bytes with scale bytes in a sane range (118..129), and random q: hashed from the
// element index and the seed, on the device (a 36 GB engine cache is filled in place).
// Random q (any rank, contiguous), hashed from the element index and the seed.
template <class Q>
void fill_q(const Q& q, std::uint64_t seed) {
  Kokkos::parallel_for(
      "bench::fill_q", Kokkos::RangePolicy<Exec>(0, static_cast<int>(q.size())), KOKKOS_LAMBDA(const int i) {
        const float x = (static_cast<float>(uqbench::hash32(static_cast<std::uint64_t>(i) + seed * 7) % 2001) - 1000.0f) / 400.0f;
        q.data()[i] = uq::codec::float_to_bf16(x);
      });
}

template <class Cache, class Q>
void fill_cache_and_q(const Cache& cache, const Q& q, std::uint64_t seed) {
  const std::int64_t bytes = static_cast<std::int64_t>(cache.size());
  auto flat = Kokkos::View<std::uint8_t*, Mem, Kokkos::MemoryUnmanaged>(cache.data(), bytes);
  Kokkos::parallel_for(
      "bench::fill_cache", Kokkos::RangePolicy<Exec, Kokkos::IndexType<std::int64_t>>(0, bytes),
      KOKKOS_LAMBDA(const std::int64_t i) {
        const int o = static_cast<int>(i % 272);
        const std::uint32_t h = uqbench::hash32(static_cast<std::uint64_t>(i) * 31 + seed);
        const bool scale = (o >= 128 && o < 136) || (o >= 264);
        flat(i) = static_cast<std::uint8_t>(scale ? 118 + h % 12 : h);
      });
  fill_q(q, seed);
}

DecodeInputs make_inputs(const DecodeShapeArgs& s, std::uint64_t seed) {
  DecodeInputs in;
  const int nb = (s.context + s.block_size - 1) / s.block_size;
  const std::int64_t blocks = static_cast<std::int64_t>(s.batch) * nb;
  in.q = decltype(in.q)("q", s.batch, s.kv_heads * s.qg, 256);
  in.cache = decltype(in.cache)(Kokkos::view_alloc(Kokkos::WithoutInitializing, "cache"), blocks, s.block_size,
                                s.kv_heads, 272);
  in.tables = decltype(in.tables)("tables", s.batch, nb);
  in.lens = decltype(in.lens)("lens", s.batch);
  fill_cache_and_q(in.cache, in.q, seed);
  uqbench::fill_scattered_tables(in.tables, in.lens, s.context, seed);
  return in;
}

// The bytes decode must move: every cached token once (272 B per KV head), the block
// table, q and out. Partial-result traffic is extra work, not part of the floor.
double decode_floor_bytes(const DecodeShapeArgs& s) {
  const int nb = (s.context + s.block_size - 1) / s.block_size;
  return static_cast<double>(s.batch) * s.context * s.kv_heads * 272.0 + 4.0 * s.batch * nb +
         2.0 * 2.0 * s.batch * s.kv_heads * s.qg * 256;
}

enum class Stage { Both, Partitions, Reduce };

void bench_decode(benchmark::State& state, DecodeShapeArgs s, Stage stage, uq::Backend backend) {
  const double floor_bytes = decode_floor_bytes(s);
  const int copies = uqbench::cold_copies(static_cast<std::size_t>(floor_bytes));
  std::vector<DecodeInputs> inputs;
  for (int i = 0; i < copies; ++i) inputs.push_back(make_inputs(s, 1234 + i));
  uq::DecodeConfig cfg;
  cfg.check = false;
  cfg.backend = backend;
  const Exec exec;
  uq::DecodePlan<Exec> plan(exec, uq::DecodeShape{s.batch, s.kv_heads, s.qg, s.block_size,
                                                  static_cast<int>(inputs[0].tables.extent(1))},
                            cfg);
  Kokkos::View<uq::bf16***, Kokkos::LayoutRight, Mem> out("out", s.batch, s.kv_heads * s.qg, 256);
  auto run = [&](const DecodeInputs& in) {
    if (stage != Stage::Reduce) plan.run_partitions(in.q, in.cache, in.tables, in.lens);
    if (stage != Stage::Partitions) plan.run_reduce(s.batch, out);
  };
  for (const auto& in : inputs) run(in);  // warm-up: kernels loaded, partials written
  const double bytes = stage == Stage::Reduce
                           ? static_cast<double>(s.batch) * s.kv_heads * plan.partitions() * s.qg * (512.0 + 8.0) +
                                 4.0 * s.batch * s.kv_heads * s.qg * 256
                           : floor_bytes;
  double total = 0.0;
  std::size_t i = 0;
  for (auto _ : state) {
    const double t = uqbench::time_on_device(exec, [&] { run(inputs[i++ % inputs.size()]); });
    state.SetIterationTime(t);
    total += t;
  }
  uqbench::set_bandwidth_counters(state, bytes, total);
  state.counters["partitions"] = plan.partitions();
  state.counters["cold_copies"] = copies;
  if (stage == Stage::Both)  // SOL and back-to-back times (bench_decode_sol.hpp)
    uqbench::set_sol_counters<decltype(inputs[0].cache), decltype(inputs[0].tables), decltype(inputs[0].lens)>(
        state, exec, copies, [&](int i) { run(inputs[i]); }, [&](int i) { return inputs[i].cache; },
        [&](int i) { return inputs[i].tables; }, [&](int i) { return inputs[i].lens; }, s.qg);
  state.SetLabel(std::string(uq::path_name(plan.path())) + " on " + plan.device().name);
  if (!plan.status().ok()) state.SkipWithError(("device status: " + plan.status().describe()).c_str());
}

// ---------------------------------------------------------------- engine-sized plan
// What an inference engine runs: one plan sized for its worst case (256 sequences, Hk 4, QG 6,
// a 128k-token block table, so P = 256 by the spec's choice) and called with the lengths of the
// moment. "short": ragged lengths 1 .. 8191 (mean 4096), each sequence's blocks scattered over
// a cache holding just those blocks (table entries past a sequence's end point at block 0, as
// an allocator's padding does); "full": every sequence at the table's width.
struct EngineArgs {
  const char* kind;  // "short" or "full"
  int seqs;
  int kv_heads = 4, qg = 6, block_size = 64, width_tokens = 131072;
  std::string name() const {
    return std::string(kind) + "/B" + std::to_string(seqs) + "/Hk" + std::to_string(kv_heads) + "/QG" +
           std::to_string(qg) + "/W" + std::to_string(width_tokens);
  }
};

struct EngineInputs {
  DecodeInputs in;
  std::int64_t tokens = 0;  // sum of the lengths
};

EngineInputs make_engine_inputs(const EngineArgs& e, std::uint64_t seed) {
  const int width_blocks = e.width_tokens / e.block_size;
  std::vector<std::int32_t> lens(static_cast<std::size_t>(e.seqs));
  EngineInputs r;
  std::int64_t blocks = 0;
  for (int b = 0; b < e.seqs; ++b) {
    const std::uint32_t h = uqbench::hash32(seed * 1000003u + static_cast<std::uint64_t>(b));
    lens[static_cast<std::size_t>(b)] = std::string(e.kind) == "full" ? e.width_tokens : 1 + static_cast<int>(h % 8191u);
    r.tokens += lens[static_cast<std::size_t>(b)];
    blocks += (lens[static_cast<std::size_t>(b)] + e.block_size - 1) / e.block_size;
  }
  std::vector<std::int32_t> perm(static_cast<std::size_t>(blocks));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937(static_cast<unsigned>(seed)));
  DecodeInputs& in = r.in;
  in.q = decltype(in.q)("q", e.seqs, e.kv_heads * e.qg, 256);
  in.cache = decltype(in.cache)(Kokkos::view_alloc(Kokkos::WithoutInitializing, "cache"), std::max<std::int64_t>(1, blocks),
                                e.block_size, e.kv_heads, 272);
  in.tables = decltype(in.tables)("tables", e.seqs, width_blocks);
  in.lens = decltype(in.lens)("lens", e.seqs);
  auto ht = Kokkos::create_mirror_view(in.tables);
  auto hl = Kokkos::create_mirror_view(in.lens);
  std::size_t next = 0;
  for (int b = 0; b < e.seqs; ++b) {
    hl(b) = lens[static_cast<std::size_t>(b)];
    const int nb = (hl(b) + e.block_size - 1) / e.block_size;
    for (int j = 0; j < width_blocks; ++j) ht(b, j) = j < nb ? perm[next++] : 0;
  }
  Kokkos::deep_copy(in.tables, ht);
  Kokkos::deep_copy(in.lens, hl);
  fill_cache_and_q(in.cache, in.q, seed);
  Exec().fence();
  return r;
}

// Bytes of partial results one run moves, found from the run itself: the partial rows the
// partition kernel wrote (every row is poisoned first), the l and m of every row (written by
// the partition kernel, read by the reducer), and the rows the reducer reads (those with l > 0:
// a row of zero weight is never read, by either reducer).
constexpr std::uint16_t kPartialPoison = 0xFFFF;  // a NaN no kernel writes

// (Not a template on the caller's lambda: CUDA's extended lambdas below may not sit in one.)
double measured_partial_bytes(const uq::DecodePlan<Exec>& plan, const std::function<void()>& run_once) {
  const auto& partials = plan.partials();
  Kokkos::deep_copy(partials.out, uq::bf16{kPartialPoison});
  run_once();
  Exec().fence();
  const std::int64_t rows = static_cast<std::int64_t>(partials.l.extent(0));
  auto out = partials.out;
  auto l = partials.l;
  std::int64_t written = 0, read = 0;
  Kokkos::parallel_reduce(
      "bench::count_partials", Kokkos::RangePolicy<Exec, Kokkos::IndexType<std::int64_t>>(0, rows),
      KOKKOS_LAMBDA(const std::int64_t r, std::int64_t& w) { w += out(r * 256).bits != kPartialPoison ? 1 : 0; },
      written);
  Kokkos::parallel_reduce(
      "bench::count_read", Kokkos::RangePolicy<Exec, Kokkos::IndexType<std::int64_t>>(0, rows),
      KOKKOS_LAMBDA(const std::int64_t r, std::int64_t& n) { n += l(r) > 0.0f ? 1 : 0; }, read);
  const bool reducer = plan.partitions() > 1;
  const double lm = 8.0 * static_cast<double>(rows);
  return 512.0 * static_cast<double>(written) + lm + (reducer ? lm + 512.0 * static_cast<double>(read) : 0.0);
}

void bench_engine(benchmark::State& state, EngineArgs e) {
  const int copies_wanted = 2;
  std::vector<EngineInputs> inputs;
  inputs.push_back(make_engine_inputs(e, 77));
  const double kv_bytes = static_cast<double>(inputs[0].tokens) * e.kv_heads * 272.0;
  const double floor_bytes = kv_bytes + 4.0 * e.seqs * (e.width_tokens / e.block_size) +
                             2.0 * 2.0 * e.seqs * e.kv_heads * e.qg * 256;
  const int copies = std::min(copies_wanted, uqbench::cold_copies(static_cast<std::size_t>(kv_bytes)));
  for (int i = 1; i < copies; ++i) inputs.push_back(make_engine_inputs(e, 77 + i));
  uq::DecodeConfig cfg;
  cfg.check = false;
  const Exec exec;
  uq::DecodePlan<Exec> plan(exec, uq::DecodeShape{e.seqs, e.kv_heads, e.qg, e.block_size, e.width_tokens / e.block_size},
                            cfg);
  Kokkos::View<uq::bf16***, Kokkos::LayoutRight, Mem> out("out", e.seqs, e.kv_heads * e.qg, 256);
  auto run = [&](const DecodeInputs& in) { plan.run(in.q, in.cache, in.tables, in.lens, out); };
  const double partial_bytes = measured_partial_bytes(plan, [&] { run(inputs[0].in); });  // also the warm-up
  double total = 0.0;
  std::size_t i = 0;
  for (auto _ : state) {
    const double t = uqbench::time_on_device(exec, [&] { run(inputs[i++ % inputs.size()].in); });
    state.SetIterationTime(t);
    total += t;
  }
  uqbench::set_bandwidth_counters(state, floor_bytes, total);
  const double per_call = state.iterations() > 0 ? total / static_cast<double>(state.iterations()) : 0.0;
  const double floor_s = floor_bytes / (uqbench::copy_bandwidth().gb_per_s * 1e9);
  state.counters["partitions"] = plan.partitions();
  state.counters["launches"] = plan.launches_per_run();
  state.counters["kv_MB"] = kv_bytes * 1e-6;
  state.counters["partial_MB"] = partial_bytes * 1e-6;
  state.counters["x_floor"] = floor_s > 0.0 ? per_call / floor_s : 0.0;  // time / (floor bytes at copy speed)
  state.SetLabel(std::string(uq::path_name(plan.path())) + " on " + plan.device().name);
  if (!plan.status().ok()) state.SkipWithError(("device status: " + plan.status().describe()).c_str());
}

void bench_write_kv(benchmark::State& state, int tokens, int kv_heads) {
  const int block_size = 64;
  const int blocks = (tokens + block_size - 1) / block_size + 1;
  Kokkos::View<uq::bf16***, Kokkos::LayoutRight, Mem> k("k", tokens, kv_heads, 256), v("v", tokens, kv_heads, 256);
  Kokkos::View<std::int64_t*, Kokkos::LayoutRight, Mem> slots("slots", tokens);
  Kokkos::View<std::uint8_t****, Kokkos::LayoutRight, Mem> cache("cache", blocks, block_size, kv_heads, 272);
  Kokkos::parallel_for(
      "bench::fill_kv", Kokkos::RangePolicy<Exec>(0, static_cast<int>(k.size())), KOKKOS_LAMBDA(const int i) {
        k.data()[i] = uq::codec::float_to_bf16((static_cast<float>(uqbench::hash32(i) % 1001) - 500.0f) / 100.0f);
        v.data()[i] = uq::codec::float_to_bf16((static_cast<float>(uqbench::hash32(i + 7) % 1001) - 500.0f) / 100.0f);
        if (i < tokens) slots(i) = i + 3;
      });
  uq::WriteKvConfig cfg;
  cfg.check = false;
  const Exec exec;
  uq::KvWriter<Exec> writer(exec, cfg);
  writer.run(k, v, slots, cache);
  const double bytes = static_cast<double>(tokens) * kv_heads * (2.0 * 512.0 + 272.0) + 8.0 * tokens;
  double total = 0.0;
  for (auto _ : state) {
    const double t = uqbench::time_on_device(exec, [&] { writer.run(k, v, slots, cache); });
    state.SetIterationTime(t);
    total += t;
  }
  uqbench::set_bandwidth_counters(state, bytes, total);
}

// ---------------------------------------------------------------- several query tokens
enum class QueriesMode { OneCall, OneCallGeneric, PerToken, PerTokenGeneric };

const char* mode_name(QueriesMode m) {
  return m == QueriesMode::OneCall          ? "one_call"
         : m == QueriesMode::OneCallGeneric ? "one_call_generic"
         : m == QueriesMode::PerToken       ? "per_token"
                                            : "per_token_generic";
}
bool one_call(QueriesMode m) { return m == QueriesMode::OneCall || m == QueriesMode::OneCallGeneric; }

void bench_queries(benchmark::State& state, DecodeShapeArgs s, int ql, QueriesMode mode) {
  const double floor_bytes = decode_floor_bytes(s);  // the cache once: the useful bytes
  const int copies = uqbench::cold_copies(static_cast<std::size_t>(floor_bytes));
  std::vector<DecodeInputs> inputs;
  std::vector<Kokkos::View<uq::bf16****, Kokkos::LayoutRight, Mem>> queries;  // [B][QL][Hq][256]
  const int hq = s.kv_heads * s.qg;
  for (int i = 0; i < copies; ++i) {
    inputs.push_back(make_inputs(s, 4321 + i));
    queries.emplace_back("q", s.batch, ql, hq, 256);
    fill_q(queries.back(), 99 + i);
  }
  // Query token j sees L - QL + j + 1 tokens: today's way passes those lengths, one call each.
  std::vector<Kokkos::View<std::int32_t*, Kokkos::LayoutRight, Mem>> lens_j;
  for (int j = 0; j < ql; ++j) {
    lens_j.emplace_back("lens_j", s.batch);
    Kokkos::deep_copy(lens_j.back(), std::max(s.context - ql + j + 1, 0));
  }
  const int width = static_cast<int>(inputs[0].tables.extent(1));
  uq::DecodeConfig cfg;
  cfg.check = false;
  if (mode == QueriesMode::PerTokenGeneric || mode == QueriesMode::OneCallGeneric) cfg.backend = uq::Backend::Generic;
  const Exec exec;
  uq::DecodeShape shape{s.batch, s.kv_heads, s.qg, s.block_size, width};
  const uq::DecodePlan<Exec> per_token(exec, shape, cfg);
  shape.max_query_len = ql;
  cfg.query_len = ql;
  const uq::DecodePlan<Exec> one_call_plan(exec, shape, cfg);
  Kokkos::View<uq::bf16****, Kokkos::LayoutRight, Mem> out("out", s.batch, ql, hq, 256);
  const Kokkos::View<uq::bf16***, Kokkos::LayoutRight, Mem> out_rows(out.data(), s.batch * ql, hq, 256);
  auto run = [&](std::size_t i) {
    const auto& in = inputs[i];
    if (one_call(mode)) {
      const Kokkos::View<const uq::bf16***, Kokkos::LayoutRight, Mem> q_rows(queries[i].data(), s.batch * ql, hq, 256);
      one_call_plan.run(q_rows, in.cache, in.tables, in.lens, out_rows);
    } else {
      for (int j = 0; j < ql; ++j)
        per_token.run(Kokkos::subview(queries[i], Kokkos::ALL, j, Kokkos::ALL, Kokkos::ALL), in.cache, in.tables,
                      lens_j[j], Kokkos::subview(out, Kokkos::ALL, j, Kokkos::ALL, Kokkos::ALL));
    }
  };
  for (std::size_t i = 0; i < inputs.size(); ++i) run(i);  // warm-up
  double total = 0.0;
  std::size_t i = 0;
  for (auto _ : state) {
    const double t = uqbench::time_on_device(exec, [&] { run(i++ % inputs.size()); });
    state.SetIterationTime(t);
    total += t;
  }
  uqbench::set_bandwidth_counters(state, floor_bytes, total);
  state.counters["query_len"] = ql;
  state.counters["kv_reads"] = one_call(mode) ? 1 : ql;  // passes over the cache
  state.counters["partitions"] = one_call_plan.partitions();
  state.counters["cold_copies"] = copies;
  const auto& plan = one_call(mode) ? one_call_plan : per_token;
  state.SetLabel(std::string(mode_name(mode)) + ": " + uq::path_name(plan.path()) + " on " + plan.device().name);
  if (!plan.status().ok()) state.SkipWithError(("device status: " + plan.status().describe()).c_str());
}

void register_all(bool full) {
  const bool host = uqbench::on_host() && !full;
  auto reg = [](const std::string& name, auto fn) {
    benchmark::RegisterBenchmark(name.c_str(), fn)->UseManualTime()->Unit(benchmark::kMicrosecond);
  };
  // write_kv: latency-bound at decode batch sizes, bandwidth-bound at prefill sizes
  for (int tokens : host ? std::vector<int>{1, 64, 4096} : std::vector<int>{1, 64, 4096, 65536})
    reg("write_kv/T" + std::to_string(tokens) + "/Hk1", [=](benchmark::State& st) { bench_write_kv(st, tokens, 1); });

  std::vector<DecodeShapeArgs> shapes;
  const std::vector<int> batches = host ? std::vector<int>{1, 4} : std::vector<int>{1, 4, 16, 64};
  const std::vector<int> contexts = host ? std::vector<int>{4096, 16384} : std::vector<int>{4096, 16384, 65536, 131072};
  for (int b : batches)
    for (int ctx : contexts) shapes.push_back({b, ctx, 6, 1, 64});
  for (int qg : {8, 16}) shapes.push_back({4, host ? 16384 : 65536, qg, 1, 64});
  shapes.push_back({4, 75000, 6, 1, 64});  // the headline shape (Qwen3.6-27B layer, one rank)
  if (!host) shapes.push_back({1, 131072, 6, 1, 64});
  if (!host)  // block sizes and KV heads around the headline
    for (const DecodeShapeArgs x : {DecodeShapeArgs{4, 75000, 6, 1, 16}, DecodeShapeArgs{4, 75000, 6, 1, 256},
                                    DecodeShapeArgs{4, 75000, 6, 4, 64}, DecodeShapeArgs{4, 75000, 16, 1, 64}})
      shapes.push_back(x);
  for (const auto& s : shapes) {
    reg("decode/" + s.name(), [=](benchmark::State& st) { bench_decode(st, s, Stage::Both, uq::Backend::Auto); });
    if (uq::impl::DecodeDispatch<Exec>::tuned_path(uq::impl::device_info(Exec())) != uq::Path::Generic)
      reg("decode_generic/" + s.name(),
          [=](benchmark::State& st) { bench_decode(st, s, Stage::Both, uq::Backend::Generic); });
  }
  // The engine-sized plan; a host backend runs fewer sequences (a Serial call over 256
  // sequences of 4k tokens takes ~10 s, over 256 x 128k tokens hours): 32 short ones, and 9
  // full ones (more than 8 keeps the spec's cap of 256 partitions, as with 256 sequences).
  for (const char* kind : {"short", "full"}) {
    EngineArgs e{kind, host ? (std::string(kind) == "short" ? 32 : 9) : 256};
    benchmark::RegisterBenchmark(("decode_engine/" + e.name()).c_str(),
                                 [=](benchmark::State& st) { bench_engine(st, e); })
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->Iterations(host ? 3 : 20);
  }
  // Several query tokens per sequence: the headline shape and 64 x 131k on devices; a host runs a
  // small shape (a Serial call at the headline shape takes ~0.1 s a query token).
  const bool tuned = uq::impl::DecodeDispatch<Exec>::tuned_path(uq::impl::device_info(Exec())) != uq::Path::Generic;
  const std::vector<DecodeShapeArgs> mtp_shapes =
      host ? std::vector<DecodeShapeArgs>{{4, 16384, 6, 1, 64}}
           : std::vector<DecodeShapeArgs>{{4, 75000, 6, 1, 64}, {64, 131072, 6, 1, 64}};
  for (const auto& s : mtp_shapes)
    for (int ql : {1, 2, 4})
      for (QueriesMode m : {QueriesMode::OneCall, QueriesMode::OneCallGeneric, QueriesMode::PerToken,
                            QueriesMode::PerTokenGeneric}) {
        // per_token and one_call are generic already
        if ((m == QueriesMode::PerTokenGeneric || m == QueriesMode::OneCallGeneric) && !tuned) continue;
        if (ql == 1 && m == QueriesMode::PerToken) continue;  // the one call is that already
        reg("decode_queries/QL" + std::to_string(ql) + "/" + mode_name(m) + "/" + s.name(),
            [=](benchmark::State& st) { bench_queries(st, s, ql, m); });
      }
  for (const DecodeShapeArgs s : {DecodeShapeArgs{4, 75000, 6, 1, 64}, DecodeShapeArgs{1, host ? 16384 : 131072, 6, 1, 64}}) {
    reg("decode_partitions/" + s.name(),
        [=](benchmark::State& st) { bench_decode(st, s, Stage::Partitions, uq::Backend::Auto); });
    reg("decode_reduce/" + s.name(), [=](benchmark::State& st) { bench_decode(st, s, Stage::Reduce, uq::Backend::Auto); });
  }
}

}  // namespace

int main(int argc, char** argv) { return uqbench::benchmark_main(argc, argv, register_all); }
