// gfx950 build of tests/emu/kernels/qk_pv_kernel.hpp (the emulator build is
// test_emu_qk_pv.cpp): the kernel entry point is the only gfx950-specific line.
#include "kernels/qk_pv_kernel.hpp"

extern "C" __attribute__((global)) __attribute__((amdgpu_flat_work_group_size(64, 64))) void
uq_emu_qk_pv(uq_emu_test::QkPvArgs args) {
  uq_emu_test::qk_pv_kernel(args);
}
