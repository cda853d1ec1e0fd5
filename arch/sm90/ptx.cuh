// Every PTX instruction the sm90 kernels use beyond plain CUDA C++, each behind one small
// inline function (the counterpart of arch/gfx950/isa.hpp). All of them exist on sm_80+ /
// sm_89+ / sm_90 (the e4m3 converts need sm_89); nothing here is sm_90a-only.
#pragma once

#include <cstdint>

namespace uq::sm90::ptx {

// ---------------------------------------------------------------- asynchronous copies
__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared, cached in L2 only (the cache is streamed once).
__device__ __forceinline__ void cp_async_16(std::uint32_t dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}

// 8 bytes global -> shared (.cg takes only 16-byte copies).
__device__ __forceinline__ void cp_async_8(std::uint32_t dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(dst), "l"(src) : "memory");
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

// Waits until at most n of this thread's committed groups are still pending.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// ---------------------------------------------------------------- shared-memory matrix loads
// Four 8x8 matrices of 16-bit elements; lane l gives the row address of row l % 8 of matrix
// l / 8 (16-byte aligned). Without .trans lane l receives elements (row l/4, cols 2(l%4),
// 2(l%4)+1) of each matrix; with .trans (row 2(l%4), col l/4) and (row 2(l%4)+1, col l/4).
__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

__device__ __forceinline__ void ldmatrix_x2(std::uint32_t (&r)[2], std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(addr));
}

__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// Plain shared-memory loads, as volatile asm so that the compiler keeps them next to their
// use (hoisting them all ahead of the MMAs costs registers, not latency).
__device__ __forceinline__ std::uint32_t lds_u32(std::uint32_t addr) {
  std::uint32_t v;
  asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(addr));
  return v;
}

__device__ __forceinline__ uint4 lds_v4(std::uint32_t addr) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr));
  return v;
}

// ---------------------------------------------------------------- tensor-core MMA
// D = A B + D, A 16x16 (row), B 16x8 (col), fp32 accumulators. Fragments (g = lane/4,
// t = lane%4): a0 = (row g, k 2t..2t+1), a1 = (row g+8, same k), a2 = (row g, k 2t+8..2t+9),
// a3 = (row g+8, k 2t+8..); b0 = (k 2t..2t+1, col g), b1 = (k 2t+8.., col g);
// d0, d1 = (row g, cols 2t, 2t+1), d2, d3 = (row g+8, cols 2t, 2t+1). Low half = lower k.
__device__ __forceinline__ void mma_f16(float (&d)[4], std::uint32_t a0, std::uint32_t a1, std::uint32_t a2,
                                        std::uint32_t a3, std::uint32_t b0, std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void mma_bf16(float (&d)[4], std::uint32_t a0, std::uint32_t a1, std::uint32_t a2,
                                         std::uint32_t a3, std::uint32_t b0, std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// D = A B + D with E4M3 operands (sm_89+), A 16x32 (row), B 32x8 (col), fp32 accumulators.
// Each register holds 4 E4M3 values, the lowest k in the low byte. Fragments (g = lane/4,
// t = lane%4): a0 = (row g, k 4t..4t+3), a1 = (row g+8, same k), a2 = (row g, k 16+4t..),
// a3 = (row g+8, k 16+4t..); b0 = (k 4t..4t+3, col g), b1 = (k 16+4t.., col g); d as mma_f16.
__device__ __forceinline__ void mma_e4m3(float (&d)[4], std::uint32_t a0, std::uint32_t a1, std::uint32_t a2,
                                         std::uint32_t a3, std::uint32_t b0, std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// Two E4M3 bytes (low byte -> low half) -> fp16x2, exactly (every E4M3 value, NaN aside, is
// an fp16 value; NaN stays NaN).
__device__ __forceinline__ std::uint32_t e4m3x2_to_f16x2(std::uint32_t two_bytes) {
  std::uint32_t r;
  const std::uint16_t e = static_cast<std::uint16_t>(two_bytes);
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;\n" : "=r"(r) : "h"(e));
  return r;
}

// ---------------------------------------------------------------- packed 16-bit arithmetic
// bf16x2 a * b + (-0): exact when b is a power of two and the product is representable
// (subnormal inputs included). -0 keeps the sign of a zero product.
__device__ __forceinline__ std::uint32_t bf16x2_mul(std::uint32_t a, std::uint32_t b) {
  std::uint32_t r;
  asm("fma.rn.bf16x2 %0, %1, %2, %3;\n" : "=r"(r) : "r"(a), "r"(b), "r"(0x80008000u));
  return r;
}

// {lo, hi} fp32 -> bf16x2, each rounded to nearest even (NaN stays NaN).
__device__ __forceinline__ std::uint32_t pack_bf16x2(float lo, float hi) {
  std::uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

// {lo, hi} fp32 -> two E4M3 bytes (round to nearest even, saturating to +-448, NaN stays
// NaN) -> the same values as fp16x2 (exact: every E4M3 value is an fp16 value).
__device__ __forceinline__ std::uint32_t e4m3_round_to_f16x2(float lo, float hi) {
  std::uint16_t e;
  std::uint32_t r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(e) : "f"(hi), "f"(lo));
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;\n" : "=r"(r) : "h"(e));
  return r;
}

// 2^x on the SFU (max error ~2 ulp; subnormal results flush to 0, 2^-inf = 0, 2^0 = 1).
__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ std::uint32_t byte_perm(std::uint32_t x, std::uint32_t y, std::uint32_t sel) {
  return __byte_perm(x, y, sel);
}

}  // namespace uq::sm90::ptx
