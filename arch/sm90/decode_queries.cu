// Launcher of the sm90 multi-token decode partition kernel (spec ultraquant.md §5.9;
// launch_decode.hpp): picks the instance for QG, N (the plan's max_query_len x QG query rows,
// decode_args.hpp: queries_n) and the copy kind, launches the checked arguments on the caller's
// stream. Kept apart from decode.cu, as the gfx950 path keeps its multi-token kernel apart: the
// one-token kernels' unit compiles exactly as before. Compiled by nvcc for sm_90a into uq_sm90.
#include "sm90/decode_kernel.cuh"
#include "sm90/decode_launch_args.hpp"
#include "sm90/decode_launcher.cuh"
#include "sm90/launch_decode.hpp"

#include <cuda.h>
#include <cuda_runtime.h>

namespace uq::sm90 {
namespace {

using launcher::check;
constexpr const char* kFn = "uq::sm90::launch_decode_queries";

template <int QG, int N, int kCopy>
void launch_instance(const DecodeQueriesKernelArgs& a, const CUtensorMap& slots, std::int64_t blocks, cudaStream_t stream) {
  constexpr int smem = decode_smem_layout_n(N).total;
  // The ring needs more than the default 48 KB: opt in once per instance (thread-safe static).
  static const cudaError_t opted =
      cudaFuncSetAttribute(decode_queries_kernel<QG, N, kCopy>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  check(opted, kFn, "cudaFuncSetAttribute(max dynamic shared memory)");
  decode_queries_kernel<QG, N, kCopy><<<static_cast<unsigned>(blocks), kThreads, smem, stream>>>(a, slots);
}

// The instance for the copy kind (decode_copy_kind, decode_args.hpp).
template <int QG, int N>
void launch(const DecodeQueriesKernelArgs& a, const CUtensorMap& slots, std::int64_t blocks, cudaStream_t stream) {
  switch (decode_copy_kind(a.flags)) {
    case kCopyRuns: launch_instance<QG, N, kCopyRuns>(a, slots, blocks, stream); break;
    case kCopyBoxes: launch_instance<QG, N, kCopyBoxes>(a, slots, blocks, stream); break;
    default: launch_instance<QG, N, kCopySync>(a, slots, blocks, stream); break;
  }
}

// The instances of N for QG: 16 and 32 at QG 16 (1 or 2 query tokens), 16, 24 and 32 at QG 6 and
// 8 (make_decode_queries_kernel_args refused more than kQueriesMaxRows rows).
template <int QG>
void launch_rows(int n, const DecodeQueriesKernelArgs& a, const CUtensorMap& slots, std::int64_t blocks, cudaStream_t stream) {
  if (n == 16) return launch<QG, 16>(a, slots, blocks, stream);
  if constexpr (QG != 16) {
    if (n == 24) return launch<QG, 24>(a, slots, blocks, stream);
  }
  launch<QG, 32>(a, slots, blocks, stream);
}

}  // namespace

void launch_decode_queries(const DecodeQueriesLaunch& l, const DecodeQueriesKernelArgs& checked) {
  if (decode_partitions_blocks(l) == 0) return;
  DecodeQueriesKernelArgs a = checked;  // (the copy kind and the grid split are settled at launch)
  CUtensorMap slots{};  // (all zero: unused without kTensorRows)
  const int n = decode_queries_rows(l);
  const std::int64_t blocks = launcher::settle_grid(l, a, slots, decode_queries_ctas_per_sm(n), kFn);
  auto stream = static_cast<cudaStream_t>(l.stream);
  switch (l.qg) {
    case 6: launch_rows<6>(n, a, slots, blocks, stream); break;
    case 8: launch_rows<8>(n, a, slots, blocks, stream); break;
    default: launch_rows<16>(n, a, slots, blocks, stream); break;  // qg checked: 16
  }
  check(cudaGetLastError(), kFn, "kernel launch");
}

}  // namespace uq::sm90
