// gfx950 build of the partition reducer (reduce_kernel.hpp), and, when compiled for the
// library with UQ_GFX950_LAUNCHER, its launcher declared in launch_decode.hpp.
#if defined(UQ_GFX950_LAUNCHER)
// The HIP runtime header comes first: clang emits host stubs for the kernels below.
#include "gfx950/decode_hip_launch.hpp"
#endif
#include "gfx950/reduce_kernel.hpp"

// Four waves a workgroup, and at most 2 waves a SIMD (256 VGPRs): a plan's reducer grid is a few
// workgroups a CU (B x Hq x 8 chunks: 768 at 16 x 131k on 256 CUs), so occupancy is not what
// limits it; registers for the 16-byte loads in flight are (with 16 loads a batch, at the
// compiler's default target of 128 VGPRs, it issued them two at a time; now 8 a batch, 84 VGPRs,
// and the attribute keeps room for more). Two builds by the partition count:
// P <= 1024 (the default plans: P <= 512) and P <= 4096 (the spec's largest override).
#define UQ_GFX950_REDUCE_KERNEL                                                                \
  extern "C" __attribute__((global)) __attribute__((amdgpu_flat_work_group_size(256, 256))) \
  __attribute__((amdgpu_waves_per_eu(1, 2))) void

UQ_GFX950_REDUCE_KERNEL uq_gfx950_decode_reduce(uq::gfx950::ReduceKernelArgs args) {
  uq::gfx950::decode_reduce_kernel<uq::gfx950::reduce_ml_loads(uq::gfx950::kReduceNarrowPartitions)>(args);
}
UQ_GFX950_REDUCE_KERNEL uq_gfx950_decode_reduce_p4096(uq::gfx950::ReduceKernelArgs args) {
  uq::gfx950::decode_reduce_kernel<uq::gfx950::reduce_ml_loads(uq::gfx950::kReduceMaxPartitions)>(args);
}

#if defined(UQ_GFX950_LAUNCHER)
#include "gfx950/decode_launch_args.hpp"

namespace uq::gfx950 {

void launch_decode_reduce(const DecodeReduceLaunch& l, const ReduceKernelArgs& args) {
  const Grid3 grid = decode_reduce_grid(l);
  if (grid.empty()) return;
  const dim3 blocks(grid.x, grid.y, grid.z), threads(kReduceLanes, 1, 1);
  const hipStream_t stream = static_cast<hipStream_t>(l.stream);
  if (l.partitions <= static_cast<int>(kReduceNarrowPartitions))
    hipLaunchKernelGGL(uq_gfx950_decode_reduce, blocks, threads, 0, stream, args);
  else
    hipLaunchKernelGGL(uq_gfx950_decode_reduce_p4096, blocks, threads, 0, stream, args);
  check_launch("uq::gfx950::launch_decode_reduce");
}

}  // namespace uq::gfx950
#endif
