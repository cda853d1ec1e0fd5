// gfx950 build of the decode partition kernel (decode_kernel.hpp): one entry point per query
// group size (the multi-token kernel of spec §5.9 is decode_queries.hip, a code object of its
// own so that this one's code generation does not depend on it), and, when compiled for the
// library with UQ_GFX950_LAUNCHER (host + device, HIP runtime headers), the launcher declared
// in launch_decode.hpp. The ISA check compiles the device code alone, without the HIP headers.
#if defined(UQ_GFX950_LAUNCHER)
// The HIP runtime header comes first: clang emits host stubs for the kernels below.
#include "gfx950/decode_hip_launch.hpp"
#endif
#include "gfx950/decode_kernel.hpp"

#define UQ_GFX950_DECODE_KERNEL \
  extern "C" __attribute__((global)) __attribute__((amdgpu_flat_work_group_size(64, 64))) void

UQ_GFX950_DECODE_KERNEL uq_gfx950_decode_qg6(uq::gfx950::DecodeKernelArgs args) {
  uq::gfx950::decode_partition_kernel<6>(args);
}
UQ_GFX950_DECODE_KERNEL uq_gfx950_decode_qg8(uq::gfx950::DecodeKernelArgs args) {
  uq::gfx950::decode_partition_kernel<8>(args);
}
UQ_GFX950_DECODE_KERNEL uq_gfx950_decode_qg16(uq::gfx950::DecodeKernelArgs args) {
  uq::gfx950::decode_partition_kernel<16>(args);
}
#if defined(UQ_GFX950_LAUNCHER)
#include "gfx950/decode_launch_args.hpp"

namespace uq::gfx950 {

void launch_decode_partitions(const DecodePartitionsLaunch& l, const DecodeKernelArgs& args) {
  const Grid3 grid = decode_partitions_grid(l);
  if (grid.empty()) return;
  const dim3 blocks(grid.x, grid.y, grid.z), threads(64, 1, 1);
  const hipStream_t stream = static_cast<hipStream_t>(l.stream);
  switch (l.qg) {
    case 6: hipLaunchKernelGGL(uq_gfx950_decode_qg6, blocks, threads, 0, stream, args); break;
    case 8: hipLaunchKernelGGL(uq_gfx950_decode_qg8, blocks, threads, 0, stream, args); break;
    default: hipLaunchKernelGGL(uq_gfx950_decode_qg16, blocks, threads, 0, stream, args); break;
  }
  check_launch("uq::gfx950::launch_decode_partitions");
}

}  // namespace uq::gfx950
#endif
