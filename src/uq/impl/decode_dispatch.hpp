// Decode dispatch: a decode call's launch descriptions (uq/core/decode_launch.hpp) through the one
// dispatcher (uq/impl/dispatch.hpp) — a tuned path's kernels on the execution space's own
// stream, or the generic Kokkos kernels below — without naming any path here.
#pragma once

#include "uq/backend.hpp"
#include "uq/error.hpp"
#include "uq/impl/decode_generic.hpp"
#include "uq/core/decode_launch.hpp"
#include "uq/impl/device_info.hpp"
#include "uq/impl/reduce_generic.hpp"
#include "uq/impl/dispatch.hpp"
#include "uq/partitions.hpp"

#include <Kokkos_Core.hpp>

#include <string>
#include <type_traits>

namespace uq {
namespace impl {

// Everything about a decode call that is not a view. max_blocks_per_seq is the width of the
// run's block table (at most the plan's; the partition grid is the plan's).
struct DecodeParams {
  int num_kv_heads = 0;
  int qg = 0;
  int max_blocks_per_seq = 0;
  int partitions = 0;
  int tgpp = 0;
  float scale = 0.0f;
  bool q_rotated = false;
  // Several query tokens per sequence (spec §5.9): the uniform form's tokens per sequence and
  // the largest n_b (1 and 1 for the one-token decode).
  int query_len = 1;
  int max_query_len = 1;
};

// View types that stand for "no such output" (data() == nullptr) in the calls below.
template <class MemSpace>
using NoDecodeOut = Kokkos::View<bf16***, Kokkos::LayoutStride, MemSpace>;
template <class MemSpace>
using NoDecodeLse = Kokkos::View<float**, Kokkos::LayoutStride, MemSpace>;
// query_start_loc's "none": one query token per sequence, or the uniform form.
template <class MemSpace>
using NoQueryStarts = Kokkos::View<const std::int32_t*, Kokkos::LayoutStride, MemSpace>;

// Whether a path's partition-kernel specialisation chooses its own default partitions.
template <class Op, class = void>
struct has_partition_rule : std::false_type {};
template <class Op>
struct has_partition_rule<Op, std::void_t<decltype(&Op::default_partitions)>> : std::true_type {};

template <class ExecSpace>
struct DecodeDispatch {
  using MemSpace = typename ExecSpace::memory_space;
  // The calls: both kernels; the partition kernel alone, writing out itself (P = 1) or partial
  // rows (DecodePlan::run_partitions); the reducer alone (DecodePlan::run_reduce).
  using TwoKernels = TunedCall<ExecSpace, DecodePartitionsLaunch, DecodeReduceLaunch>;
  using Partitions = TunedCall<ExecSpace, DecodePartitionsLaunch>;
  using Reduce = TunedCall<ExecSpace, DecodeReduceLaunch>;
  // Several query tokens per sequence (spec §5.9): a launch type of its own, which no tuned path
  // implements until it specialises it; with and without the reducer.
  using QueriesTwoKernels = TunedCall<ExecSpace, DecodeQueriesLaunch, DecodeReduceLaunch>;
  using Queries = TunedCall<ExecSpace, DecodeQueriesLaunch>;

  // The tuned path Auto takes on this device for decode calls it accepts (Generic: none).
  static Path tuned_path(const DeviceInfo& dev) { return TwoKernels::tuned_path(dev); }

  // The path a plan's runs take before their arguments are looked at (direct: P = 1, one kernel).
  static PathChoice candidate(Backend requested, const DeviceInfo& dev, bool direct) {
    return direct ? Partitions::candidate("uq::decode", requested, dev)
                  : TwoKernels::candidate("uq::decode", requested, dev);
  }

  // The plan's P and TGPP when the user does not override them: the candidate path's own rule
  // where its partition kernel has one (a static default_partitions, spec ultraquant.md §5.7),
  // else `spec`, the spec's default.
  static PartitionChoice default_partitions(Path candidate, std::int64_t max_seqs, int num_kv_heads,
                                            int max_blocks_per_seq, int block_size, int compute_units,
                                            const PartitionChoice& spec) {
    PartitionChoice c = spec;
    with_tuned_path<ExecSpace>(candidate, [&](auto path) {
      using Op = TunedOp<decltype(path)::value, DecodePartitionsLaunch>;
      if constexpr (has_partition_rule<Op>::value)
        c = Op::default_partitions(max_seqs, num_kv_heads, max_blocks_per_seq, block_size, compute_units, spec);
    });
    return c;
  }

