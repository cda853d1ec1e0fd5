// The PTX the sm90 NVFP4 index scorer uses beyond plain CUDA C++, each behind one small inline
// function: mbarriers and the bulk (TMA) copy of one page, the async-proxy fence, and the
// warpgroup MMA (wgmma) with A from registers. wgmma exists only on sm_90a, so score.cu is
// compiled for sm_90a (arch/sm90/CMakeLists.txt); the other helpers are plain sm_90.
// (The decode kernels' PTX lives in ptx.cuh.)
#pragma once

#include <cstdint>

namespace uq::sm90::score_ptx {

__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// ---------------------------------------------------------------- mbarriers
__device__ __forceinline__ void mbarrier_init(std::uint32_t bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

// Makes initialised mbarriers visible to the async proxy (the bulk copies that complete them).
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// One arrival that also announces `bytes` of bulk copies completing on this phase.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(std::uint32_t bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}

// One plain arrival (release semantics: this thread's earlier stores are seen by the waiters).
__device__ __forceinline__ void mbarrier_arrive(std::uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

// Spins until the phase of parity `parity` has completed (acquire semantics).
__device__ __forceinline__ void mbarrier_wait(std::uint32_t bar, unsigned parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "wait_again:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait_again;\n"
      "}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}

// ---------------------------------------------------------------- bulk copy
// `bytes` (a multiple of 16) global -> shared, both 16-byte aligned, completing on `bar`.
__device__ __forceinline__ void bulk_copy_g2s(std::uint32_t dst, const void* src, unsigned bytes, std::uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}

// Orders this thread's generic-proxy shared-memory accesses before later async-proxy ones
// (a bulk copy into a buffer just read; wgmma reading a buffer just written).
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// ---------------------------------------------------------------- warpgroup MMA (sm_90a)
// Shared-memory matrix descriptor without swizzle: start address, leading-dimension byte
// offset (between the two 8x8 core matrices along K) and stride byte offset (between core
// matrices along M / N), each in units of 16 bytes. Kept as two 32-bit halves: the start
// address is the low 14 bits, so a step within shared memory (< 256 KB) is a 32-bit add to
// `lo` that never carries into the other fields (a 64-bit add per wgmma cost three uniform
// instructions).
struct SmemDesc {
  std::uint32_t lo, hi;
};
__device__ __forceinline__ SmemDesc smem_desc(std::uint32_t addr, unsigned lead_bytes, unsigned stride_bytes) {
  return SmemDesc{((addr & 0x3FFFFu) >> 4) | (((lead_bytes & 0x3FFFFu) >> 4) << 16), (stride_bytes & 0x3FFFFu) >> 4};
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define UQ_SM90_WGMMA 1
#endif

__device__ __forceinline__ void wgmma_fence() {
#if defined(UQ_SM90_WGMMA)
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_commit() {
#if defined(UQ_SM90_WGMMA)
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_wait_all() {
#if defined(UQ_SM90_WGMMA)
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
#endif
}

// Pins a register at this point of the program: after wgmma_wait_all, so that no read of
// an accumulator is scheduled before the wait (wgmma writes them asynchronously).
__device__ __forceinline__ void fence_operand(float& r) { asm volatile("" : "+f"(r)::"memory"); }

// D (64 x 8 NT fp32) = A (64 x 16 f16, registers) B (16 x 8 NT f16, shared memory) [+ D if
// accumulate]. Fragments, warp w of the warpgroup, g = lane / 4, t = lane % 4 (as mma.sync
// m16n8k16): a0 = (row 16 w + g, k 2t, 2t+1), a1 = (row + 8, same k), a2 = (row, k 2t+8,
// 2t+9), a3 = (row + 8, k 2t+8, 2t+9), low half = lower k; d[4 j + 2 m + e] = (row 16 w + g
// + 8 m, column 8 j + 2 t + e).
template <int NT>
struct Wgmma;

#define UQ_WGMMA_OPERANDS(N, LO, HI)                                                          \
  "{\n.reg .pred p;\n.reg .b64 desc;\nsetp.ne.b32 p, %" #N ", 0;\nmov.b64 desc, {%" #LO ", %" #HI "};\n"
template <>
struct Wgmma<1> {
  __device__ __forceinline__ static void run(float (&d)[4], const std::uint32_t (&a)[4], SmemDesc b, int acc) {
#if defined(UQ_SM90_WGMMA)
    asm volatile(UQ_WGMMA_OPERANDS(10, 8, 9)
                 "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0, %1, %2, %3}, {%4, %5, %6, %7}, desc, p, 1, 1, "
                 "0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b.lo), "r"(b.hi), "r"(acc));
#endif
  }
};
template <>
struct Wgmma<2> {
  __device__ __forceinline__ static void run(float (&d)[8], const std::uint32_t (&a)[4], SmemDesc b, int acc) {
#if defined(UQ_SM90_WGMMA)
    asm volatile(UQ_WGMMA_OPERANDS(14, 12, 13)
                 "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, "
                 "%11}, desc, p, 1, 1, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b.lo), "r"(b.hi), "r"(acc));
#endif
  }
};
template <>
struct Wgmma<3> {
  __device__ __forceinline__ static void run(float (&d)[12], const std::uint32_t (&a)[4], SmemDesc b, int acc) {
#if defined(UQ_SM90_WGMMA)
    asm volatile(UQ_WGMMA_OPERANDS(18, 16, 17)
                 "wgmma.mma_async.sync.aligned.m64n24k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, "
                 "%11}, {%12, %13, %14, %15}, desc, p, 1, 1, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b.lo), "r"(b.hi), "r"(acc));
#endif
  }
};
template <>
struct Wgmma<4> {
  __device__ __forceinline__ static void run(float (&d)[16], const std::uint32_t (&a)[4], SmemDesc b, int acc) {
#if defined(UQ_SM90_WGMMA)
    asm volatile(UQ_WGMMA_OPERANDS(22, 20, 21)
                 "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, "
                 "%11, %12, %13, %14, %15}, {%16, %17, %18, %19}, desc, p, 1, 1, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),
                   "+f"(d[15])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b.lo), "r"(b.hi), "r"(acc));
#endif
  }
};
#undef UQ_WGMMA_OPERANDS

}  // namespace uq::sm90::score_ptx
