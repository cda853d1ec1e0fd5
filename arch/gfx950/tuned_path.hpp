// Path::Gfx950's specialisations of the tuned-path seam (uq/impl/tuned_path.hpp): where it runs (a
// Kokkos HIP execution space) and the operations it implements — the decode partition kernel,
// its multi-token variant (spec §5.9, where a sequence's query rows fit one MFMA tile: the
// launcher refuses the others, which then run generic), the reducer and the index scorer of
// library uq_gfx950. Any other launch type is unavailable
// here. Included by uq/impl/tuned_path.hpp in a Kokkos HIP build linked with uq_gfx950.
#pragma once

#include "gfx950/decode_launch_args.hpp"
#include "gfx950/launch_decode.hpp"
#include "gfx950/launch_score.hpp"
#include "gfx950/partition_rule.hpp"
#include "gfx950/score_launch_args.hpp"
#include "uq/backend.hpp"
#include "uq/impl/kokkos_compat.hpp"
#include "uq/partitions.hpp"

#include <Kokkos_Core.hpp>

#include <type_traits>

namespace uq {
namespace impl {

template <>
struct TunedSpace<Path::Gfx950> {
  static constexpr bool built = true;
  template <class ExecSpace>
  static constexpr bool runs_on = std::is_same<ExecSpace, HipSpace>::value;
  static void* stream(const HipSpace& exec) { return static_cast<void*>(exec.hip_stream()); }
};

template <>
struct TunedOp<Path::Gfx950, DecodePartitionsLaunch>
    : LauncherOp<DecodePartitionsLaunch, gfx950::DecodeKernelArgs, &gfx950::make_decode_kernel_args,
                 &gfx950::launch_decode_partitions> {
  // This path's default P and TGPP (spec ultraquant.md §5.7): whole rounds of the workgroups a CU
  // holds, never more partitions than the spec's default (which sized the plan's workspace).
  static PartitionChoice default_partitions(std::int64_t max_seqs, int num_kv_heads, int max_blocks_per_seq,
                                            int block_size, int compute_units, const PartitionChoice& spec) {
    const gfx950::PartitionRuleChoice r =
        gfx950::gfx950_partition_rule(max_seqs, num_kv_heads, max_blocks_per_seq, block_size, compute_units,
                                      gfx950::kDecodeWorkgroupsPerCu, spec.partitions);
    return PartitionChoice{r.partitions, r.tgpp};
  }
};

// Several query tokens per sequence: max_query_len * qg <= 32 (make_decode_queries_kernel_args).
// The plan's P and TGPP are the one-token kernel's (they do not depend on n_b, spec §5.9).
template <>
struct TunedOp<Path::Gfx950, DecodeQueriesLaunch>
    : LauncherOp<DecodeQueriesLaunch, gfx950::DecodeQueriesKernelArgs, &gfx950::make_decode_queries_kernel_args,
                 &gfx950::launch_decode_queries> {};

template <>
struct TunedOp<Path::Gfx950, DecodeReduceLaunch>
    : LauncherOp<DecodeReduceLaunch, gfx950::ReduceKernelArgs, &gfx950::make_reduce_kernel_args,
                 &gfx950::launch_decode_reduce> {};

// The scorer's knobs are this path's own, chosen from the shape (gfx950/score_knobs.hpp).
template <>
struct TunedOp<Path::Gfx950, ScoreLaunch> {
  static constexpr bool available = true;
  struct Prepared {
    gfx950::ScoreLaunch launch;
    gfx950::scorer::ScoreKernelArgs args;
  };
  static Prepared prepare(const ScoreLaunch& l) {
    const gfx950::ScoreLaunch k = with_chosen_knobs(l, &gfx950::choose_score_knobs);
    return Prepared{k, gfx950::make_score_kernel_args(k)};
  }
  template <class ExecSpace>
  static void launch(const ExecSpace&, const ScoreLaunch&, const Prepared& p) {
    gfx950::launch_score(p.launch, p.args);
  }
};

}  // namespace impl
}  // namespace uq
