// Launchers of the Hopper (sm_90) UltraQuant decode kernels, in plain C++ (no CUDA types):
// what the dispatch calls (through tuned_path.hpp) for Path::Sm90 on a Kokkos CUDA execution
// space. They are defined in decode.cu, decode_queries.cu and reduce.cu (library uq_sm90) and launch on
// `l.stream`, the execution space's cudaStream_t passed as void*, the kernel arguments that
// decode_launch_args.hpp made from the launch description (the checks are done there, once;
// that header also has the one-argument forms that do both). The launch descriptions and
// their construction from views are shared with the other tuned paths
// (uq/core/decode_launch.hpp). A launcher throws uq::Error when the CUDA launch itself fails.
// Nothing is allocated and nothing synchronises, so both launches can be captured in a CUDA
// graph.
#pragma once

#include "sm90/decode_args.hpp"
#include "uq/core/decode_launch.hpp"

namespace uq::sm90 {

// Partition kernel: 128-thread blocks, each over a strided set of the partitions of one
// (sequence, KV head) (decode_grid.hpp). Reducer: 256-thread blocks, one per (sequence, query
// head, 32-dim chunk), or one per (sequence, query head) from kReduceWholeRowMinRows rows
// (reduce_kernel.cuh; the same bits).
// Several query tokens per sequence (spec ultraquant.md §5.9): the partition kernel's variant
// over a sequence's query rows (decode_queries.cu), the same grid; the reducer then runs over the
// query tokens' rows.
using uq::impl::decode_partitions_launch;
using uq::impl::decode_reduce_launch;
using uq::impl::DecodePartitionsLaunch;
using uq::impl::DecodeQueriesLaunch;
using uq::impl::DecodeReduceLaunch;

void launch_decode_partitions(const DecodePartitionsLaunch& l, const DecodeKernelArgs& a);
void launch_decode_queries(const DecodeQueriesLaunch& l, const DecodeQueriesKernelArgs& a);
void launch_decode_reduce(const DecodeReduceLaunch& l, const ReduceKernelArgs& a);

}  // namespace uq::sm90
