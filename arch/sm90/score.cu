// Launcher of the sm90 NVFP4 index scorer (launch_score.hpp): picks the kernel instance (query
// column tiles, copy kind), launches the checked arguments on the caller's stream. Compiled by
// nvcc for sm_90a (wgmma) into uq_sm90.
#include "sm90/launch_score.hpp"
#include "sm90/score_launch_args.hpp"
#include "sm90/score_kernel.cuh"

#include <cuda_runtime.h>

#include <string>

namespace uq::sm90 {
namespace {

void throw_cuda(const char* what, cudaError_t e) {
  throw uq::Error("uq::sm90::launch_score", what, "cudaSuccess (an sm_90 device)",
                  std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e));
}

template <int NT, bool kAsync>
void launch(const ScoreKernelArgs& a, std::int64_t blocks, cudaStream_t stream) {
  constexpr int smem = scorer::kDynamicBytes<NT>;  // rows and query are static (score_args.hpp)
  // The ring needs more than the default 48 KB. The limit is a per-device attribute of the
  // kernel, so it is raised at every launch (a host-side call, no synchronisation): a process
  // that drives several GPUs gets it on each.
  const cudaError_t attr =
      cudaFuncSetAttribute(score_kernel<NT, kAsync>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (attr != cudaSuccess) throw_cuda("cudaFuncSetAttribute", attr);
  score_kernel<NT, kAsync><<<static_cast<unsigned>(blocks), scorer::kThreads, smem, stream>>>(a);
}

template <int NT>
void launch_tiles(const ScoreKernelArgs& a, std::int64_t blocks, cudaStream_t stream, bool async) {
  if (async) launch<NT, true>(a, blocks, stream);
  else launch<NT, false>(a, blocks, stream);  // a cache whose pages are not 16-byte aligned: byte copies
}

}  // namespace

void launch_score(const ScoreLaunch& l, const ScoreKernelArgs& a) {
  const std::int64_t blocks = score_grid_blocks(l);
  if (blocks == 0) return;
  auto stream = static_cast<cudaStream_t>(l.stream);
  const bool async = reinterpret_cast<std::uintptr_t>(l.index_cache) % 16 == 0;
  switch ((l.query_len * l.heads + scorer::kColumnsPerTile - 1) / scorer::kColumnsPerTile) {
    case 1: launch_tiles<1>(a, blocks, stream, async); break;
    case 2: launch_tiles<2>(a, blocks, stream, async); break;
    case 3: launch_tiles<3>(a, blocks, stream, async); break;
    default: launch_tiles<4>(a, blocks, stream, async); break;  // checked: <= 32 columns
  }
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw_cuda("kernel launch", e);
}

}  // namespace uq::sm90