  // The path a plan's runs with several query tokens take (as candidate()).
  static PathChoice queries_candidate(Backend requested, const DeviceInfo& dev, bool direct) {
    return direct ? Queries::candidate("uq::decode", requested, dev)
                  : QueriesTwoKernels::candidate("uq::decode", requested, dev);
  }

  // One decode call: with out.data() != nullptr only when P = 1 (`direct`), the partition
  // kernel writes out and lse itself; otherwise it writes the partial rows and the reducer
  // combines them into out (and lse when lse.data() != nullptr). `ran`: the path that ran, and why.
  template <class Q, class Tables, class Lens, class Counts, class Out, class Lse>
  static void run(const ExecSpace& exec, const PathChoice& candidate, Backend requested, PathChoice& ran, const Q& q,
                        const CacheAddressing& cache, const Tables& block_tables, const Lens& seq_lens,
                        const DecodePartials<MemSpace>& partials, const Counts& counts, const DecodeParams& p,
                        int num_seqs, const Out& out, const Lse& lse, bool direct) {
    const NoDecodeOut<MemSpace> no_out;
    const NoDecodeLse<MemSpace> no_lse;
    auto partitions = decode_partitions_launch(q, cache, block_tables, seq_lens, partials, counts, p, num_seqs, nullptr);
    if (direct) {
      set_direct_outputs(partitions, out, lse);
      return Partitions::run("uq::decode", exec, candidate, requested, {partitions}, ran, [&] {
        generic_partitions(exec, q, cache, block_tables, seq_lens, NoQueryStarts<MemSpace>(), partials, counts, p, num_seqs, out, lse);
      });
    }
    auto reduce = reduce_launch(partials, out, lse, p, num_seqs);
    TwoKernels::run("uq::decode", exec, candidate, requested, {partitions, reduce}, ran, [&] {
      generic_partitions(exec, q, cache, block_tables, seq_lens, NoQueryStarts<MemSpace>(), partials, counts, p, num_seqs, no_out, no_lse);
      generic_reduce(exec, partials, out, lse, p, num_seqs);
    });
  }

  // One decode call with several query tokens per sequence (spec §5.9): as run() over the
  // query tokens (q, out and lse have num_query_tokens = q.extent(0) rows), the sequences' rows
  // given by `starts` (query_start_loc; data() == nullptr: p.query_len each).
  template <class Q, class Tables, class Lens, class Starts, class Counts, class Out, class Lse>
  static void run_queries(const ExecSpace& exec, const PathChoice& candidate, Backend requested, PathChoice& ran,
                          const Q& q, const CacheAddressing& cache, const Tables& block_tables, const Lens& seq_lens,
                          const Starts& starts, const DecodePartials<MemSpace>& partials, const Counts& counts,
                          const DecodeParams& p, int num_seqs, const Out& out, const Lse& lse, bool direct) {
    const NoDecodeOut<MemSpace> no_out;
    const NoDecodeLse<MemSpace> no_lse;
    const int num_tokens = static_cast<int>(q.extent(0));
    auto queries = decode_queries_launch(q, cache, block_tables, seq_lens, starts, partials, counts, p, num_seqs, nullptr);
    if (direct) {
      set_direct_outputs(queries, out, lse);
      return Queries::run("uq::decode", exec, candidate, requested, {queries}, ran, [&] {
        generic_partitions(exec, q, cache, block_tables, seq_lens, starts, partials, counts, p, num_seqs, out, lse);
      });
    }
    auto reduce = reduce_launch(partials, out, lse, p, num_tokens);  // one reducer row per query token
    QueriesTwoKernels::run("uq::decode", exec, candidate, requested, {queries, reduce}, ran, [&] {
      generic_partitions(exec, q, cache, block_tables, seq_lens, starts, partials, counts, p, num_seqs, no_out, no_lse);
      generic_reduce(exec, partials, out, lse, p, num_tokens);
    });
  }

  // The partition kernel alone, writing partial rows (at any P). `path`: a tuned path is required
  // to take the call (no fallback: Native), Generic runs the generic kernel.
  template <class Q, class Tables, class Lens, class Counts>
  static void run_partitions(const ExecSpace& exec, Path path, const Q& q, const CacheAddressing& cache,
                             const Tables& block_tables, const Lens& seq_lens, const DecodePartials<MemSpace>& partials,
                             const Counts& counts, const DecodeParams& p, int num_seqs) {
    const NoDecodeOut<MemSpace> no_out;
    const NoDecodeLse<MemSpace> no_lse;
    auto l = decode_partitions_launch(q, cache, block_tables, seq_lens, partials, counts, p, num_seqs, nullptr);
    PathChoice ran;
    Partitions::run("uq::decode", exec, PathChoice{path, ""}, required(path), {l}, ran, [&] {
      generic_partitions(exec, q, cache, block_tables, seq_lens, NoQueryStarts<MemSpace>(), partials, counts, p, num_seqs, no_out, no_lse);
    });
  }

