// The sm90 partition reducer (spec ultraquant.md §5, revision 2): per (sequence, query head),
// M = max of m over the partitions with l > 0, w_p = l_p exp(m_p - M) (0 for l = 0, whose
// partial row is never read), out = sum_p w_p partial_p / sum_p w_p in fp32 (0 when the sum is
// 0), bf16; lse = M + log(sum_p w_p) (-inf when the sum is 0); any l = NaN (a non-finite
// query) gives an all-NaN row and a NaN lse.
//
// Block (b, hq, chunk) of 256 threads handles 32 dims: 64 partition groups x 4 dim lanes
// (16-byte loads of 8 dims). Each thread loads l and m of its 8 partitions, then at once the
// partial rows of those with l > 0, and only then block-reduces M: the two memory round trips
// overlap the reduction. Every sum runs in a fixed order, so results do not depend on timing.
#pragma once

#include "sm90/decode_args.hpp"
#include "sm90/ptx.cuh"

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

__device__ __forceinline__ void accumulate(float (&acc)[8], float w, const uint4& v) {
  const std::uint32_t q[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    acc[2 * i] += w * __uint_as_float(q[i] << 16);
    acc[2 * i + 1] += w * __uint_as_float(q[i] & 0xffff0000u);
  }
}

}  // namespace reduce_detail

__global__ void __launch_bounds__(kReduceThreads) decode_reduce_kernel(const ReduceKernelArgs a) {
  using namespace reduce_detail;
  __shared__ float scratch[kReduceThreads / 32];
  __shared__ float part[kReduceThreads / 32][kReduceChunk];

  const int hq_count = a.num_kv_heads * a.qg;
  const int chunk = static_cast<int>(blockIdx.x % kReduceChunks);
  const int hq = static_cast<int>((blockIdx.x / kReduceChunks) % hq_count);
  const std::int64_t b = blockIdx.x / (static_cast<std::int64_t>(kReduceChunks) * hq_count);
  const int h = hq / a.qg, r = hq % a.qg;
  // row of partition p: ((b * Hk + h) * P + p) * QG + r
  const std::int64_t first = (b * a.num_kv_heads + h) * a.partitions * a.qg + r;
  const int group = threadIdx.x / kReduceDimLanes, lane4 = threadIdx.x % kReduceDimLanes;
  const int d0 = chunk * kReduceChunk + 8 * lane4;
  constexpr int kPass = kReduceBatch * kReduceGroups;  // partitions per pass (512)

  ptx::griddep_wait();  // the partition kernel's results are complete and visible

  // First pass: l, m of this thread's partitions; the partial rows of the first pass's
  // non-empty ones are requested before anything else waits.
  float lv[kReduceBatch], mv[kReduceBatch];
  uint4 v[kReduceBatch];
  bool nan = false;
  float mx = neg_inf();
#pragma unroll
  for (int u = 0; u < kReduceBatch; ++u) {
    const int p = group + u * kReduceGroups;
    lv[u] = 0.0f;
    mv[u] = neg_inf();
    if (p < a.partitions) {
      lv[u] = a.partial_l[first + static_cast<std::int64_t>(p) * a.qg];
      mv[u] = a.partial_m[first + static_cast<std::int64_t>(p) * a.qg];
    }
  }
#pragma unroll
  for (int u = 0; u < kReduceBatch; ++u) {
    const int p = group + u * kReduceGroups;
    v[u] = make_uint4(0u, 0u, 0u, 0u);
    if (lv[u] > 0.0f)
      v[u] = *reinterpret_cast<const uint4*>(a.partial_out + (first + static_cast<std::int64_t>(p) * a.qg) * kHeadDim + d0);
    nan = nan || lv[u] != lv[u];
    if (lv[u] > 0.0f) mx = fmaxf(mx, mv[u]);
  }
  for (int p0 = kPass; p0 < a.partitions; p0 += kPass)  // more than 512 partitions: M first
    for (int u = 0; u < kReduceBatch; ++u) {
      const int p = p0 + group + u * kReduceGroups;
      if (p >= a.partitions) break;
      const float lp = a.partial_l[first + static_cast<std::int64_t>(p) * a.qg];
      nan = nan || lp != lp;
      if (lp > 0.0f) mx = fmaxf(mx, a.partial_m[first + static_cast<std::int64_t>(p) * a.qg]);
    }
  // M over the block; the barrier that publishes the warps' maxima also ORs the NaN flags
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = mx;
  const bool any_nan = __syncthreads_or(nan) != 0;
  float M = scratch[0];
  for (int i = 1; i < kReduceThreads / 32; ++i) M = fmaxf(M, scratch[i]);
  __syncthreads();  // scratch is reused below

  float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
  float wsum = 0.0f;
#pragma unroll
  for (int u = 0; u < kReduceBatch; ++u) {
    if (!(lv[u] > 0.0f)) continue;
    const float wp = lv[u] * expf(mv[u] - M);
    wsum += wp;
    accumulate(acc, wp, v[u]);
  }
  for (int p0 = kPass; p0 < a.partitions; p0 += kPass) {
#pragma unroll
    for (int u = 0; u < kReduceBatch; ++u) {
      const int p = p0 + group + u * kReduceGroups;
      lv[u] = p < a.partitions ? a.partial_l[first + static_cast<std::int64_t>(p) * a.qg] : 0.0f;
      mv[u] = p < a.partitions ? a.partial_m[first + static_cast<std::int64_t>(p) * a.qg] : neg_inf();
      v[u] = make_uint4(0u, 0u, 0u, 0u);
      if (lv[u] > 0.0f)
        v[u] = *reinterpret_cast<const uint4*>(a.partial_out + (first + static_cast<std::int64_t>(p) * a.qg) * kHeadDim + d0);
    }
#pragma unroll
    for (int u = 0; u < kReduceBatch; ++u) {
      if (!(lv[u] > 0.0f)) continue;
      const float wp = lv[u] * expf(mv[u] - M);
      wsum += wp;
      accumulate(acc, wp, v[u]);
    }
  }
  // sum of weights: every dim lane of a group holds the same; count lane 0's
  const float total = block_reduce<false>(lane4 == 0 ? wsum : 0.0f, scratch);

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
    for (int i = 0; i < 8; ++i) part[warp][8 * lane + i] = acc[i];
  __syncthreads();
  if (threadIdx.x < kReduceChunk) {
    float s = 0.0f;
    for (int wv = 0; wv < kReduceThreads / 32; ++wv) s += part[wv][threadIdx.x];
    const float y = total > 0.0f ? s / total : 0.0f;
    const int d = chunk * kReduceChunk + threadIdx.x;
    std::uint16_t bits;
    asm("cvt.rn.bf16.f32 %0, %1;\n" : "=h"(bits) : "f"(y));
    if (any_nan) bits = 0x7FC0u;  // the partition kernel's NaN (P = 1 gives the same bits)
    a.out[b * a.out_stride_seq + hq * a.out_stride_head + d * a.out_stride_dim] = bits;
    if (a.lse != nullptr && chunk == 0 && threadIdx.x == 0)
      a.lse[b * a.lse_stride_seq + hq * a.lse_stride_head] =
          any_nan ? __uint_as_float(0x7fc00000u) : (total > 0.0f ? __fadd_rn(M, logf(total)) : neg_inf());
  }
}

}  // namespace uq::sm90
