// The sm90 partition reducer (spec ultraquant.md §5): per (sequence, query head),
// M = max of the non-empty partitions' m, w_p = l_p exp(m_p - M) (0 for empty ones),
// out = sum_p w_p partial_p / sum_p w_p in fp32 (0 when the sum is 0), bf16.
//
// Block (b, hq, chunk) of 256 threads handles 32 dims. m and l are read once into shared
// memory and turned into weights; then 64 partition groups x 4 dim lanes each stream 16-byte
// rows of partials (skipping empty partitions), 8 loads in flight per thread, so that at
// small batch the reducer costs about two memory latencies. Every sum runs in a fixed order:
// results do not depend on timing.
#pragma once

#include "sm90/decode_args.hpp"

#include <cstdint>

namespace uq::sm90 {
namespace reduce_detail {

__device__ __forceinline__ float neg_inf() { return __uint_as_float(0xff800000u); }

// Block-wide reduction of one value per thread (fixed tree: lanes, then warps in order).
template <bool kMax>
__device__ __forceinline__ float block_reduce(float v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float other = __shfl_xor_sync(0xffffffffu, v, o);
    v = kMax ? fmaxf(v, other) : v + other;
  }
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float r = scratch[0];
  for (int i = 1; i < kReduceThreads / 32; ++i) r = kMax ? fmaxf(r, scratch[i]) : r + scratch[i];
  __syncthreads();  // scratch is reused by the next reduction
  return r;
}

}  // namespace reduce_detail

__global__ void __launch_bounds__(kReduceThreads) decode_reduce_kernel(const ReduceKernelArgs a) {
  using namespace reduce_detail;
  extern __shared__ __align__(16) float rsm[];
  float* const w = rsm;                   // [partitions]: m, then the weights
  float* const lp = rsm + a.partitions;   // [partitions]: l
  float* const part = lp + a.partitions;  // [8 warps][kReduceChunk]
  float* const scratch = part + (kReduceThreads / 32) * kReduceChunk;  // [8]

  const int hq_count = a.num_kv_heads * a.qg;
  const int chunk = static_cast<int>(blockIdx.x % kReduceChunks);
  const int hq = static_cast<int>((blockIdx.x / kReduceChunks) % hq_count);
  const std::int64_t b = blockIdx.x / (static_cast<std::int64_t>(kReduceChunks) * hq_count);
  const int h = hq / a.qg, r = hq % a.qg;
  // row of partition p: ((b * Hk + h) * P + p) * QG + r
  const std::int64_t first = (b * a.num_kv_heads + h) * a.partitions * a.qg + r;

  float mx = neg_inf();
  for (int p = threadIdx.x; p < a.partitions; p += kReduceThreads) {  // m and l in one round trip
    const float m = a.partial_m[first + static_cast<std::int64_t>(p) * a.qg];
    lp[p] = a.partial_l[first + static_cast<std::int64_t>(p) * a.qg];
    w[p] = m;
    if (m > neg_inf()) mx = fmaxf(mx, m);
  }
  const float M = block_reduce<true>(mx, scratch);

  float sum = 0.0f;
  for (int p = threadIdx.x; p < a.partitions; p += kReduceThreads) {
    const float m = w[p];
    const float wp = m > neg_inf() ? lp[p] * expf(m - M) : 0.0f;
    w[p] = wp;
    sum += wp;
  }
  const float total = block_reduce<false>(sum, scratch);  // its barriers publish w

  // thread = (group, lane4): partitions group, group + 64, ...; dims d0 .. d0 + 7. Each
  // thread issues kReduceBatch loads before using any (one memory latency per batch).
  const int group = threadIdx.x / kReduceDimLanes, lane4 = threadIdx.x % kReduceDimLanes;
  const int d0 = chunk * kReduceChunk + 8 * lane4;
  float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
  for (int p0 = group; p0 < a.partitions; p0 += kReduceBatch * kReduceGroups) {
    float wv[kReduceBatch];
    uint4 v[kReduceBatch];
#pragma unroll
    for (int u = 0; u < kReduceBatch; ++u) {
      const int p = p0 + u * kReduceGroups;
      wv[u] = p < a.partitions ? w[p] : 0.0f;
      v[u] = make_uint4(0u, 0u, 0u, 0u);
      if (wv[u] != 0.0f)  // empty partitions add nothing (their partials are 0 anyway)
        v[u] = *reinterpret_cast<const uint4*>(a.partial_out + (first + static_cast<std::int64_t>(p) * a.qg) * kHeadDim + d0);
    }
#pragma unroll
    for (int u = 0; u < kReduceBatch; ++u) {
      if (wv[u] == 0.0f) continue;
      const std::uint32_t q[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        acc[2 * i] += wv[u] * __uint_as_float(q[i] << 16);
        acc[2 * i + 1] += wv[u] * __uint_as_float(q[i] & 0xffff0000u);
      }
    }
  }
  // The 8 groups of a warp (lanes 4 apart) by shuffles, then the 8 warps in order.
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    acc[i] += __shfl_xor_sync(0xffffffffu, acc[i], 4);
    acc[i] += __shfl_xor_sync(0xffffffffu, acc[i], 8);
    acc[i] += __shfl_xor_sync(0xffffffffu, acc[i], 16);
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane < kReduceDimLanes)
#pragma unroll
    for (int i = 0; i < 8; ++i) part[warp * kReduceChunk + 8 * lane + i] = acc[i];
  __syncthreads();
  if (threadIdx.x < kReduceChunk) {
    float s = 0.0f;
    for (int v = 0; v < kReduceThreads / 32; ++v) s += part[v * kReduceChunk + threadIdx.x];
    const float y = total > 0.0f ? s / total : 0.0f;
    const int d = chunk * kReduceChunk + threadIdx.x;
    std::uint16_t bits;
    asm("cvt.rn.bf16.f32 %0, %1;\n" : "=h"(bits) : "f"(y));
    a.out[b * a.out_stride_seq + hq * a.out_stride_head + d * a.out_stride_dim] = bits;
  }
}

}  // namespace uq::sm90
