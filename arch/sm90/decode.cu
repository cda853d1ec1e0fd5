// Launcher of the sm90 decode partition kernel (launch_decode.hpp): picks the kernel instance
// for QG and the copy kind, launches the checked arguments on the caller's stream. Compiled by nvcc for sm_90a into uq_sm90.
#include "sm90/decode_kernel.cuh"
#include "sm90/decode_launch_args.hpp"
#include "sm90/decode_launcher.cuh"
#include "sm90/launch_decode.hpp"

#include <cuda.h>
#include <cuda_runtime.h>

namespace uq::sm90 {
namespace {

using launcher::check;
constexpr const char* kFn = "uq::sm90::launch_decode_partitions";

template <int QG, int kCopy>
void launch_instance(const DecodeKernelArgs& a, const CUtensorMap& slots, std::int64_t blocks, cudaStream_t stream) {
  constexpr int smem = decode_smem_bytes(QG);
  // The ring needs more than the default 48 KB: opt in once per instance (thread-safe static).
  static const cudaError_t opted =
      cudaFuncSetAttribute(decode_partitions_kernel<QG, kCopy>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  check(opted, kFn, "cudaFuncSetAttribute(max dynamic shared memory)");
  decode_partitions_kernel<QG, kCopy><<<static_cast<unsigned>(blocks), kThreads, smem, stream>>>(a, slots);
}

// The instance for the copy kind (decode_copy_kind, decode_args.hpp).
template <int QG>
void launch(const DecodeKernelArgs& a, const CUtensorMap& slots, std::int64_t blocks, cudaStream_t stream) {
  switch (decode_copy_kind(a.flags)) {
    case kCopyRuns: launch_instance<QG, kCopyRuns>(a, slots, blocks, stream); break;
    case kCopyBoxes: launch_instance<QG, kCopyBoxes>(a, slots, blocks, stream); break;
    default: launch_instance<QG, kCopySync>(a, slots, blocks, stream); break;
  }
}

}  // namespace

void launch_decode_partitions(const DecodePartitionsLaunch& l, const DecodeKernelArgs& checked) {
  if (decode_partitions_blocks(l) == 0) return;
  DecodeKernelArgs a = checked;  // (the copy kind and the grid split are settled at launch)
  CUtensorMap slots{};  // (all zero: unused without kTensorRows)
  const std::int64_t blocks = launcher::settle_grid(l, a, slots, kDecodeCtasPerSm, kFn);
  auto stream = static_cast<cudaStream_t>(l.stream);
  switch (l.qg) {
    case 6: launch<6>(a, slots, blocks, stream); break;
    case 8: launch<8>(a, slots, blocks, stream); break;
    default: launch<16>(a, slots, blocks, stream); break;  // qg checked: 16
  }
  check(cudaGetLastError(), kFn, "kernel launch");
}

}  // namespace uq::sm90
