// The sm90 partition reducer (spec ultraquant.md §5, revision 2): per (sequence, query head),
// M = max of m over the partitions with l > 0, w_p = l_p exp(m_p - M) (0 for l = 0, whose
// partial row is never read), out = sum_p w_p partial_p / sum_p w_p in fp32 (0 when the sum is
// 0), bf16; lse = M + log(sum_p w_p) (-inf when the sum is 0); any l = NaN (a non-finite
// query) gives an all-NaN row and a NaN lse.
//
// Three kernels of one computation, chosen by the launcher from the number of query rows and
// partitions (reduce.cu, kReduceWholeRowMinRows, kReduceWarpRowMinRows, kReduceWarpRowMaxPartitions):
// decode_reduce_chunks_kernel, 8 blocks per (sequence, query head) of 32 dims each, when there
// are few rows (the GPU needs the blocks; each block is latency-bound); when there are many (an
// engine's batch: 256 x 24 rows made 49 152 chunk blocks of mostly fixed cost, a quarter of
// the call on the H200, docs/perf-log/2026-12-01-engine-plan-reducer-rows.md)
// decode_reduce_rows_kernel, one block per row, and
// when there are very many, with up to 512 partitions, decode_reduce_warp_rows_kernel, one warp
// per row and no block barrier (8 rows a block). All give the same bits: every sum runs in one
// fixed order that depends neither on the kernel, nor on timing, nor on which partitions are
// empty (an empty partition adds nothing, not even a rounding):
//  * M and the NaN flag are order-free; w_p = l_p * exp(m_p - M) (explicit roundings, no
//    contraction);
//  * strand s (s = 0..63) sums its partitions p = s, s + 64, ... in increasing p: the sum of
//    weights, and w_p x partial_p[d] by fused multiply-adds;
//  * strands 8k .. 8k + 7 are combined as ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)),
//    then k = 0..7 in order; the sum of weights, strands 8k .. 8k + 7 as
//    ((s0 + s4) + (s2 + s6)) + ((s1 + s5) + (s3 + s7)), then k = 0..7 in order.
// In the chunk kernel thread (strand s, dim lane) holds one strand of 8 dims and the strand tree
// is a shuffle tree; in the row kernel thread (warp k, lane j) holds strands 8k .. 8k + 7 of dims
// 8j .. 8j + 7 and builds the same tree in registers; in the warp-row kernel lane j holds dims
// 8j .. 8j + 7 of every strand, takes k = 0..7 in turn and builds the tree in registers, and
// sums the weights of strands j and j + 32 (the tree over strands 8k .. 8k + 7 by shuffles).
#pragma once

#include "sm90/decode_args.hpp"
#include "sm90/ptx.cuh"

#include <cstdint>

namespace uq::sm90 {
namespace reduce_detail {

constexpr int kStrands = kReduceGroups;      // 64 strands: partition p is in strand p % 64
constexpr int kWarps = kReduceThreads / 32;  // 8
constexpr int kPass = kReduceBatch * kStrands;  // partitions a chunk-kernel thread loads at once (512)
constexpr float kNotRead = -1.0f;            // (row kernel) weight slot of a partition with l <= 0 or NaN

__device__ __forceinline__ float neg_inf() { return __uint_as_float(0xff800000u); }

// Dynamic shared memory of a row-kernel block: l (then w) and m of every partition.
__host__ __device__ constexpr int reduce_rows_smem_bytes(int partitions) { return 2 * partitions * 4; }
// ... and of a warp-row block: the same for each of its 8 warps (<= 32 KB for 512 partitions).
__host__ __device__ constexpr int reduce_warp_rows_smem_bytes(int partitions) { return kWarps * 2 * partitions * 4; }

// The weight of a partition with l > 0 (one rounding each: the two kernels agree).
__device__ __forceinline__ float weight(float l, float m, float M) { return __fmul_rn(l, expf(m - M)); }

// Block-wide sum of one value per thread: lanes by a shuffle tree (xor 16, 8, 4, 2, 1), then the
// warps in order.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, o));
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float r = scratch[0];
  for (int i = 1; i < kWarps; ++i) r = __fadd_rn(r, scratch[i]);
  __syncthreads();  // scratch is reused
  return r;
}

// Block maximum of one value per thread; the barrier that publishes the warps' maxima also ORs
// the NaN flags (and makes every earlier shared-memory write visible).
__device__ __forceinline__ float block_max(float v, bool nan, float* scratch, bool& any_nan) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  if (lane == 0) scratch[warp] = v;
  any_nan = __syncthreads_or(nan) != 0;
  float r = scratch[0];
  for (int i = 1; i < kWarps; ++i) r = fmaxf(r, scratch[i]);
  __syncthreads();  // scratch is reused
  return r;
}

