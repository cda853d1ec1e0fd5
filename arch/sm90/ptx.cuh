// Every PTX instruction the sm90 kernels use beyond plain CUDA C++, each behind one small
// inline function (the counterpart of arch/gfx950/isa.hpp). Most exist on sm_80+ / sm_89+ /
// sm_90 (the e4m3 converts need sm_89, bulk copies, mbarrier transaction counts and grid
// dependency control sm_90); the warpgroup MMAs (wgmma) need sm_90a, which is why uq_sm90 is
// compiled for sm_90a (arch/sm90/CMakeLists.txt).
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

__device__ __forceinline__ void ldmatrix_x2_trans(std::uint32_t (&r)[2], std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(addr));
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

// bf16x2 a * b (round to nearest even; exact when b is a power of two and the product is
// representable, subnormal inputs and results included).
__device__ __forceinline__ std::uint32_t bf16x2_mul_rn(std::uint32_t a, std::uint32_t b) {
  std::uint32_t r;
  asm("mul.rn.bf16x2 %0, %1, %2;\n" : "=r"(r) : "r"(a), "r"(b));
  return r;
}

// Lane-wise maximum of two bf16x2 (one HMNMX2).
__device__ __forceinline__ std::uint32_t bf16x2_max(std::uint32_t a, std::uint32_t b) {
  std::uint32_t r;
  asm("max.bf16x2 %0, %1, %2;\n" : "=r"(r) : "r"(a), "r"(b));
  return r;
}

// {lo, hi} fp32 -> two E4M3 bytes in the low 16 bits (round to nearest even, saturating to
// +-448, NaN stays NaN).
__device__ __forceinline__ std::uint32_t e4m3x2_from_f32(float lo, float hi) {
  std::uint16_t e;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(e) : "f"(hi), "f"(lo));
  return e;
}

__device__ __forceinline__ uint2 lds_v2(std::uint32_t addr) {
  uint2 v;
  asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];\n" : "=r"(v.x), "=r"(v.y) : "r"(addr));
  return v;
}

__device__ __forceinline__ std::uint64_t lds_u64(std::uint32_t addr) {
  std::uint64_t v;
  asm volatile("ld.shared.u64 %0, [%1];\n" : "=l"(v) : "r"(addr));
  return v;
}

__device__ __forceinline__ float4 lds_f4(std::uint32_t addr) {
  float4 v;
  asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(addr));
  return v;
}

// ---------------------------------------------------------------- mbarriers and bulk copies
// An mbarrier (8 bytes of shared memory) completes a phase when its pending arrivals reach 0
// and its transaction count (bytes announced by expect_tx, counted down by the bulk copies
// that name it) reaches 0; waiters test the parity of the phase they wait for.
__device__ __forceinline__ void mbarrier_init(std::uint32_t bar, std::uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(arrivals) : "memory");
}

// Makes initialised mbarriers visible to the other threads and to the copy engine.
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// One arrival that also announces `bytes` more bytes to come (release: this thread's earlier
// shared-memory writes are visible to whoever sees the phase complete).
__device__ __forceinline__ void mbarrier_arrive_expect_tx(std::uint32_t bar, std::uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}

// Returns once the phase with the given parity has completed (acquire).
__device__ __forceinline__ void mbarrier_wait_parity(std::uint32_t bar, std::uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n"
      "}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}

// An L2 policy for data read once (the cache stream): evict it first.
__device__ __forceinline__ std::uint64_t l2_evict_first_policy() {
  std::uint64_t p;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(p));
  return p;
}

// `bytes` (a multiple of 16; src, dst 16-byte aligned) global -> shared by the copy engine,
// counted down on mbarrier `bar` as they land.
__device__ __forceinline__ void bulk_copy_g2s(std::uint32_t dst, const void* src, std::uint32_t bytes, std::uint32_t bar,
                                              std::uint64_t policy) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;\n" ::"r"(dst),
      "l"(src), "r"(bytes), "r"(bar), "l"(policy)
      : "memory");
}

