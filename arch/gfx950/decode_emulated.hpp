// The emulator's launchers of the decode kernels: the same launch descriptions, checks,
// argument structs and grids as the HIP launchers in decode.hip / reduce.hip, with the
// kernels' source run by the CPU wavefront emulator (link uq::gfx950_emu, which defines
// UQ_GFX950_EMULATE). Pointers are host pointers; `stream` is ignored. Returns when the
// kernel has finished; throws uq::Error for bad arguments and uq::emu::Fault when the kernel
// breaks an emulator rule.
#pragma once

#if !defined(UQ_GFX950_EMULATE)
#error "decode_emulated.hpp runs the kernels in the emulator: link uq::gfx950_emu"
#endif

#include "emu/emulator.hpp"
#include "gfx950/decode_kernel.hpp"
#include "gfx950/decode_launch_args.hpp"
#include "gfx950/reduce_kernel.hpp"

namespace uq::gfx950 {

// profile_lds_banks: record the LDS bank-conflict profile (emu/emulator.hpp, lds_bank_profile;
// perf/gfx950_lds_banks.cpp).
inline void emulate_decode_partitions(const DecodePartitionsLaunch& l, bool profile_lds_banks = false) {
  const DecodeKernelArgs a = make_decode_kernel_args(l);
  const Grid3 grid = decode_partitions_grid(l);
  if (grid.empty()) return;
  uq::emu::LaunchConfig config;
  config.grid = {grid.x, grid.y, grid.z};
  config.profile_lds_banks = profile_lds_banks;
  switch (l.qg) {
    case 6: uq::emu::launch(config, [&] { decode_partition_kernel<6>(a); }); break;
    case 8: uq::emu::launch(config, [&] { decode_partition_kernel<8>(a); }); break;
    default: uq::emu::launch(config, [&] { decode_partition_kernel<16>(a); }); break;
  }
}

// Several query tokens per sequence (spec §5.9): the multi-token kernel on the same grid.
inline void emulate_decode_queries(const DecodeQueriesLaunch& l, bool profile_lds_banks = false) {
  const DecodeQueriesKernelArgs a = make_decode_queries_kernel_args(l);
  const Grid3 grid = decode_partitions_grid(l);
  if (grid.empty()) return;
  uq::emu::LaunchConfig config;
  config.grid = {grid.x, grid.y, grid.z};
  config.profile_lds_banks = profile_lds_banks;
  if (query_tiles(l.max_query_len, l.qg) <= 1) {
    switch (l.qg) {
      case 6: uq::emu::launch(config, [&] { decode_queries_kernel<6>(a); }); break;
      case 8: uq::emu::launch(config, [&] { decode_queries_kernel<8>(a); }); break;
      default: uq::emu::launch(config, [&] { decode_queries_kernel<16>(a); }); break;
    }
  } else {
    switch (l.qg) {
      case 6: uq::emu::launch(config, [&] { decode_queries_kernel<6, 2>(a); }); break;
      case 8: uq::emu::launch(config, [&] { decode_queries_kernel<8, 2>(a); }); break;
      default: uq::emu::launch(config, [&] { decode_queries_kernel<16, 2>(a); }); break;
    }
  }
}

inline void emulate_decode_reduce(const DecodeReduceLaunch& l, bool profile_lds_banks = false) {
  const ReduceKernelArgs a = make_reduce_kernel_args(l);
  const Grid3 grid = decode_reduce_grid(l);
  if (grid.empty()) return;
  uq::emu::LaunchConfig config;
  config.grid = {grid.x, grid.y, grid.z};
  config.waves_per_workgroup = kReduceWaves;
  config.profile_lds_banks = profile_lds_banks;
  if (l.partitions <= static_cast<int>(kReduceNarrowPartitions))
    uq::emu::launch(config, [&] { decode_reduce_kernel<reduce_ml_loads(kReduceNarrowPartitions)>(a); });
  else
    uq::emu::launch(config, [&] { decode_reduce_kernel<reduce_ml_loads(kReduceMaxPartitions)>(a); });
}

}  // namespace uq::gfx950