// acc[0..7] += w x the 8 bf16 of v (fused: one rounding each).
__device__ __forceinline__ void accumulate(float (&acc)[8], float w, const uint4& v) {
  const std::uint32_t q[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    acc[2 * i] = fmaf(w, __uint_as_float(q[i] << 16), acc[2 * i]);
    acc[2 * i + 1] = fmaf(w, __uint_as_float(q[i] & 0xffff0000u), acc[2 * i + 1]);
  }
}

// The query row a block reduces: (sequence b, query head hq); partial row of partition p:
// first + p * QG with first = ((b * Hk + h) * P) * QG + r; its l and m: lm + p with
// lm = partial_lm_index(b * Hk + h, r, 0, P, QG) (decode_args.hpp).
struct ReduceRow {
  std::int64_t b, first, lm;
  int hq;
};
__device__ __forceinline__ ReduceRow reduce_row(const ReduceKernelArgs& a, std::int64_t row) {
  const int hq_count = a.num_kv_heads * a.qg;
  ReduceRow x;
  x.hq = static_cast<int>(row % hq_count);
  x.b = row / hq_count;
  const int h = x.hq / a.qg, r = x.hq % a.qg;
  x.first = (x.b * a.num_kv_heads + h) * a.partitions * a.qg + r;
  x.lm = partial_lm_index(x.b * a.num_kv_heads + h, r, 0, a.partitions, a.qg);
  return x;
}

__device__ __forceinline__ float load_l(const ReduceKernelArgs& a, const ReduceRow& x, int p) {
  return a.partial_l[x.lm + p];
}
__device__ __forceinline__ float load_m(const ReduceKernelArgs& a, const ReduceRow& x, int p) {
  return a.partial_m[x.lm + p];
}
__device__ __forceinline__ uint4 load_partial(const ReduceKernelArgs& a, const ReduceRow& x, int p, int d0) {
  return *reinterpret_cast<const uint4*>(a.partial_out + (x.first + static_cast<std::int64_t>(p) * a.qg) * kHeadDim + d0);
}

// Strand group k (strands 8k .. 8k + 7) of a row over dims d0 .. d0 + 7: each strand 8k + i sums
// w_p x partial_p by fused multiply-adds over p = 8k + i, 8k + i + 64, ... < p_end in increasing
// p (w: shared-memory weights, kNotRead for a partition not read), loading the 8 partial rows
// of a step together; then the group's tree ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)).
__device__ __forceinline__ void strand_group_sums(const ReduceKernelArgs& a, const ReduceRow& x, const float* wl, int p_end,
                                                  int k, int d0, float (&g)[8]) {
  float s8[8][8];  // [strand 8 k + i][dim d0 + e]
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int e = 0; e < 8; ++e) s8[i][e] = 0.0f;
  for (int p0 = 8 * k; p0 < p_end; p0 += kStrands) {
    uint4 v[8];
    float w[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      w[i] = p0 + i < p_end ? wl[p0 + i] : kNotRead;
      v[i] = w[i] >= 0.0f ? load_partial(a, x, p0 + i, d0) : make_uint4(0u, 0u, 0u, 0u);
    }
#pragma unroll
    for (int i = 0; i < 8; ++i)
      if (w[i] >= 0.0f) accumulate(s8[i], w[i], v[i]);
  }
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    const float s01 = __fadd_rn(s8[0][e], s8[1][e]), s23 = __fadd_rn(s8[2][e], s8[3][e]);
    const float s45 = __fadd_rn(s8[4][e], s8[5][e]), s67 = __fadd_rn(s8[6][e], s8[7][e]);
    g[e] = __fadd_rn(__fadd_rn(s01, s23), __fadd_rn(s45, s67));
  }
}

// Output element d of the row from its weighted sum s and the sum of weights (every kernel's last
// step): s / total rounded to bf16, 0 for an empty row, NaN when some l was NaN.
__device__ __forceinline__ void store_out(const ReduceKernelArgs& a, const ReduceRow& x, int d, float s, float total,
                                          bool any_nan) {
  const float y = total > 0.0f ? s / total : 0.0f;
  std::uint16_t bits;
  asm("cvt.rn.bf16.f32 %0, %1;\n" : "=h"(bits) : "f"(y));
  if (any_nan) bits = 0x7FC0u;  // the partition kernel's NaN (P = 1 gives the same bits)
  a.out[x.b * a.out_stride_seq + x.hq * a.out_stride_head + d * a.out_stride_dim] = bits;
}

