// Launcher of the sm90 partition reducer (launch_decode.hpp). Compiled by nvcc for sm_90
// into uq_sm90.
#include "sm90/launch_checks.hpp"
#include "sm90/launch_decode.hpp"
#include "sm90/reduce_kernel.cuh"

#include <cuda_runtime.h>

namespace uq::sm90 {

void launch_decode_reduce(const DecodeReduceLaunch& l) {
  const ReduceKernelArgs a = make_reduce_kernel_args(l);
  const std::int64_t blocks = decode_reduce_blocks(l);
  if (blocks == 0) return;
  decode_reduce_kernel<<<static_cast<unsigned>(blocks), kReduceThreads, reduce_smem_bytes(l.partitions),
                         static_cast<cudaStream_t>(l.stream)>>>(a);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    throw uq::Error("uq::sm90::launch_decode_reduce", "kernel launch", "cudaSuccess (an sm_90 device)",
                    std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e));
}

}  // namespace uq::sm90