  // The reducer alone: out, and lse when lse.data() != nullptr (as run_partitions for `path`).
  template <class Out, class Lse>
  static void run_reduce(const ExecSpace& exec, Path path, const DecodePartials<MemSpace>& partials, const Out& out,
                         const Lse& lse, const DecodeParams& p, int num_seqs) {
    PathChoice ran;
    Reduce::run("uq::decode", exec, PathChoice{path, ""}, required(path), {reduce_launch(partials, out, lse, p, num_seqs)},
                ran, [&] { generic_reduce(exec, partials, out, lse, p, num_seqs); });
  }

 private:
  static Backend required(Path path) { return path == Path::Generic ? Backend::Generic : Backend::Native; }

  template <class Out, class Lse>
  static DecodeReduceLaunch reduce_launch(const DecodePartials<MemSpace>& partials, const Out& out, const Lse& lse,
                                          const DecodeParams& p, int num_seqs) {
    auto l = decode_reduce_launch(partials, out, p, num_seqs, nullptr);
    set_reduce_lse(l, lse);
    return l;
  }

  // The generic partition kernel; `starts`: query_start_loc, or data() == nullptr (one-token
  // decode, or the uniform form of p.query_len tokens).
  template <class Q, class Tables, class Lens, class Starts, class Counts, class Out, class Lse>
  static void generic_partitions(const ExecSpace& exec, const Q& q, const CacheAddressing& cache,
                                 const Tables& block_tables, const Lens& seq_lens, const Starts& starts,
                                 const DecodePartials<MemSpace>& partials, const Counts& counts, const DecodeParams& p,
                                 int num_seqs, const Out& out, const Lse& lse) {
    switch (p.qg) {  // the query group size is a compile-time constant of the kernel
      case 6: return generic<6>(exec, q, cache, block_tables, seq_lens, starts, partials, counts, p, num_seqs, out, lse);
      case 8: return generic<8>(exec, q, cache, block_tables, seq_lens, starts, partials, counts, p, num_seqs, out, lse);
      case 16:
        return generic<16>(exec, q, cache, block_tables, seq_lens, starts, partials, counts, p, num_seqs, out, lse);
      default: throw Error("uq::decode", "qg", "6, 8 or 16", std::to_string(p.qg));
    }
  }

  template <class Out, class Lse>
  static void generic_reduce(const ExecSpace& exec, const DecodePartials<MemSpace>& partials, const Out& out,
                             const Lse& lse, const DecodeParams& p, int num_seqs) {
    ReduceGeneric<ExecSpace, Out, Lse> k;
    k.partials = partials;
    k.out = out;
    k.lse = lse;
    k.has_lse = lse.data() != nullptr;
    k.num_kv_heads = p.num_kv_heads;
    k.qg = p.qg;
    k.partitions = p.partitions;
    k.launch(exec, num_seqs);
  }

  template <int QG, class Q, class Tables, class Lens, class Starts, class Counts, class Out, class Lse>
  static void generic(const ExecSpace& exec, const Q& q, const CacheAddressing& cache, const Tables& block_tables,
                      const Lens& seq_lens, const Starts& starts, const DecodePartials<MemSpace>& partials,
                      const Counts& counts, const DecodeParams& p, int num_seqs, const Out& out, const Lse& lse) {
    DecodePartitionsGeneric<QG, ExecSpace, Q, Tables, Lens, Counts, Out, Lse, Starts> k;
    k.q = q;
    k.cache = cache;
    k.block_tables = block_tables;
    k.seq_lens = seq_lens;
    k.partials = partials;
    k.counts = counts;
    k.max_blocks_per_seq = p.max_blocks_per_seq;
    k.num_kv_heads = p.num_kv_heads;
    k.partitions = p.partitions;
    k.tgpp = p.tgpp;
    k.scale = p.scale;
    k.q_rotated = p.q_rotated;
    k.direct = out.data() != nullptr;
    k.has_lse = k.direct && lse.data() != nullptr;
    k.out = out;
    k.lse = lse;
    k.query_start_loc = starts;
    k.query_len = p.query_len;
    k.max_query_len = p.max_query_len;
    k.num_query_tokens = static_cast<std::int64_t>(q.extent(0));
    k.num_seqs = num_seqs;
    if (k.direct && p.partitions != 1)
      throw Error("uq::decode", "partitions", "1 when the partition kernel writes out", std::to_string(p.partitions));
    k.launch(exec);
  }
};

}  // namespace impl
}  // namespace uq
