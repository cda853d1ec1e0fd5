// Decode dispatch: runs the path chosen by select_path (uq/backend.hpp) — the
// generic Kokkos kernels, or a tuned launcher on the execution space's own stream
// where one was built (arch/gfx950, arch/sm90).
#pragma once

#include "uq/backend.hpp"
#include "uq/error.hpp"
#include "uq/impl/decode_generic.hpp"
#include "uq/impl/device_info.hpp"
#include "uq/impl/reduce_generic.hpp"

#include <Kokkos_Core.hpp>

#include <string>
#include <type_traits>

#if defined(KOKKOS_ENABLE_HIP) && defined(UQ_ENABLE_GFX950)
// The gfx950 kernels' launchers (library uq::gfx950, whose usage requirements define
// UQ_ENABLE_GFX950 and put arch/ on the include path).
#include "gfx950/launch_decode.hpp"
#endif
#if defined(KOKKOS_ENABLE_CUDA) && defined(UQ_ENABLE_SM90)
// The Hopper kernels' launchers (library uq_sm90, whose usage requirements define
// UQ_ENABLE_SM90 and put arch/ on the include path).
#include "sm90/launch_decode.hpp"
#endif

namespace uq {
namespace impl {

// Everything about a decode call that is not a view.
struct DecodeParams {
  int num_kv_heads = 0;
  int qg = 0;
  int max_blocks_per_seq = 0;
  int partitions = 0;
  int tgpp = 0;
  float scale = 0.0f;
  bool q_rotated = false;
};

template <class ExecSpace>
struct DecodeSpec {
  using MemSpace = typename ExecSpace::memory_space;

  template <class Q, class Tables, class Lens, class Counts>
  static void partitions(Path path, const ExecSpace& exec, const Q& q, const CacheAddressing& cache,
                         const Tables& block_tables, const Lens& seq_lens, const DecodePartials<MemSpace>& out,
                         const Counts& counts, const DecodeParams& p, int num_seqs) {
#if defined(KOKKOS_ENABLE_HIP) && defined(UQ_ENABLE_GFX950)
    if constexpr (std::is_same<ExecSpace, HipSpace>::value) {
      if (path == Path::Gfx950) {
        gfx950::launch_decode_partitions(gfx950::decode_partitions_launch(
            q, cache, block_tables, seq_lens, out, counts, p, num_seqs, static_cast<void*>(exec.hip_stream())));
        return;
      }
    }
#endif
#if defined(KOKKOS_ENABLE_CUDA) && defined(UQ_ENABLE_SM90)
    if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value) {
      if (path == Path::Sm90) {
        sm90::launch_decode_partitions(sm90::decode_partitions_launch(
            q, cache, block_tables, seq_lens, out, counts, p, num_seqs, static_cast<void*>(exec.cuda_stream())));
        return;
      }
    }
#endif
    (void)path;  // select_path gives a tuned path only where this build has its launcher
    switch (p.qg) {  // the query group size is a compile-time constant of the kernel
      case 6: return generic<6>(exec, q, cache, block_tables, seq_lens, out, counts, p, num_seqs);
      case 8: return generic<8>(exec, q, cache, block_tables, seq_lens, out, counts, p, num_seqs);
      case 16: return generic<16>(exec, q, cache, block_tables, seq_lens, out, counts, p, num_seqs);
      default: throw Error("uq::decode", "qg", "6, 8 or 16", std::to_string(p.qg));
    }
  }

  template <class Out>
  static void reduce(Path path, const ExecSpace& exec, const DecodePartials<MemSpace>& partials, const Out& out,
                     const DecodeParams& p, int num_seqs) {
#if defined(KOKKOS_ENABLE_HIP) && defined(UQ_ENABLE_GFX950)
    if constexpr (std::is_same<ExecSpace, HipSpace>::value) {
      if (path == Path::Gfx950) {
        gfx950::launch_decode_reduce(
            gfx950::decode_reduce_launch(partials, out, p, num_seqs, static_cast<void*>(exec.hip_stream())));
        return;
      }
    }
#endif
#if defined(KOKKOS_ENABLE_CUDA) && defined(UQ_ENABLE_SM90)
    if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value) {
      if (path == Path::Sm90) {
        sm90::launch_decode_reduce(
            sm90::decode_reduce_launch(partials, out, p, num_seqs, static_cast<void*>(exec.cuda_stream())));
        return;
      }
    }
#endif
    (void)path;
    ReduceGeneric<ExecSpace, Out> k;
    k.partials = partials;
    k.out = out;
    k.num_kv_heads = p.num_kv_heads;
    k.qg = p.qg;
    k.partitions = p.partitions;
    k.launch(exec, num_seqs);
  }

 private:
  template <int QG, class Q, class Tables, class Lens, class Counts>
  static void generic(const ExecSpace& exec, const Q& q, const CacheAddressing& cache, const Tables& block_tables,
                      const Lens& seq_lens, const DecodePartials<MemSpace>& out, const Counts& counts,
                      const DecodeParams& p, int num_seqs) {
    DecodePartitionsGeneric<QG, ExecSpace, Q, Tables, Lens, Counts> k;
    k.q = q;
    k.cache = cache;
    k.block_tables = block_tables;
    k.seq_lens = seq_lens;
    k.partials = out;
    k.counts = counts;
    k.max_blocks_per_seq = p.max_blocks_per_seq;
    k.num_kv_heads = p.num_kv_heads;
    k.partitions = p.partitions;
    k.tgpp = p.tgpp;
    k.scale = p.scale;
    k.q_rotated = p.q_rotated;
    k.launch(exec, num_seqs);
  }
};

}  // namespace impl
}  // namespace uq