// The row's lse (when wanted): M + log(sum of weights), -inf for an empty row, NaN as above.
__device__ __forceinline__ void store_lse(const ReduceKernelArgs& a, const ReduceRow& x, float total, float M, bool any_nan) {
  if (a.lse != nullptr)
    a.lse[x.b * a.lse_stride_seq + x.hq * a.lse_stride_head] =
        any_nan ? __uint_as_float(0x7fc00000u) : (total > 0.0f ? __fadd_rn(M, logf(total)) : neg_inf());
}

// out[d0 .. d0 + n) of the row from the per-warp strand-tree sums part[k][i] (i < n), the sum of
// weights and the NaN flag; lse by one thread.
template <int kDims>
__device__ __forceinline__ void write_row(const ReduceKernelArgs& a, const ReduceRow& x, const float (&part)[kWarps][kDims],
                                          int d_base, float total, float M, bool any_nan, bool writes_lse) {
  for (int i = threadIdx.x; i < kDims; i += kReduceThreads) {
    float s = 0.0f;
    for (int k = 0; k < kWarps; ++k) s = __fadd_rn(s, part[k][i]);
    store_out(a, x, d_base + i, s, total, any_nan);
  }
  if (writes_lse && threadIdx.x == 0) store_lse(a, x, total, M, any_nan);
}

}  // namespace reduce_detail

// Block (row, chunk) = (blockIdx.x / 8, blockIdx.x % 8), row = b * num_q_heads + hq: dims
// 32 chunk .. 32 chunk + 31. Thread (strand s = tid / 4, dim lane tid % 4) loads l and m of its
// strand's first 8 partitions and, before any reduction, the 16-byte partial rows of those with
// l > 0, so that the two memory round trips overlap the reduction of M; more than 512
// partitions take further passes.
__global__ void __launch_bounds__(kReduceThreads) decode_reduce_chunks_kernel(const ReduceKernelArgs a) {
  using namespace reduce_detail;
  __shared__ float scratch[kWarps];
  __shared__ float part[kWarps][kReduceChunk];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int chunk = static_cast<int>(blockIdx.x % kReduceChunks);
  const ReduceRow x = reduce_row(a, blockIdx.x / kReduceChunks);
  const int s = tid / kReduceDimLanes, d0 = chunk * kReduceChunk + 8 * (tid % kReduceDimLanes);

  ptx::griddep_wait();  // the partition kernel's results are complete and visible

  float lv[kReduceBatch], mv[kReduceBatch];
  uint4 v[kReduceBatch];
  bool nan = false;
  float mx = neg_inf();
#pragma unroll
  for (int u = 0; u < kReduceBatch; ++u) {
    const int p = s + u * kStrands;
    lv[u] = p < a.partitions ? load_l(a, x, p) : 0.0f;
    mv[u] = p < a.partitions ? load_m(a, x, p) : neg_inf();
  }
#pragma unroll
  for (int u = 0; u < kReduceBatch; ++u) {
    v[u] = lv[u] > 0.0f ? load_partial(a, x, s + u * kStrands, d0) : make_uint4(0u, 0u, 0u, 0u);
    nan = nan || lv[u] != lv[u];
    if (lv[u] > 0.0f) mx = fmaxf(mx, mv[u]);
  }
  for (int p0 = kPass; p0 < a.partitions; p0 += kPass)  // more than 512 partitions: M first
    for (int u = 0; u < kReduceBatch; ++u) {
      const int p = p0 + s + u * kStrands;
      if (p >= a.partitions) break;
      const float lp = load_l(a, x, p);
      nan = nan || lp != lp;
      if (lp > 0.0f) mx = fmaxf(mx, load_m(a, x, p));
    }
  bool any_nan;
  const float M = block_max(mx, nan, scratch, any_nan);

  float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
  float ws = 0.0f;
#pragma unroll
  for (int u = 0; u < kReduceBatch; ++u) {
    if (!(lv[u] > 0.0f)) continue;
    const float w = weight(lv[u], mv[u], M);
    ws = __fadd_rn(ws, w);
    accumulate(acc, w, v[u]);
  }
  for (int p0 = kPass; p0 < a.partitions; p0 += kPass) {
#pragma unroll
    for (int u = 0; u < kReduceBatch; ++u) {
      const int p = p0 + s + u * kStrands;
      lv[u] = p < a.partitions ? load_l(a, x, p) : 0.0f;
      mv[u] = p < a.partitions ? load_m(a, x, p) : neg_inf();
      v[u] = lv[u] > 0.0f ? load_partial(a, x, p, d0) : make_uint4(0u, 0u, 0u, 0u);
    }
#pragma unroll
    for (int u = 0; u < kReduceBatch; ++u) {
      if (!(lv[u] > 0.0f)) continue;
      const float w = weight(lv[u], mv[u], M);
      ws = __fadd_rn(ws, w);
      accumulate(acc, w, v[u]);
    }
  }
  // sum of weights: every dim lane of a strand holds the same; count lane 0's
  const float total = block_sum(tid % kReduceDimLanes == 0 ? ws : 0.0f, scratch);
  // strand s = 8 warp + lane / 4: lanes 4 apart are strands 1 apart
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    acc[e] = __fadd_rn(acc[e], __shfl_xor_sync(0xffffffffu, acc[e], 4));
    acc[e] = __fadd_rn(acc[e], __shfl_xor_sync(0xffffffffu, acc[e], 8));
    acc[e] = __fadd_rn(acc[e], __shfl_xor_sync(0xffffffffu, acc[e], 16));
  }
  if (lane < kReduceDimLanes)
