// Launchers of the Hopper (sm_90) UltraQuant decode kernels, in plain C++ (no CUDA types):
// what the decode dispatch calls (through tuned_path.hpp) for Path::Sm90 on a Kokkos CUDA execution space.
// They are defined in decode.cu and reduce.cu (library uq_sm90) and launch on `stream`, the
// execution space's cudaStream_t passed as void*. The launch descriptions and their
// construction from views are shared with the other tuned paths (uq/core/decode_launch.hpp).
// Each launcher throws uq::Error for arguments the kernels cannot address (naming the
// argument) and when the CUDA launch itself fails. Nothing is allocated and nothing
// synchronises, so both launches can be captured in a CUDA graph.
#pragma once

#include "uq/core/decode_launch.hpp"

namespace uq::sm90 {

// Partition kernel: 128-thread blocks, each over a strided set of the partitions of one
// (sequence, KV head) (decode_grid.hpp). Reducer: 256-thread blocks, one per (sequence, query
// head, 32-dim chunk), or one per (sequence, query head) from kReduceWholeRowMinRows rows
// (reduce_kernel.cuh; the same bits).
using uq::impl::decode_partitions_launch;
using uq::impl::decode_reduce_launch;
using uq::impl::DecodePartitionsLaunch;
using uq::impl::DecodeReduceLaunch;

void launch_decode_partitions(const DecodePartitionsLaunch& args);
void launch_decode_reduce(const DecodeReduceLaunch& args);

}  // namespace uq::sm90
