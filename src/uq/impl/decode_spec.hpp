// Decode dispatch: runs the path chosen by select_path (uq/backend.hpp) — the
// generic Kokkos kernels, or a tuned launcher on the execution space's own stream
// where one was built (arch/gfx950, arch/sm90).
#pragma once

#include "uq/backend.hpp"
#include "uq/error.hpp"
#include "uq/impl/decode_generic.hpp"
#include "uq/impl/decode_launch.hpp"
#include "uq/impl/device_info.hpp"
#include "uq/impl/reduce_generic.hpp"

#include <Kokkos_Core.hpp>

#include <string>
#include <type_traits>

#if defined(KOKKOS_ENABLE_HIP) && defined(UQ_ENABLE_GFX950)
// The gfx950 kernels' launchers (library uq::gfx950, whose usage requirements define
// UQ_ENABLE_GFX950 and put arch/ on the include path).
#include "gfx950/decode_launch_args.hpp"
#include "gfx950/launch_decode.hpp"
#endif
#if defined(KOKKOS_ENABLE_CUDA) && defined(UQ_ENABLE_SM90)
// The Hopper kernels' launchers (library uq_sm90, whose usage requirements define
// UQ_ENABLE_SM90 and put arch/ on the include path).
#include "sm90/launch_checks.hpp"
#include "sm90/launch_decode.hpp"
#endif

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
struct DecodeSpec {
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
#if defined(KOKKOS_ENABLE_HIP) && defined(UQ_ENABLE_GFX950)
      if constexpr (std::is_same<ExecSpace, HipSpace>::value) {
        if (path == Path::Gfx950) {
          if (direct) {
            (void)gfx950::make_decode_kernel_args(
                gfx950_partitions(exec, q, cache, block_tables, seq_lens, partials, counts, p, num_seqs, out, lse));
          } else {
            (void)gfx950::make_decode_kernel_args(gfx950_partitions(exec, q, cache, block_tables, seq_lens, partials,
                                                                    counts, p, num_seqs, no_out, no_lse));
            (void)gfx950::make_reduce_kernel_args(gfx950_reduce(exec, partials, out, lse, p, num_seqs));
          }
        }
      }
#endif
#if defined(KOKKOS_ENABLE_CUDA) && defined(UQ_ENABLE_SM90)
      if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value) {
        if (path == Path::Sm90) {
          if (direct) {
            (void)sm90::make_decode_kernel_args(
                sm90_partitions(exec, q, cache, block_tables, seq_lens, partials, counts, p, num_seqs, out, lse));
          } else {
            (void)sm90::make_decode_kernel_args(sm90_partitions(exec, q, cache, block_tables, seq_lens, partials,
                                                                counts, p, num_seqs, no_out, no_lse));
            (void)sm90::make_reduce_kernel_args(sm90_reduce(exec, partials, out, lse, p, num_seqs));
          }
        }
      }
#endif
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
#if defined(KOKKOS_ENABLE_HIP) && defined(UQ_ENABLE_GFX950)
    if constexpr (std::is_same<ExecSpace, HipSpace>::value) {
      if (path == Path::Gfx950) {
        gfx950::launch_decode_partitions(
            gfx950_partitions(exec, q, cache, block_tables, seq_lens, partials, counts, p, num_seqs, out, lse));
        return;
      }
    }
#endif
#if defined(KOKKOS_ENABLE_CUDA) && defined(UQ_ENABLE_SM90)
    if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value) {
      if (path == Path::Sm90) {
        sm90::launch_decode_partitions(
            sm90_partitions(exec, q, cache, block_tables, seq_lens, partials, counts, p, num_seqs, out, lse));
        return;
      }
    }
#endif
    (void)path;  // select_path gives a tuned path only where this build has its launcher
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
#if defined(KOKKOS_ENABLE_HIP) && defined(UQ_ENABLE_GFX950)
    if constexpr (std::is_same<ExecSpace, HipSpace>::value) {
      if (path == Path::Gfx950) {
        gfx950::launch_decode_reduce(gfx950_reduce(exec, partials, out, lse, p, num_seqs));
        return;
      }
    }
#endif
#if defined(KOKKOS_ENABLE_CUDA) && defined(UQ_ENABLE_SM90)
    if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value) {
      if (path == Path::Sm90) {
        sm90::launch_decode_reduce(sm90_reduce(exec, partials, out, lse, p, num_seqs));
        return;
      }
    }
#endif
    (void)path;
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
  // The tuned paths' launch descriptions, built one way for the launch and for the rejection.
  // out.data() != nullptr: the one-kernel run (P = 1) writes out (and lse) itself.
#if defined(KOKKOS_ENABLE_HIP) && defined(UQ_ENABLE_GFX950)
  template <class Q, class Tables, class Lens, class Counts, class Out, class Lse>
  static DecodePartitionsLaunch gfx950_partitions(const ExecSpace& exec, const Q& q, const CacheAddressing& cache,
                                                  const Tables& block_tables, const Lens& seq_lens,
                                                  const DecodePartials<MemSpace>& partials, const Counts& counts,
                                                  const DecodeParams& p, int num_seqs, const Out& out, const Lse& lse) {
    auto l = gfx950::decode_partitions_launch(q, cache, block_tables, seq_lens, partials, counts, p, num_seqs,
                                              static_cast<void*>(exec.hip_stream()));
    if (out.data() != nullptr) set_direct_outputs(l, out, lse);
    return l;
  }
  template <class Out, class Lse>
  static DecodeReduceLaunch gfx950_reduce(const ExecSpace& exec, const DecodePartials<MemSpace>& partials,
                                          const Out& out, const Lse& lse, const DecodeParams& p, int num_seqs) {
    auto l = gfx950::decode_reduce_launch(partials, out, p, num_seqs, static_cast<void*>(exec.hip_stream()));
    set_reduce_lse(l, lse);
    return l;
  }
#endif
#if defined(KOKKOS_ENABLE_CUDA) && defined(UQ_ENABLE_SM90)
  template <class Q, class Tables, class Lens, class Counts, class Out, class Lse>
  static DecodePartitionsLaunch sm90_partitions(const ExecSpace& exec, const Q& q, const CacheAddressing& cache,
                                                const Tables& block_tables, const Lens& seq_lens,
                                                const DecodePartials<MemSpace>& partials, const Counts& counts,
                                                const DecodeParams& p, int num_seqs, const Out& out, const Lse& lse) {
    auto l = sm90::decode_partitions_launch(q, cache, block_tables, seq_lens, partials, counts, p, num_seqs,
                                            static_cast<void*>(exec.cuda_stream()));
    if (out.data() != nullptr) set_direct_outputs(l, out, lse);
    return l;
  }
  template <class Out, class Lse>
  static DecodeReduceLaunch sm90_reduce(const ExecSpace& exec, const DecodePartials<MemSpace>& partials,
                                        const Out& out, const Lse& lse, const DecodeParams& p, int num_seqs) {
    auto l = sm90::decode_reduce_launch(partials, out, p, num_seqs, static_cast<void*>(exec.cuda_stream()));
    set_reduce_lse(l, lse);
    return l;
  }
#endif

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