#pragma unroll
    for (int e = 0; e < 8; ++e) part[warp][8 * lane + e] = acc[e];
  __syncthreads();
  write_row<kReduceChunk>(a, x, part, chunk * kReduceChunk, total, M, any_nan, chunk == 0);
}

// Block row = blockIdx.x (b * num_q_heads + hq), all 256 dims, reduce_rows_smem_bytes(P) bytes
// of dynamic shared memory: l and m of every partition go there (256 partitions per pass over
// the block), then the weights in place of l; thread (warp k, lane j) sums strands 8k .. 8k + 7
// over dims 8j .. 8j + 7, reading partitions p0 + i (i < 8) of one step together, so a warp
// reads whole 512-byte partial rows.
__global__ void __launch_bounds__(kReduceThreads) decode_reduce_rows_kernel(const ReduceKernelArgs a) {
  using namespace reduce_detail;
  __shared__ float scratch[kWarps];
  __shared__ float part[kWarps][kHeadDim];
  extern __shared__ float lm[];  // [0, P): l, then w (kNotRead where l is not > 0); [P, 2P): m
  float* const wl = lm;
  float* const wm = lm + a.partitions;
  __shared__ int filled;  // 1 + the last partition with l > 0 (the partitions above add nothing)
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const ReduceRow x = reduce_row(a, blockIdx.x);
  if (tid == 0) filled = 0;

  ptx::griddep_wait();  // the partition kernel's results are complete and visible

  bool nan = false;
  float mx = neg_inf();
  int last = 0;
  for (int p = tid; p < a.partitions; p += kReduceThreads) {
    const float lp = load_l(a, x, p), mp = load_m(a, x, p);
    wl[p] = lp;
    wm[p] = mp;
    nan = nan || lp != lp;
    if (lp > 0.0f) {
      mx = fmaxf(mx, mp);
      last = p + 1;
    }
  }
  __syncthreads();  // filled = 0 is visible
  if (last > 0) atomicMax(&filled, last);
  bool any_nan;
  const float M = block_max(mx, nan, scratch, any_nan);  // (its barriers publish filled)
  const int p_end = filled;  // a short sequence's row: only the first partitions are read below
  for (int p = tid; p < p_end; p += kReduceThreads) wl[p] = wl[p] > 0.0f ? weight(wl[p], wm[p], M) : kNotRead;
  __syncthreads();

  // sum of weights: strand s by thread 4 s (as the chunk kernel's dim lane 0), then the block tree
  float ws = 0.0f;
  if (tid % kReduceDimLanes == 0)
    for (int p = tid / kReduceDimLanes; p < p_end; p += kStrands)
      if (wl[p] >= 0.0f) ws = __fadd_rn(ws, wl[p]);
  const float total = block_sum(ws, scratch);

  float g[8];  // strand group warp over dims 8 lane ..
  strand_group_sums(a, x, wl, p_end, warp, 8 * lane, g);
#pragma unroll
  for (int e = 0; e < 8; ++e) part[warp][8 * lane + e] = g[e];
  __syncthreads();
  write_row<kHeadDim>(a, x, part, 0, total, M, any_nan, true);
}

