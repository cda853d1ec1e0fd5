// Decode dispatch: runs the path chosen by choose_path (uq/backend.hpp) — the generic Kokkos
// kernels, or a tuned path's launchers on the execution space's own stream, found through the
// tuned-path seam (uq/impl/tuned_path.hpp) without naming any path here.
#pragma once

#include "uq/backend.hpp"
#include "uq/error.hpp"
#include "uq/impl/decode_generic.hpp"
#include "uq/core/decode_launch.hpp"
#include "uq/impl/device_info.hpp"
#include "uq/impl/reduce_generic.hpp"
#include "uq/impl/tuned_path.hpp"

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
};

// View types that stand for "no such output" (data() == nullptr) in the calls below.
template <class MemSpace>
using NoDecodeOut = Kokkos::View<bf16***, Kokkos::LayoutStride, MemSpace>;
template <class MemSpace>
using NoDecodeLse = Kokkos::View<float**, Kokkos::LayoutStride, MemSpace>;

template <class ExecSpace>
struct DecodeDispatch {
  using MemSpace = typename ExecSpace::memory_space;

  // Why the tuned path `path` cannot take this call ("" when it can; always "" for Generic): the
  // tuned launchers' own checks on the launches they would get, run without launching, so that
  // Backend::Auto falls back to the generic path instead of throwing. out.data() != nullptr:
  // the one-kernel run (P = 1), no reducer.
  template <class Q, class Tables, class Lens, class Counts, class Out, class Lse>
  static std::string rejection(Path path, const ExecSpace& exec, const Q& q, const CacheAddressing& cache,
                               const Tables& block_tables, const Lens& seq_lens,
                               const DecodePartials<MemSpace>& partials, const Counts& counts, const DecodeParams& p,
                               int num_seqs, const Out& out, const Lse& lse, bool direct) {
    (void)path, (void)exec, (void)q, (void)cache, (void)block_tables, (void)seq_lens, (void)partials, (void)counts;
    (void)p, (void)num_seqs, (void)out, (void)lse, (void)direct;
    const NoDecodeOut<MemSpace> no_out;
    const NoDecodeLse<MemSpace> no_lse;
    try {
      with_tuned_path<ExecSpace>(path, [&](auto tuned) {
        using T = decltype(tuned);
        if (direct) {
          T::check(partitions_launch<T>(exec, q, cache, block_tables, seq_lens, partials, counts, p, num_seqs, out, lse));
        } else {
          T::check(partitions_launch<T>(exec, q, cache, block_tables, seq_lens, partials, counts, p, num_seqs, no_out,
                                        no_lse));
          T::check(reduce_launch<T>(exec, partials, out, lse, p, num_seqs));
        }
      });
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }

  // The partition kernel. out.data() != nullptr (only with P = 1): it writes out, and lse when
  // lse.data() != nullptr, itself; otherwise the partial rows of `partials`.
  template <class Q, class Tables, class Lens, class Counts, class Out, class Lse>
  static void partitions(Path path, const ExecSpace& exec, const Q& q, const CacheAddressing& cache,
                         const Tables& block_tables, const Lens& seq_lens, const DecodePartials<MemSpace>& partials,
                         const Counts& counts, const DecodeParams& p, int num_seqs, const Out& out, const Lse& lse) {
    const bool tuned = run_tuned_path<ExecSpace>("uq::decode", path, [&](auto t) {
      using T = decltype(t);
      T::launch(partitions_launch<T>(exec, q, cache, block_tables, seq_lens, partials, counts, p, num_seqs, out, lse));
    });
    if (tuned) return;
    switch (p.qg) {  // the query group size is a compile-time constant of the kernel
      case 6: return generic<6>(exec, q, cache, block_tables, seq_lens, partials, counts, p, num_seqs, out, lse);
      case 8: return generic<8>(exec, q, cache, block_tables, seq_lens, partials, counts, p, num_seqs, out, lse);
      case 16: return generic<16>(exec, q, cache, block_tables, seq_lens, partials, counts, p, num_seqs, out, lse);
      default: throw Error("uq::decode", "qg", "6, 8 or 16", std::to_string(p.qg));
    }
  }

  // The reducer: out, and lse when lse.data() != nullptr.
  template <class Out, class Lse>
  static void reduce(Path path, const ExecSpace& exec, const DecodePartials<MemSpace>& partials, const Out& out,
                     const Lse& lse, const DecodeParams& p, int num_seqs) {
    const bool tuned = run_tuned_path<ExecSpace>("uq::decode", path, [&](auto t) {
      using T = decltype(t);
      T::launch(reduce_launch<T>(exec, partials, out, lse, p, num_seqs));
    });
    if (tuned) return;
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

 private:
  // A tuned path's launch descriptions, built one way for the launch and for the rejection.
  // out.data() != nullptr: the one-kernel run (P = 1) writes out (and lse) itself.
  template <class Tuned, class Q, class Tables, class Lens, class Counts, class Out, class Lse>
  static DecodePartitionsLaunch partitions_launch(const ExecSpace& exec, const Q& q, const CacheAddressing& cache,
                                                  const Tables& block_tables, const Lens& seq_lens,
                                                  const DecodePartials<MemSpace>& partials, const Counts& counts,
                                                  const DecodeParams& p, int num_seqs, const Out& out, const Lse& lse) {
    auto l = decode_partitions_launch(q, cache, block_tables, seq_lens, partials, counts, p, num_seqs,
                                      Tuned::stream(exec));
    if (out.data() != nullptr) set_direct_outputs(l, out, lse);
    return l;
  }
  template <class Tuned, class Out, class Lse>
  static DecodeReduceLaunch reduce_launch(const ExecSpace& exec, const DecodePartials<MemSpace>& partials,
                                          const Out& out, const Lse& lse, const DecodeParams& p, int num_seqs) {
    auto l = decode_reduce_launch(partials, out, p, num_seqs, Tuned::stream(exec));
    set_reduce_lse(l, lse);
    return l;
  }

  template <int QG, class Q, class Tables, class Lens, class Counts, class Out, class Lse>
  static void generic(const ExecSpace& exec, const Q& q, const CacheAddressing& cache, const Tables& block_tables,
                      const Lens& seq_lens, const DecodePartials<MemSpace>& partials, const Counts& counts,
                      const DecodeParams& p, int num_seqs, const Out& out, const Lse& lse) {
    DecodePartitionsGeneric<QG, ExecSpace, Q, Tables, Lens, Counts, Out, Lse> k;
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
    if (k.direct && p.partitions != 1)
      throw Error("uq::decode", "partitions", "1 when the partition kernel writes out", std::to_string(p.partitions));
    k.launch(exec, num_seqs);
  }
};

}  // namespace impl
}  // namespace uq
