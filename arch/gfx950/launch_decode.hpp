// Launchers of the gfx950 UltraQuant decode kernels, in plain C++ (no HIP types): what the
// dispatch calls (through tuned_path.hpp) for Path::Gfx950 on a Kokkos HIP execution space. They
// are defined in decode.hip and reduce.hip (library uq_gfx950) and launch on `l.stream`, the
// execution space's hipStream_t passed as void*, the kernel arguments that
// decode_launch_args.hpp made from the launch description (the checks are done there, once;
// that header also has the one-argument forms that do both). The launch descriptions and their
// construction from views are shared with the other tuned paths (uq/core/decode_launch.hpp).
// A launcher throws uq::Error when the HIP launch itself fails. decode_emulated.hpp has the same
// functions for the CPU emulator.
#pragma once

#include "gfx950/decode_args.hpp"
#include "uq/core/decode_launch.hpp"

namespace uq::gfx950 {

// Partition kernel: grid (num_seqs, num_kv_heads, partitions) of one wave each. Reducer: grid
// (num_seqs, num_kv_heads * qg, 4) of one wave each.
using uq::impl::decode_partitions_launch;
using uq::impl::decode_reduce_launch;
using uq::impl::DecodePartitionsLaunch;
using uq::impl::DecodeQueriesLaunch;
using uq::impl::DecodeReduceLaunch;

void launch_decode_partitions(const DecodePartitionsLaunch& l, const DecodeKernelArgs& a);
// Several query tokens per sequence (spec §5.9): the same grid, the multi-token kernel.
void launch_decode_queries(const DecodeQueriesLaunch& l, const DecodeQueriesKernelArgs& a);
void launch_decode_reduce(const DecodeReduceLaunch& l, const ReduceKernelArgs& a);

}  // namespace uq::gfx950