// One tensor-map copy (cp.async.bulk.tensor, 4-D tile, no swizzle) of the box at element
// coordinates {c0, c1, c2, c3} of `map` (a __grid_constant__ kernel parameter) into shared memory
// at dst (128-byte aligned), completing on the mbarrier `bar`, with an L2 cache policy.
__device__ __forceinline__ void tensor_copy_4d_g2s(std::uint32_t dst, const void* map, int c0, int c1, int c2, int c3,
                                                   std::uint32_t bar, std::uint64_t policy) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%0], [%1, {%2, %3, %4, %5}], [%6], %7;\n" ::"r"(dst),
      "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar), "l"(policy)
      : "memory");
}

// Orders this thread's earlier ordinary shared-memory writes before later reads of the same
// bytes by the async proxy (wgmma operands, bulk copies).
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// ---------------------------------------------------------------- grid dependency control
// Programmatic dependent launch: a kernel launched with the programmatic-serialization
// attribute may start once every block of the kernel before it has called
// launch_dependents (or exited); it must call wait before reading that kernel's results.
__device__ __forceinline__ void griddep_launch_dependents() {
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
}

__device__ __forceinline__ void griddep_wait() { asm volatile("griddepcontrol.wait;\n" ::: "memory"); }

// ---------------------------------------------------------------- warpgroup MMA (sm_90a)
// A wgmma is issued by the 4 warps of a warpgroup together. fence: before the first wgmma
// and whenever its register operands were written since; commit: closes a group of issued
// wgmmas; wait<N>: until at most N groups of this warp are pending (then their accumulators
// may be read and their A registers reused).
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// Keeps the compiler from moving accesses to an asynchronously written or read register
// across the wgmma fence / wait points.
__device__ __forceinline__ void reg_fence(float& r) { asm volatile("" : "+f"(r)::"memory"); }
__device__ __forceinline__ void reg_fence(std::uint32_t& r) { asm volatile("" : "+r"(r)::"memory"); }
__device__ __forceinline__ void reg_fence(std::uint64_t& r) { asm volatile("" : "+l"(r)::"memory"); }

// x, held in a register from here on: ptxas rematerialises values computed from threadIdx.x
// at their uses when registers are scarce, but it cannot recompute a shuffle's result.
__device__ __forceinline__ std::uint32_t keep_live(std::uint32_t x) {
  return __shfl_sync(0xffffffffu, x, static_cast<int>(threadIdx.x & 31u));
}
__device__ __forceinline__ int keep_live(int x) { return static_cast<int>(keep_live(static_cast<std::uint32_t>(x))); }
// keep_live(x) when kKeep, else x as it is (left to ptxas).
template <bool kKeep, class T>
__device__ __forceinline__ T keep_live_if(T x) {
  if constexpr (kKeep) return keep_live(x);
  else return x;
}

// x, opaque to the compiler from here on: what is computed from it is computed where it is
// used, not hoisted out of the loops around as a loop invariant (a register live across them).
__device__ __forceinline__ int opaque(int x) {
  asm volatile("" : "+r"(x));
  return x;
}

// Shared-memory matrix descriptor, no swizzle: the operand is made of "core matrices" of 8
// rows x 16 contiguous bytes (128 bytes); `k_stride` bytes between the two core matrices along
// K (the leading-dimension offset), `row_stride` bytes between groups of 8 rows along M or N
// (the stride-dimension offset). Operands are K-major. Address and strides: multiples of 16.
__device__ __forceinline__ std::uint64_t smem_desc(std::uint32_t addr, std::uint32_t k_stride, std::uint32_t row_stride) {
  return static_cast<std::uint64_t>((addr >> 4) & 0x3FFFu) | (static_cast<std::uint64_t>((k_stride >> 4) & 0x3FFFu) << 16) |
         (static_cast<std::uint64_t>((row_stride >> 4) & 0x3FFFu) << 32);  // base offset 0, layout 0 (none)
}

