// gfx950 build of the NVFP4 index scorer (score_kernel.hpp): one entry point per padded
// column count R (H * QL rounded up to a power of two) and row-buffer choice, and, when
// compiled for the library with UQ_GFX950_LAUNCHER (host + device, HIP runtime headers), the
// launcher declared in launch_score.hpp. The ISA checks compile the device code alone,
// without the HIP headers.
#if defined(UQ_GFX950_LAUNCHER)
// The HIP runtime header comes first: clang emits host stubs for the kernels below.
#include "gfx950/decode_hip_launch.hpp"  // hip_runtime.h and check_launch()
#endif
#include "gfx950/score_kernel.hpp"

#define UQ_GFX950_SCORE_KERNEL(R, BUFFERED, NAME)                                             \
  extern "C" __attribute__((global)) __attribute__((amdgpu_flat_work_group_size(256, 256))) void \
  NAME(uq::gfx950::scorer::ScoreKernelArgs args) {                                           \
    uq::gfx950::score_kernel<R, BUFFERED>(args);                                             \
  }

UQ_GFX950_SCORE_KERNEL(1, false, uq_gfx950_score_r1)
UQ_GFX950_SCORE_KERNEL(2, false, uq_gfx950_score_r2)
UQ_GFX950_SCORE_KERNEL(4, false, uq_gfx950_score_r4)
UQ_GFX950_SCORE_KERNEL(8, false, uq_gfx950_score_r8)
UQ_GFX950_SCORE_KERNEL(16, false, uq_gfx950_score_r16)
UQ_GFX950_SCORE_KERNEL(32, false, uq_gfx950_score_r32)
UQ_GFX950_SCORE_KERNEL(1, true, uq_gfx950_score_r1_buf)
UQ_GFX950_SCORE_KERNEL(2, true, uq_gfx950_score_r2_buf)
UQ_GFX950_SCORE_KERNEL(4, true, uq_gfx950_score_r4_buf)
UQ_GFX950_SCORE_KERNEL(8, true, uq_gfx950_score_r8_buf)
UQ_GFX950_SCORE_KERNEL(16, true, uq_gfx950_score_r16_buf)
UQ_GFX950_SCORE_KERNEL(32, true, uq_gfx950_score_r32_buf)

#if defined(UQ_GFX950_LAUNCHER)
#include "gfx950/score_launch_args.hpp"

namespace uq::gfx950 {

void launch_score(const ScoreLaunch& l, const scorer::ScoreKernelArgs& args) {
  const std::uint32_t grid = score_grid(l);
  if (grid == 0) return;
  typedef void (*Kernel)(scorer::ScoreKernelArgs);
  static const Kernel direct[] = {uq_gfx950_score_r1, uq_gfx950_score_r2, uq_gfx950_score_r4,
                                  uq_gfx950_score_r8, uq_gfx950_score_r16, uq_gfx950_score_r32};
  static const Kernel buffered[] = {uq_gfx950_score_r1_buf, uq_gfx950_score_r2_buf, uq_gfx950_score_r4_buf,
                                    uq_gfx950_score_r8_buf, uq_gfx950_score_r16_buf, uq_gfx950_score_r32_buf};
  int index = 0;
  while ((1 << index) < scorer::padded_columns(l.query_len * l.heads)) ++index;
  const Kernel kernel = l.knobs.buffered ? buffered[index] : direct[index];
  hipLaunchKernelGGL(kernel, dim3(grid), dim3(scorer::kThreads), 0, static_cast<hipStream_t>(l.stream), args);
  check_launch("uq::gfx950::launch_score");
}

}  // namespace uq::gfx950
#endif
