// gfx950 build of the partition reducer (reduce_kernel.hpp), and, when compiled for the
// library with UQ_GFX950_LAUNCHER, its launcher declared in launch_decode.hpp.
#if defined(UQ_GFX950_LAUNCHER)
// The HIP runtime header comes first: clang emits host stubs for the kernels below.
#include "gfx950/decode_hip_launch.hpp"
#endif
#include "gfx950/reduce_kernel.hpp"

extern "C" __attribute__((global)) __attribute__((amdgpu_flat_work_group_size(64, 64))) void
uq_gfx950_decode_reduce(uq::gfx950::ReduceKernelArgs args) {
  uq::gfx950::decode_reduce_kernel(args);
}

#if defined(UQ_GFX950_LAUNCHER)
#include "gfx950/decode_launch_args.hpp"

namespace uq::gfx950 {

void launch_decode_reduce(const DecodeReduceLaunch& l, const ReduceKernelArgs& args) {
  const Grid3 grid = decode_reduce_grid(l);
  if (grid.empty()) return;
  hipLaunchKernelGGL(uq_gfx950_decode_reduce, dim3(grid.x, grid.y, grid.z), dim3(64, 1, 1), 0,
                     static_cast<hipStream_t>(l.stream), args);
  check_launch("uq::gfx950::launch_decode_reduce");
}

}  // namespace uq::gfx950
#endif