// D(64 x N, fp32) = A(64 x 32, E4M3, registers) B(32 x N, E4M3, shared memory) (+ D when
// kAccumulate). A registers as mma.m16n8k32 per warp (warp w: rows 16w..16w+15): a0 = (row g,
// k 4t..4t+3), a1 = (row g+8, same k), a2 = (row g, k 16+4t..), a3 = (row g+8, k 16+4t..),
// g = lane/4, t = lane%4, lowest k in the low byte. D: d[4j + 0, 1] = (row g, col 8j + 2t, +1),
// d[4j + 2, 3] = (row g + 8, same cols).
template <int N, bool kAccumulate>
__device__ __forceinline__ void wgmma_e4m3_rs(float (&d)[N / 2], const std::uint32_t (&a)[4], std::uint64_t b);

template <>
__device__ __forceinline__ void wgmma_e4m3_rs<8, false>(float (&d)[4], const std::uint32_t (&a)[4], std::uint64_t b) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%0, %1, %2, %3}, {%4, %5, %6, %7}, %8, 0, 1, 1;\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}

template <>
__device__ __forceinline__ void wgmma_e4m3_rs<16, false>(float (&d)[8], const std::uint32_t (&a)[4], std::uint64_t b) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n16k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, %12, 0, "
      "1, 1;\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3]), "=f"(d[4]), "=f"(d[5]), "=f"(d[6]), "=f"(d[7])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}

// The multi-token kernel's wider N (decode_queries.cuh): 24 and 32 query rows.
template <>
__device__ __forceinline__ void wgmma_e4m3_rs<24, false>(float (&d)[12], const std::uint32_t (&a)[4], std::uint64_t b) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n24k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11}, "
      "{%12, %13, %14, %15}, %16, 0, 1, 1;\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3]), "=f"(d[4]), "=f"(d[5]), "=f"(d[6]), "=f"(d[7]), "=f"(d[8]), "=f"(d[9]), "=f"(d[10]), "=f"(d[11])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}

template <>
__device__ __forceinline__ void wgmma_e4m3_rs<32, false>(float (&d)[16], const std::uint32_t (&a)[4], std::uint64_t b) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n32k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
      "{%16, %17, %18, %19}, %20, 0, 1, 1;\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3]), "=f"(d[4]), "=f"(d[5]), "=f"(d[6]), "=f"(d[7]), "=f"(d[8]), "=f"(d[9]), "=f"(d[10]), "=f"(d[11]), "=f"(d[12]), "=f"(d[13]), "=f"(d[14]), "=f"(d[15])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}

// D(64 x N, fp32) += A(64 x 16, bf16, registers) B(16 x N, bf16, shared memory, K-major).
// A registers as mma.m16n8k16 per warp: a0 = (row g, k 2t..2t+1), a1 = (row g+8, same k),
// a2 = (row g, k 2t+8..), a3 = (row g+8, k 2t+8..), lower k in the low half. D as above.
template <int N>
__device__ __forceinline__ void wgmma_bf16_rs(float (&d)[N / 2], const std::uint32_t (&a)[4], std::uint64_t b);

template <>
__device__ __forceinline__ void wgmma_bf16_rs<8>(float (&d)[4], const std::uint32_t (&a)[4], std::uint64_t b) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, {%4, %5, %6, %7}, %8, 1, 1, 1, 0;\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}

template <>
__device__ __forceinline__ void wgmma_bf16_rs<16>(float (&d)[8], const std::uint32_t (&a)[4], std::uint64_t b) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, %12, 1, "
      "1, 1, 0;\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}

// The multi-token kernel's wider N (decode_queries.cuh): 24 and 32 query rows.
template <>
__device__ __forceinline__ void wgmma_bf16_rs<24>(float (&d)[12], const std::uint32_t (&a)[4], std::uint64_t b) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n24k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11}, "
      "{%12, %13, %14, %15}, %16, 1, 1, 1, 0;\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}
template <>
__device__ __forceinline__ void wgmma_bf16_rs<32>(float (&d)[16], const std::uint32_t (&a)[4], std::uint64_t b) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
      "{%16, %17, %18, %19}, %20, 1, 1, 1, 0;\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}

}  // namespace uq::sm90::ptx
