// The one macro of the Kokkos-free core (src/uq/core): a function every path can call. In a CUDA
// or HIP compilation (nvcc, Kokkos' nvcc_wrapper, clang -x hip) it is host and device code, as
// KOKKOS_INLINE_FUNCTION would make it; elsewhere (g++, the gfx950 emulator) plain inline. The
// core includes no Kokkos, so the tuned kernels' own builds (arch/sm90 by nvcc, arch/gfx950 by
// clang, the emulator) include the same constants and rules as the generic code.
#pragma once

// Spelled as attributes, not __host__ __device__: the gfx950 device-only compiles run without
// the HIP headers (-nogpuinc) that define those macros; nvcc and clang accept the attributes.
#if defined(__CUDACC__) || defined(__HIP__)
#define UQ_CORE_FN __attribute__((host)) __attribute__((device)) inline
#else
#define UQ_CORE_FN inline
#endif
