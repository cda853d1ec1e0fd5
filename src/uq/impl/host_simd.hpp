// Fixed-width float vectors for the host loops of the generic kernels (process_tile_host).
//
// Why not plain arrays: register blocking of the dot products (several rows' accumulators
// live across a loop over the head dimension) is what a CPU needs, and GCC 12 compiles the
// natural `float s[rows][8]` form with one accumulator kept in memory (a load, a
// multiply-add and a store per step, a store-forwarding chain that makes every step
// ~3x slower; checked on the assembly of -O3 and -O3 -march=x86-64-v3). The compilers'
// generic vector types (GCC and Clang `vector_size`, no target intrinsics: the same
// source compiles for SSE2, AVX2, AVX-512 or Arm) keep each accumulator in a register.
// Width: 8 floats where the build enables AVX, else 4 (one SSE / NEON register).
//
// Other compilers and the device passes of CUDA/HIP (where these host loops are never
// run) get a plain-array type with the same operations.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>

namespace uq {
namespace impl {
namespace host_simd {

#if defined(__AVX__)
inline constexpr int kWidth = 8;
#else
inline constexpr int kWidth = 4;
#endif

#if (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
typedef float Vec __attribute__((vector_size(4 * kWidth)));
KOKKOS_INLINE_FUNCTION Vec splat(float x) { return Vec{} + x; }
KOKKOS_INLINE_FUNCTION float lane(const Vec& v, int i) { return v[i]; }

// Integer vectors for the index writer's host path (impl/write_index_keys_host.hpp): a
// scale group of 16 values is 32 bytes of bf16 bits or 64 of float bits, taken as parts
// of the target's integer register width (kIntBytes: 32 with AVX2, else 16, SSE2 / NEON).
// Not wider: GCC 12 splits wider generic vectors for arithmetic, but lowers their
// compares lane by lane into scalar code (checked on the -O2 SSE2 assembly). Only where
// the vector extensions exist (UQ_HOST_INT_VECTORS): there is no plain-array fallback,
// and their users are compiled only under this macro.
#define UQ_HOST_INT_VECTORS 1
#if defined(__AVX2__)
#define UQ_HOST_INT_BYTES 32
#else
#define UQ_HOST_INT_BYTES 16
#endif
inline constexpr int kIntBytes = UQ_HOST_INT_BYTES;
typedef std::int16_t I16v __attribute__((vector_size(UQ_HOST_INT_BYTES)));
typedef std::int32_t I32v __attribute__((vector_size(UQ_HOST_INT_BYTES)));
typedef std::int16_t I16x8 __attribute__((vector_size(16)));
typedef std::int16_t I16x16 __attribute__((vector_size(32)));
typedef std::int32_t I32x4 __attribute__((vector_size(16)));
typedef std::int32_t I32x8 __attribute__((vector_size(32)));
typedef std::uint16_t U16x8 __attribute__((vector_size(16)));
typedef std::uint8_t U8x16 __attribute__((vector_size(16)));
typedef std::uint8_t U8x8 __attribute__((vector_size(8)));
#else
struct Vec {
  float v[kWidth];
  KOKKOS_INLINE_FUNCTION Vec& operator+=(const Vec& o) {
    for (int i = 0; i < kWidth; ++i) v[i] += o.v[i];
    return *this;
  }
  KOKKOS_INLINE_FUNCTION friend Vec operator+(Vec a, const Vec& b) { return a += b; }
  KOKKOS_INLINE_FUNCTION friend Vec operator*(Vec a, const Vec& b) {
    for (int i = 0; i < kWidth; ++i) a.v[i] *= b.v[i];
    return a;
  }
};
KOKKOS_INLINE_FUNCTION Vec splat(float x) {
  Vec r;
  for (int i = 0; i < kWidth; ++i) r.v[i] = x;
  return r;
}
KOKKOS_INLINE_FUNCTION float lane(const Vec& v, int i) { return v.v[i]; }
#endif

// Unaligned loads and stores (memcpy: no alignment or aliasing assumption; one vector move).
KOKKOS_INLINE_FUNCTION Vec load(const float* p) {
  Vec v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
KOKKOS_INLINE_FUNCTION void store(float* p, const Vec& v) { std::memcpy(p, &v, sizeof v); }

// Sum of the lanes as a fixed tree (lane i with lane i + kWidth/2, then halves again).
KOKKOS_INLINE_FUNCTION float sum_lanes(const Vec& v) {
  float t[kWidth];
  for (int i = 0; i < kWidth; ++i) t[i] = lane(v, i);
  for (int h = kWidth / 2; h >= 1; h /= 2)
    for (int i = 0; i < h; ++i) t[i] += t[i + h];
  return t[0];
}

}  // namespace host_simd
}  // namespace impl
}  // namespace uq