// Block = 8 rows (rows 8 blockIdx.x + warp, b * num_q_heads + hq), one warp each, lane j dims
// 8j .. 8j + 7; dynamic shared memory reduce_warp_rows_smem_bytes(P): each warp's l (then w) and
// m of every partition (P <= kReduceWarpRowMaxPartitions). No block barrier: a warp's row
// costs its own two memory round trips (l and m, then the partial rows with l > 0, 8 at once),
// so a short sequence's row is as cheap as its few partitions.
__global__ void __launch_bounds__(kReduceThreads, 2) decode_reduce_warp_rows_kernel(const ReduceKernelArgs a) {
  using namespace reduce_detail;
  extern __shared__ float lm[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kWarps + warp;
  const std::int64_t rows = static_cast<std::int64_t>(a.num_seqs) * a.num_kv_heads * a.qg;
  if (row >= rows) return;  // (whole warps: no shuffle below misses a lane)
  const int P = a.partitions;
  float* const wl = lm + warp * 2 * P;  // l, then w (kNotRead where l is not > 0)
  float* const wm = wl + P;
  const ReduceRow x = reduce_row(a, row);

  ptx::griddep_wait();  // the partition kernel's results are complete and visible

  bool nan = false;
  float mx = neg_inf();
  int last = 0;
  for (int p0 = 0; p0 < P; p0 += 4 * 32) {  // 8 loads in flight per lane
    float lv[4], mv[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int p = p0 + 32 * u + lane;
      lv[u] = p < P ? load_l(a, x, p) : 0.0f;
      mv[u] = p < P ? load_m(a, x, p) : neg_inf();
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int p = p0 + 32 * u + lane;
      if (p < P) {
        wl[p] = lv[u];
        wm[p] = mv[u];
      }
      nan = nan || lv[u] != lv[u];
      if (lv[u] > 0.0f) {
        mx = fmaxf(mx, mv[u]);
        last = p + 1;
      }
    }
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    last = max(last, __shfl_xor_sync(0xffffffffu, last, o));
  }
  const bool any_nan = __any_sync(0xffffffffu, nan);
  const float M = mx;
  const int p_end = last;  // the partitions above add nothing
  __syncwarp();  // l and m of every lane
  for (int p = lane; p < p_end; p += 32) wl[p] = wl[p] > 0.0f ? weight(wl[p], wm[p], M) : kNotRead;
  __syncwarp();  // the weights

  // sum of weights: strands lane and lane + 32, each in increasing p; the tree over strands
  // 8k .. 8k + 7 (lanes 4, 2, 1 apart: ((s0 + s4) + (s2 + s6)) + ((s1 + s5) + (s3 + s7))), then
  // k = 0..7 in order from the first group on
  float ws[2] = {0.0f, 0.0f};
#pragma unroll
  for (int h = 0; h < 2; ++h)
    for (int p = lane + 32 * h; p < p_end; p += kStrands)
      if (wl[p] >= 0.0f) ws[h] = __fadd_rn(ws[h], wl[p]);
#pragma unroll
  for (int h = 0; h < 2; ++h)
#pragma unroll
    for (int o = 4; o > 0; o >>= 1) ws[h] = __fadd_rn(ws[h], __shfl_xor_sync(0xffffffffu, ws[h], o));
  float total = __shfl_sync(0xffffffffu, ws[0], 0);
#pragma unroll
  for (int k = 1; k < 8; ++k) total = __fadd_rn(total, __shfl_sync(0xffffffffu, ws[k >> 2], 8 * (k & 3)));

  // dims 8 lane .. 8 lane + 7: strands 8k + i (i < 8) of group k, the group's tree, the groups in
  // order from 0
  float out[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
  for (int k = 0; k < 8 && 8 * k < p_end; ++k) {
    float g[8];
    strand_group_sums(a, x, wl, p_end, k, 8 * lane, g);
#pragma unroll
    for (int e = 0; e < 8; ++e) out[e] = __fadd_rn(out[e], g[e]);
  }
  // (groups k with no partition below p_end add +0 in the other kernels: out[e] + 0 = out[e],
  // never -0, as every sum starts from +0)
#pragma unroll
  for (int e = 0; e < 8; ++e) store_out(a, x, 8 * lane + e, out[e], total, any_nan);
  if (lane == 0) store_lse(a, x, total, M, any_nan);
}

}  // namespace uq::sm90
