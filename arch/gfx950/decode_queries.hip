// gfx950 build of the multi-token decode partition kernel (spec ultraquant.md §5.9,
// decode_kernel.hpp with Queries = true): one entry point per query group size and number of N
// tiles (one: max_query_len * qg <= 16; two: <= 32; query_tiles), and, when
// compiled for the library with UQ_GFX950_LAUNCHER (host + device, HIP runtime headers), the
// launcher declared in launch_decode.hpp. Kept apart from decode.hip: in one translation unit
// the compiler's inlining and scheduling of the shared helpers would follow both kernels, and
// the one-token kernel's code would move with this one's.
#if defined(UQ_GFX950_LAUNCHER)
// The HIP runtime header comes first: clang emits host stubs for the kernels below.
#include "gfx950/decode_hip_launch.hpp"
#endif
#include "gfx950/decode_kernel.hpp"

#define UQ_GFX950_DECODE_QUERIES_KERNEL \
  extern "C" __attribute__((global)) __attribute__((amdgpu_flat_work_group_size(64, 64))) void
// Two N tiles: held to 2 waves a SIMD (256 VGPRs with the AGPRs), the occupancy of the other
// decode kernels; left to itself the compiler went a few registers past it, to 1 wave a SIMD.
#define UQ_GFX950_DECODE_QUERIES_2TILES_KERNEL                                                  \
  extern "C" __attribute__((global)) __attribute__((amdgpu_flat_work_group_size(64, 64)))      \
  __attribute__((amdgpu_waves_per_eu(2))) void

UQ_GFX950_DECODE_QUERIES_KERNEL uq_gfx950_decode_queries_qg6(uq::gfx950::DecodeQueriesKernelArgs args) {
  uq::gfx950::decode_queries_kernel<6>(args);
}
UQ_GFX950_DECODE_QUERIES_KERNEL uq_gfx950_decode_queries_qg8(uq::gfx950::DecodeQueriesKernelArgs args) {
  uq::gfx950::decode_queries_kernel<8>(args);
}
UQ_GFX950_DECODE_QUERIES_KERNEL uq_gfx950_decode_queries_qg16(uq::gfx950::DecodeQueriesKernelArgs args) {
  uq::gfx950::decode_queries_kernel<16>(args);
}
UQ_GFX950_DECODE_QUERIES_2TILES_KERNEL uq_gfx950_decode_queries_2tiles_qg6(uq::gfx950::DecodeQueriesKernelArgs args) {
  uq::gfx950::decode_queries_kernel<6, 2>(args);
}
UQ_GFX950_DECODE_QUERIES_2TILES_KERNEL uq_gfx950_decode_queries_2tiles_qg8(uq::gfx950::DecodeQueriesKernelArgs args) {
  uq::gfx950::decode_queries_kernel<8, 2>(args);
}
UQ_GFX950_DECODE_QUERIES_2TILES_KERNEL uq_gfx950_decode_queries_2tiles_qg16(uq::gfx950::DecodeQueriesKernelArgs args) {
  uq::gfx950::decode_queries_kernel<16, 2>(args);
}

#if defined(UQ_GFX950_LAUNCHER)
#include "gfx950/decode_launch_args.hpp"

namespace uq::gfx950 {

void launch_decode_queries(const DecodeQueriesLaunch& l, const DecodeQueriesKernelArgs& args) {
  const Grid3 grid = decode_partitions_grid(l);
  if (grid.empty()) return;
  const dim3 blocks(grid.x, grid.y, grid.z), threads(64, 1, 1);
  const hipStream_t stream = static_cast<hipStream_t>(l.stream);
  // make_decode_queries_kernel_args refused more than kMaxQueryTiles
  if (query_tiles(l.max_query_len, l.qg) <= 1) {
    switch (l.qg) {
      case 6: hipLaunchKernelGGL(uq_gfx950_decode_queries_qg6, blocks, threads, 0, stream, args); break;
      case 8: hipLaunchKernelGGL(uq_gfx950_decode_queries_qg8, blocks, threads, 0, stream, args); break;
      default: hipLaunchKernelGGL(uq_gfx950_decode_queries_qg16, blocks, threads, 0, stream, args); break;
    }
  } else {
    switch (l.qg) {
      case 6: hipLaunchKernelGGL(uq_gfx950_decode_queries_2tiles_qg6, blocks, threads, 0, stream, args); break;
      case 8: hipLaunchKernelGGL(uq_gfx950_decode_queries_2tiles_qg8, blocks, threads, 0, stream, args); break;
      default: hipLaunchKernelGGL(uq_gfx950_decode_queries_2tiles_qg16, blocks, threads, 0, stream, args); break;
    }
  }
  check_launch("uq::gfx950::launch_decode_queries");
}

}  // namespace uq::gfx950
#endif
