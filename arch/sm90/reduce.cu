// Launcher of the sm90 partition reducer (launch_decode.hpp). Compiled by nvcc for sm_90a
// into uq_sm90. It is launched with programmatic stream serialization (programmatic dependent
// launch): its blocks may be scheduled while the partition kernel's last blocks still run
// (that kernel triggers its dependents at once) and wait in griddepcontrol.wait for its
// completion, so the launch latency of the second kernel overlaps the first one's tail. After
// any other kernel the attribute is harmless: the wait then returns at once.
#include "sm90/decode_launch_args.hpp"
#include "sm90/launch_decode.hpp"
#include "sm90/reduce_kernel.cuh"

#include <cuda_runtime.h>

namespace uq::sm90 {

void launch_decode_reduce(const DecodeReduceLaunch& l, const ReduceKernelArgs& a) {
  const std::int64_t rows = static_cast<std::int64_t>(l.num_seqs) * l.num_kv_heads * l.qg;
  if (rows == 0) return;
  // Very many rows: one warp per row (up to kReduceWarpRowMaxPartitions partitions); many: one
  // block per row; few: 8 blocks of 32 dims per row (the same bits every way, reduce_kernel.cuh).
  const bool whole_rows = rows >= kReduceWholeRowMinRows;
  const bool warp_rows = rows >= kReduceWarpRowMinRows && l.partitions <= kReduceWarpRowMaxPartitions;
  cudaLaunchConfig_t cfg{};
  if (warp_rows) {
    cfg.gridDim = dim3(static_cast<unsigned>((rows + kReduceThreads / 32 - 1) / (kReduceThreads / 32)));
    cfg.dynamicSmemBytes = static_cast<std::size_t>(reduce_detail::reduce_warp_rows_smem_bytes(l.partitions));  // <= 32 KB
  } else {
    cfg.gridDim = dim3(static_cast<unsigned>(whole_rows ? rows : rows * kReduceChunks));
    cfg.dynamicSmemBytes = whole_rows ? static_cast<std::size_t>(reduce_detail::reduce_rows_smem_bytes(l.partitions)) : 0;  // <= 32 KB
  }
  cfg.blockDim = dim3(kReduceThreads);
  cfg.stream = static_cast<cudaStream_t>(l.stream);
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  cudaError_t e = warp_rows    ? cudaLaunchKernelEx(&cfg, decode_reduce_warp_rows_kernel, a)
                 : whole_rows ? cudaLaunchKernelEx(&cfg, decode_reduce_rows_kernel, a)
                              : cudaLaunchKernelEx(&cfg, decode_reduce_chunks_kernel, a);
  if (e == cudaSuccess) e = cudaGetLastError();
  if (e != cudaSuccess)
    throw uq::Error("uq::sm90::launch_decode_reduce", "kernel launch", "cudaSuccess (an sm_90 device)",
                    std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e));
}

}  // namespace uq::sm90
