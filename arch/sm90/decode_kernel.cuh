// The sm90 UltraQuant decode partition kernel (spec ultraquant.md §5, revision 2), on
// Hopper's warpgroup MMAs (wgmma, sm_90a).
//
// One CTA = one warpgroup (4 warps) over partitions r, r + R', ... of one (sequence b, KV head
// h) (R = ctas_per_bh CTAs per (b, h), decode_grid.hpp; R' <= R of them take the partitions with
// tokens, fewer for short sequences, decode_tile.cuh); each partition's result is exactly what a CTA of its
// own would compute (its own m, l and accumulators, its own partial row). The tiles of 64
// tokens of all its partitions (tile-groups p, p + P, ... as the spec maps them) stream through
// one ring of kStages shared-memory stages: warp 0 reads the block table and starts
// copy-engine copies of the present tokens' 272-byte slots (one per block run: cp.async.bulk
// of contiguous rows, or a tensor-map box of one KV head's rows, decode_tile.cuh), each stage
// completing on its own mbarrier, kStages - 1 tiles ahead of the tile being computed, across
// partition boundaries; q is staged once per CTA. Per tile:
//  * QK^T with tokens as M (S^T = K Q^T, swap-AB): one FP8 wgmma m64nNk32 per 32-dim scale
//    group, N = query rows padded to 8 or 16. A = K from registers: each K code word becomes
//    two E4M3 words by bit placement (FP4 x 2^-6, exact), so every q8 x k product is exact;
//    B = q8 from shared memory (decode_query.cuh). Each group's fp32 result is multiplied by
//    its scale 2^(b - 127) (b = 0 gives 0) and summed in fp32 in group order; the softmax scale,
//    2^6 and log2(e) are one multiplier after the dot product.
//  * online softmax per 64-token tile in base 2 (exp2 with log2(e) folded in): tile maximum
//    over the 4 warps through shared memory, m and l in fp32, alpha = 1 while m = -inf, l from
//    the unrounded p, P rounded to bf16 for P.V only; tokens that are absent or >= L get -inf.
//  * P.V with V^T as A (M = 64 head dims per wgmma, 4 wgmmas cover the 256 dims), K = 16
//    tokens, in decode_pv_split(QG) commit groups, B = P^T from shared memory: V^T comes from a transposing ldmatrix on the raw code
//    bytes; each register's nibbles become exact bf16 FP4 values (fp4_convert.cuh) multiplied
//    by their token's group scale 2^(b - 127) (exact), fp32 accumulation.
// The accumulators of a lane (g = lane / 4, t = lane % 4, warp w): P.V wgmma k (k = 0..3)
// rows g, g + 8 are head dims d0 + k, d1 + k with d0 = (64 w - 16 + 4 g) mod 256 and
// d1 = 64 w + 16 + 4 g; its columns are query rows 2t, 2t + 1 (+ 8 for N = 16), the same
// query rows as its QK columns, so alpha never crosses lanes.
#pragma once

#include "sm90/decode_args.hpp"
#include "sm90/decode_tile.cuh"
#include "sm90/decode_query.cuh"
#include "sm90/decode_queries.cuh"
#include "sm90/fp4_convert.cuh"
#include "sm90/ptx.cuh"

#include <cuda.h>  // CUtensorMap (the type only: no driver library is linked)

#include <cstdint>

namespace uq::sm90 {
namespace decode_detail {

constexpr float kLn2 = 0.6931471805599453f;

// Query row of this lane's c-th accumulator column (c < N / 4).
__device__ __forceinline__ int col_row(int c, int t) { return 2 * t + (c & 1) + 8 * (c >> 1); }
// Accumulator register of (row half r, column c) in a wgmma D fragment.
__host__ __device__ constexpr int acc_index(int r, int c) { return (c & 1) + 2 * r + 4 * (c >> 1); }

// Token (0..15 within a 16-token k-step / QK warp slab) of P.V k index kk. Its inverse is the
// QK row assignment: QK row g is token g, row g + 8 is token 8 + ((g + 4) & 7); P.V k = 2g and
// 2g + 1 are these two tokens, so a lane stores its two p of a query row as one bf16x2. Both
// orders keep the 8 rows of every ldmatrix phase on 8 different 4-bank groups.
__device__ __forceinline__ int pv_token(int kk) { return (kk & 1) ? 8 + (((kk >> 1) + 4) & 7) : (kk >> 1); }

// Shared-memory descriptor address units (16 bytes) from one B operand slice to the next: a QK
// scale group of q8 or a P.V k-step of P^T (2 core-matrix columns x N / 8 row blocks x 128 B).
__host__ __device__ constexpr std::uint64_t desc_step(int n) { return (2 * (n / 8) * 128) >> 4; }

__device__ __forceinline__ void store_bf16x4(std::uint16_t* dst, std::uint32_t lo, std::uint32_t hi) {
  *reinterpret_cast<uint2*>(dst) = make_uint2(lo, hi);
}

// An empty partition (no tile below L): l = 0, m = -inf (or, with P = 1, out = 0 and lse =
// -inf); partition 0 still reads q to find and count non-finite rows, which give NaN.
template <int QG>
__device__ void empty_partition(const DecodeKernelArgs& a, const Partition& w, unsigned char* qbad) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  if (w.p == 0) {
    for (int r = warp; r < QG; r += 4) {
      std::uint32_t raw[8];
      const bool bad = load_query_row(a, w.b, w.h * QG + r, lane, raw);
      if (lane == 0) {
        qbad[r] = bad ? 1 : 0;
        if (bad) atomicAdd(&a.counters[kCounterNonfiniteInputs], 1ull);
      }
    }
    __syncthreads();
  }
  if (a.flags & kWriteOut) {  // P = 1: this is partition 0
    for (int i = tid; i < QG * kHeadDim; i += kThreads) {
      const int r = i / kHeadDim, d = i % kHeadDim;
      a.out[w.b * a.out_stride_seq + static_cast<std::int64_t>(w.h * QG + r) * a.out_stride_head + d * a.out_stride_dim] =
          qbad[r] ? kBf16Nan : 0;
    }
    if (a.lse != nullptr && tid < QG)
      a.lse[w.b * a.lse_stride_seq + static_cast<std::int64_t>(w.h * QG + tid) * a.lse_stride_head] =
          qbad[tid] ? quiet_nan() : neg_inf();
  } else if (tid < QG) {
    const bool bad = w.p == 0 && qbad[tid];
    const std::int64_t at = partition_lm_index(a, w, tid, QG);
    a.partial_l[at] = bad ? quiet_nan() : 0.0f;
    a.partial_m[at] = bad ? quiet_nan() : neg_inf();
  }
}

// P.V of one tile: 16 bf16 wgmmas (4 k-steps of 16 tokens x 4 groups of 64 dims), A = V'^T =
// (V x 2^-kPvShift)^T (P^T carries the 2^kPvShift), in kSplit commit groups: a group's A
// registers stay live until it completes, so each later group first waits for the previous one
// (fewer registers live at once). kBig: some scale byte of the tile is >= 133, where
// 2^(b - 1 - kPvShift) would overflow bf16: 2^(126 - kPvShift) first (FP4 x 2^-kPvShift
// exactly), then 2^(b - 127); otherwise one multiply by 2^(b - 1 - kPvShift) takes the raw
// FP4 x 2^-126 bits to FP4 x 2^(b - 127 - kPvShift), exact for every byte b >= 1 (the smallest,
// subnormal, results are multiples of 2^-133 with few bits).
template <int N, int kSplit, bool kBig>
__device__ __forceinline__ void pv_tile(float (&acc)[4][N / 2], std::uint32_t stage, int warp, int g, std::uint32_t voff,
                                        std::uint32_t voff1, std::uint32_t vtab, std::uint64_t pdesc) {
  constexpr int NA = N / 2;
  constexpr int kSteps = 4 / kSplit;
  constexpr std::uint32_t kTabStep = 8 * kRowBytes;                       // scale-table rows per k-step
  // (unrolled: a rolled loop over the groups cut the instruction-fetch stalls at the headline
  // but cost more instructions at 64 x 131k, docs/perf-log/2026-12-02-sm90-third-pass.md)
#pragma unroll
  for (int hh = 0; hh < kSplit; ++hh) {
    std::uint32_t va[kSteps][4][4];  // [k-step][nibble / wgmma][register]
#pragma unroll
    for (int s2 = 0; s2 < kSteps; ++s2) {
      const int s = hh * kSteps + s2;
      const std::uint32_t vrow = stage + s * 16 * kRowBytes;
      std::uint32_t x[4];
      if (warp == 0) {
        std::uint32_t z[4], y[2];
        ptx::ldmatrix_x4_trans(z, vrow + voff);
        ptx::ldmatrix_x2_trans(y, vrow + voff1);
        x[0] = g >= 4 ? z[0] : z[2];
        x[1] = g >= 4 ? z[1] : z[3];
        x[2] = y[0];
        x[3] = y[1];
      } else {
        ptx::ldmatrix_x4_trans(x, vrow + voff);
      }
      // scale pairs in A-register order: (row g | g + 8) x (k 2t.. | k 8 + 2t..)
      const uint4 e0 = ptx::lds_v4(stage + vtab + s * kTabStep);              // tokens (t, 12 + t)
      const uint4 e1 = ptx::lds_v4(stage + vtab + s * kTabStep + kRowBytes);  // tokens (4 + t, 8 + t)
      const std::uint32_t xr[4] = {x[0], x[2], x[1], x[3]};
      if constexpr (!kBig) {
        const std::uint32_t f[4] = {e0.z, e0.w, e1.z, e1.w};
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          va[s2][0][r] = ptx::bf16x2_mul_rn(v_nibble_raw_bf16<0>(xr[r]), f[r]);
          va[s2][1][r] = ptx::bf16x2_mul_rn(v_nibble_raw_bf16<1>(xr[r]), f[r]);
          va[s2][2][r] = ptx::bf16x2_mul_rn(v_nibble_raw_bf16<2>(xr[r]), f[r]);
          va[s2][3][r] = ptx::bf16x2_mul_rn(v_nibble_raw_bf16<3>(xr[r]), f[r]);
        }
      } else {
        const std::uint32_t p[4] = {e0.x, e0.y, e1.x, e1.y};
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          va[s2][0][r] = ptx::bf16x2_mul_rn(ptx::bf16x2_mul_rn(v_nibble_raw_bf16<0>(xr[r]), kBf16x2VMultiplier), p[r]);
          va[s2][1][r] = ptx::bf16x2_mul_rn(ptx::bf16x2_mul_rn(v_nibble_raw_bf16<1>(xr[r]), kBf16x2VMultiplier), p[r]);
          va[s2][2][r] = ptx::bf16x2_mul_rn(ptx::bf16x2_mul_rn(v_nibble_raw_bf16<2>(xr[r]), kBf16x2VMultiplier), p[r]);
          va[s2][3][r] = ptx::bf16x2_mul_rn(ptx::bf16x2_mul_rn(v_nibble_raw_bf16<3>(xr[r]), kBf16x2VMultiplier), p[r]);
        }
      }
    }
#pragma unroll
    for (int s2 = 0; s2 < kSteps; ++s2)
#pragma unroll
      for (int k = 0; k < 4; ++k)
#pragma unroll
        for (int e = 0; e < 4; ++e) ptx::reg_fence(va[s2][k][e]);
#pragma unroll
    for (int k = 0; k < 4; ++k)
#pragma unroll
      for (int e = 0; e < NA; ++e) ptx::reg_fence(acc[k][e]);
    std::uint64_t pd[kSteps];
#pragma unroll
    for (int s2 = 0; s2 < kSteps; ++s2) {
      pd[s2] = pdesc + (hh * kSteps + s2) * desc_step(N);
      ptx::reg_fence(pd[s2]);
    }
    ptx::wgmma_fence();
#pragma unroll
    for (int s2 = 0; s2 < kSteps; ++s2)
#pragma unroll
      for (int k = 0; k < 4; ++k) ptx::wgmma_bf16_rs<N>(acc[k], va[s2][k], pd[s2]);
    ptx::wgmma_commit();
    if (hh + 1 < kSplit) {
      ptx::wgmma_wait<0>();
#pragma unroll
      for (int k = 0; k < 4; ++k)
#pragma unroll
        for (int e = 0; e < NA; ++e) ptx::reg_fence(acc[k][e]);
    }
  }
}

// The partition kernel's body, for one query token per sequence (kQueries false: Args =
// DecodeKernelArgs, N = q_rows(QG), rows = the QG query heads) and for several (kQueries: Args =
// DecodeQueriesKernelArgs, N = queries_n(max_query_len x QG), rows = (query token, head) pairs,
// decode_queries.cuh). What the multi-token form adds is under `if constexpr (kQueries)`: the
// one-token kernels compile to the same code as before it existed.
template <int QG, int N, bool kQueries, int kCopy, class Args>
__device__ __forceinline__ void decode_body(const Args& a, const CUtensorMap& slots) {
  constexpr int kStages = kDecodeStages;
  constexpr int NB = N / 8;   // row blocks of 8 query rows
  constexpr int NC = N / 4;   // accumulator columns per lane
  constexpr int NA = N / 2;   // accumulator registers per wgmma
  constexpr DecodeSmem SL = decode_smem_layout_n(N);
  constexpr int kPvSplit = decode_pv_split_n(N);
  constexpr int kQkBatch = decode_qk_batch(N, kQueries);
  extern __shared__ __align__(128) unsigned char smem[];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;

  // The reducer (launched with programmatic serialization) may be scheduled now; it waits for
  // this grid's completion before it reads anything.
  ptx::griddep_launch_dependents();

  // This CTA: (sequence, KV head) bh, its partitions with tokens r, r + RW, ... < filled (RW =
  // sv.workers CTAs of the R = a.ctas_per_bh, decode_grid.hpp, decode_tile.cuh), which stream
  // through one ring without a break (the next partition's first tiles load while this one's
  // last compute), and the empty ones p >= filled, p = r (mod R), which only write l and m.
  const unsigned nbh = static_cast<unsigned>(a.num_seqs) * static_cast<unsigned>(a.num_kv_heads);
  const int R = a.ctas_per_bh;
  const int r = static_cast<int>(blockIdx.x / nbh);  // r-major: every bh gets its first CTA first
  // Several query tokens: the sequence's query rows first (a malformed range: nothing is read,
  // written or counted but the range), then its length; a sequence without query tokens has
  // nothing to compute.
  SequenceQueries sq{0, 1};
  if constexpr (kQueries) {
    sq = sequence_queries(a, blockIdx.x - static_cast<unsigned>(r) * nbh, r == 0);
    if (sq.n < 0) return;
  }
  const SeqView sv = locate_seq(a, blockIdx.x - static_cast<unsigned>(r) * nbh, r == 0);
  if constexpr (kQueries) {
    if (sq.n == 0) return;
  }
  const int live = kQueries ? sq.n * QG : QG;  // the query rows in use (the rest of N is padding)
  // Partitions with tokens: r, r + RW, ... < filled (RW = sv.workers <= R); empty ones: the
  // p >= filled with p = r (mod R).
  const int RW = sv.workers;
  const int nk = r < RW && r < sv.filled ? (sv.filled - 1 - r) / RW + 1 : 0;  // partitions of this CTA with tokens
  unsigned char* const qbad = smem + SL.qbad;
  const int first_empty = r >= sv.filled ? r : r + (sv.filled - r + R - 1) / R * R;
  for (int p = first_empty; p < a.partitions; p += R) {
    if constexpr (kQueries) empty_queries_partition<QG>(a, partition_of(a, sv, p, QG), sq, qbad);
    else empty_partition<QG>(a, partition_of(a, sv, p, QG), qbad);
  }
  if (nk == 0) return;

  const std::uint32_t ring_a = ptx::smem_addr(smem + SL.ring);
  const std::uint32_t q_a = ptx::smem_addr(smem + SL.q);
  const std::uint32_t p_a = ptx::smem_addr(smem + SL.p);
  const std::uint32_t red_a = ptx::smem_addr(smem + SL.red);
  const std::uint32_t redl_a = ptx::smem_addr(smem + SL.redl);
  const std::uint32_t meta_a = ptx::smem_addr(smem + SL.meta);
  const std::uint32_t bar_a = ptx::smem_addr(smem + SL.bars);
  float* const red = reinterpret_cast<float*>(smem + SL.red);
  float* const redl = reinterpret_cast<float*>(smem + SL.redl);
  constexpr bool bulk = kCopy != kCopySync;
  const int sub = decode_sub_rows(a.block_size);
  const int nbpt = kTileTokens / sub;

  // The loader (warp 0) walks the CTA's tiles in consumption order: tile li of partition
  // r + lk RW, global tile lg (stage lg % kStages). On reaching a partition's end it starts the
  // next partition's table loads, which the next refill (one tile later) consumes.
  TableCache tc;
  std::uint64_t policy = 0;
  Partition wl = partition_of(a, sv, r, QG);
  int lk = 0, li = 0, lg = 0;
  if (warp == 0) {
    table_init(tc, a, wl, nbpt, sub, lane);
    policy = ptx::l2_evict_first_policy();
  }
  auto issue_next = [&]() {
    const int sj = lg;
    if constexpr (bulk)
      issue_tile<kCopy>(tc, a, wl, nbpt, sub, li, ring_a + sj * kStageBytes, meta_a + 8 * sj, bar_a + 8 * sj, policy, &slots,
                        lane);
    lg = lg + 1 == kStages ? 0 : lg + 1;
    if (++li == wl.n_tiles) {
      li = 0;
      if (++lk < nk) {
        wl = partition_of(a, sv, r + lk * RW, QG);
        table_init(tc, a, wl, nbpt, sub, lane);
      }
    }
  };
  if (bulk && tid == 0) {
    for (int s = 0; s < kStages; ++s) ptx::mbarrier_init(bar_a + 8 * s, 1);
    ptx::fence_mbarrier_init();
  }
  __syncthreads();  // mbarriers initialised
  if (bulk && warp == 0)
    for (int s = 0; s < kStages && lk < nk; ++s) issue_next();
  // while the first tiles load
  if constexpr (kQueries) stage_query_rows<QG, N>(a, sq, sv.h, smem + SL.q, qbad, bulk ? 1 : 0, warp, lane);
  else stage_query<QG>(a, sv.b, sv.h, smem + SL.q, qbad, bulk ? 1 : 0, warp, lane);
  ptx::fence_proxy_async_shared();  // q8 is read by the wgmmas (async proxy)
  __syncthreads();
  if (r == 0 && tid < live && qbad[tid]) atomicAdd(&a.counters[kCounterNonfiniteInputs], 1ull);  // partition 0 counts

  // Several query tokens: the first token that some row in use does not see (row 0's limit):
  // tiles below it need no row masks (a row's limit, row_limit, is recomputed where needed:
  // N / 4 registers fewer across the tile loop).
  int lim_min = 0;
  if constexpr (kQueries) lim_min = row_limit<QG>(sq, sv.L, 0);

  // ---- per-lane constants, fixed for the CTA's life. Left to itself, ptxas recomputes the ones
  // the tile loop uses from threadIdx.x at every use (4.2 warp instructions per token at QG 6:
  // the audit of docs/perf-log/2026-12-05-sm90-instruction-budget.md); `lane_constant` holds
  // them in registers where the instance has the registers (decode_keeps_lane_constants).
  constexpr bool kKeepLane = decode_keeps_lane_constants(N);
  const auto lane_constant = [](auto x) { return ptx::keep_live_if<kKeepLane>(x); };
  // QK rows g, g + 8
  const int tokA = lane_constant(16 * warp + g), tokB = lane_constant(16 * warp + 8 + ((g + 4) & 7));
  // K ldmatrix: lane gives row (lane % 8) of matrix lane / 8 = (row half, group parity)
  const int kmi = lane >> 3, kr = lane & 7;
  const std::uint32_t koff =
      lane_constant((16 * warp + ((kmi & 1) ? 8 + ((kr + 4) & 7) : kr)) * kRowBytes + 16 * (kmi >> 1));
  // V ldmatrix (transposing): matrix mi = (chunk c0 or c1, k half); rows are the k-step's
  // tokens in P.V k order. Logical chunks 2w, 2w + 1 of the 8 "16-byte chunks" of V codes;
  // the slot's V codes start 8 bytes into a 16-byte piece, so physical piece c (row bytes
  // 128 + 16c) holds chunk c's codes for c = 1..7, and chunk 0 is the upper half of piece 0
  // (units 4..7) with the lower half of piece 8 (units 0..3): warp 0 loads both pieces.
  const int vmi = lane >> 3;
  const int vtok = pv_token(8 * (vmi & 1) + (lane & 7));
  const int vpiece = warp == 0 ? ((vmi < 2) ? 0 : 8) : ((vmi < 2) ? 2 * warp : 2 * warp + 1);
  const std::uint32_t voff = lane_constant(vtok * kRowBytes + 128 + 16 * vpiece);
  const std::uint32_t voff1 = lane_constant(vtok * kRowBytes + 128 + 16 * 1);  // warp 0's chunk 1 (x2)
  const int d0 = (64 * warp - 16 + 4 * g) & 255, d1 = 64 * warp + 16 + 4 * g;
  const int G0 = d0 >> 5;  // row g's scale group; row g + 8's is G0 + 1 (mod 8): d1 = d0 + 32 (mod 256)
  // The V scale multipliers of a tile: after the QK every warp is done with the stage's K
  // codes, so that space (bytes 0..127 of rows 0..31) holds a table of bf16x2 scale pairs,
  // entry (k-step s, t, token pair j, group G) = {2^(b - 127) of G and G + 1 (mod 8), 2^(b - 1)
  // of G and G + 1} for the tokens of A registers (t, 12 + t) (j = 0) or (4 + t, 8 + t) (j = 1):
  // 16 bytes at row ((s * 4 + t) * 2 + j) of the chunked region, byte 16 G. Thread tau builds
  // entries (s, t, j) = tau / 4 with G = 2 (tau % 4) and 2 (tau % 4) + 1.
  const int pc = tid >> 2, pq = tid & 3;
  const int ps = pc >> 3, pt = (pc >> 1) & 3, pj = pc & 1;
  const int ptokA = lane_constant(16 * ps + (pj ? 4 + pt : pt));
  const int ptokB = lane_constant(16 * ps + (pj ? 8 + pt : 12 + pt));
  const int pG0 = 2 * pq;  // groups 2q, 2q + 1, 2q + 2 (mod 8) make entries G = 2q and 2q + 1
  const std::uint32_t ptab = lane_constant(pc * kRowBytes + pG0 * 16);
  const std::uint32_t psel0 = lane_constant(ue8m0_pair_selector(pG0 & 3));
  const std::uint32_t psel1 = lane_constant(ue8m0_pair_selector((pG0 + 1) & 3));
  const std::uint32_t psel2 = lane_constant(ue8m0_pair_selector((pG0 + 2) & 3));
  // scale word of groups 2q (= 2q + 1's) and 2q + 2
  const int pw0 = lane_constant(pG0 >> 2), pw2 = lane_constant(((pG0 + 2) & 7) >> 2);
  const std::uint32_t vtab = lane_constant((2 * t) * kRowBytes + G0 * 16);  // consumer: entry (0, t, 0, G0)
  // P^T store of the lane's column c: p_lane + p_column(c). Row col_row(c, t) = col_row(c, 0) + 2 t
  // with 2 t + (c & 1) < 8, so t moves only the row within its block of 8 (16 bytes a row).
  const std::uint32_t p_lane = lane_constant(p_a + (warp * 2 + (g >> 2)) * NB * 128 + 16 * (2 * t) + 4 * (g & 3));
  const auto p_column = [](int c) { return (col_row(c, 0) >> 3) * 128 + (col_row(c, 0) & 7) * 16; };
  const std::uint64_t qdesc = ptx::smem_desc(q_a, NB * 128, 128);
  const std::uint64_t pdesc = ptx::smem_desc(p_a, NB * 128, 128);
  constexpr std::uint64_t kGroupStep = desc_step(N);

  int* const sync_t0 = reinterpret_cast<int*>(smem + SL.sync);
  int* const sync_ids = reinterpret_cast<int*>(smem + SL.sync + 8);
  std::uint64_t* const meta = reinterpret_cast<std::uint64_t*>(smem + SL.meta);
  const bool write_out = (a.flags & kWriteOut) != 0;

  int st = 0;            // stage of the tile being computed
  unsigned ph = 0u;      // its mbarrier phase parity
  bool refill = false;   // false for the CTA's first tile only
  for (int kp = 0; kp < nk; ++kp) {
  const Partition w = partition_of(a, sv, r + kp * RW, QG);
  if (!bulk && warp == 0 && kp > 0) table_init(tc, a, w, nbpt, sub, lane);  // synchronous loads: warp 0 follows the consumer
  float m[NC], l[NC];
  float acc[4][NA];
#pragma unroll
  for (int c = 0; c < NC; ++c) {
    m[c] = neg_inf();
    l[c] = 0.0f;
  }
#pragma unroll
  for (int k = 0; k < 4; ++k)
#pragma unroll
    for (int e = 0; e < NA; ++e) acc[k][e] = 0.0f;

  for (int i = 0; i < w.n_tiles; ++i) {
    const std::uint32_t stage = ring_a + st * kStageBytes;
    std::uint64_t mask;
    if constexpr (bulk) {
      ptx::mbarrier_wait_parity(bar_a + 8 * st, ph);
      mask = ptx::lds_u64(meta_a + 8 * st);
    } else {
      if (warp == 0) publish_tile_sync(tc, a, w, nbpt, sub, i, &meta[st], sync_t0, sync_ids, lane);
      __syncthreads();
      copy_tile_sync(a, w, sub, meta[st], *sync_t0, sync_ids, smem + SL.ring + st * kStageBytes);
      __syncthreads();
      mask = meta[st];
    }

    // ---- QK: 8 FP8 wgmmas, one per scale group, A = K from registers
    std::uint32_t kw[4][4];  // kw[j]: words t of (rows g / g + 8) x (groups 2j / 2j + 1)
#pragma unroll
    for (int j = 0; j < 4; ++j) ptx::ldmatrix_x4(kw[j], stage + koff + 32 * j);
    const uint2 ksA = ptx::lds_v2(stage + tokA * kRowBytes + kSlotKScales);
    const uint2 ksB = ptx::lds_v2(stage + tokB * kRowBytes + kSlotKScales);
    // The previous tile's P.V must be complete before the QK operands are defined (ptxas
    // serialises every wgmma whose inputs are written while an earlier group is pending); the
    // K loads above are already in flight.
    ptx::wgmma_wait<0>();
#pragma unroll
    for (int k = 0; k < 4; ++k)
#pragma unroll
      for (int e = 0; e < NA; ++e) ptx::reg_fence(acc[k][e]);
    // ---- scores: sum_g scale_g part_g in group order, x (softmax scale 2^6 log2 e), masked;
    // the wgmmas in commit groups of kQkBatch scale groups (one group for the one-token
    // kernels), each batch's K operands converted after the previous batch completed (nothing
    // pending: no serialisation) so that only one batch's operands and results are live
    float sc[2][NC];
#pragma unroll
    for (int G0 = 0; G0 < 8; G0 += kQkBatch) {
    std::uint32_t fa[kQkBatch][4];
#pragma unroll
    for (int G = G0; G < G0 + kQkBatch; ++G) {
      const std::uint32_t wa = kw[G >> 1][2 * (G & 1)], wb = kw[G >> 1][2 * (G & 1) + 1];
      fa[G - G0][0] = k_even_e4m3(wa);
      fa[G - G0][1] = k_even_e4m3(wb);
      fa[G - G0][2] = k_odd_e4m3(wa);
      fa[G - G0][3] = k_odd_e4m3(wb);
    }
    float part[kQkBatch][NA];
    // pin the operands before the fence: ptxas serialises wgmmas whose inputs are defined
    // after it
#pragma unroll
    for (int G = 0; G < kQkBatch; ++G)
#pragma unroll
      for (int e = 0; e < 4; ++e) ptx::reg_fence(fa[G][e]);
    std::uint64_t qd[kQkBatch];
#pragma unroll
    for (int G = G0; G < G0 + kQkBatch; ++G) {
      qd[G - G0] = qdesc + G * kGroupStep;
      ptx::reg_fence(qd[G - G0]);
    }
    ptx::wgmma_fence();
#pragma unroll
    for (int G = 0; G < kQkBatch; ++G) ptx::wgmma_e4m3_rs<N, false>(part[G], fa[G], qd[G]);
    ptx::wgmma_commit();
    ptx::wgmma_wait<0>();
#pragma unroll
    for (int G = 0; G < kQkBatch; ++G)
#pragma unroll
      for (int e = 0; e < NA; ++e) ptx::reg_fence(part[G][e]);

    if (G0 == 0) {
#pragma unroll
      for (int c = 0; c < NC; ++c) sc[0][c] = sc[1][c] = 0.0f;
    }
#pragma unroll
    for (int G = G0; G < G0 + kQkBatch; ++G) {
      float sA, sB;
      const std::uint32_t wA = G < 4 ? ksA.x : ksA.y, wB = G < 4 ? ksB.x : ksB.y;
      switch (G & 3) {
        case 0: sA = ue8m0_f32<0>(wA); sB = ue8m0_f32<0>(wB); break;
        case 1: sA = ue8m0_f32<1>(wA); sB = ue8m0_f32<1>(wB); break;
        case 2: sA = ue8m0_f32<2>(wA); sB = ue8m0_f32<2>(wB); break;
        default: sA = ue8m0_f32<3>(wA); sB = ue8m0_f32<3>(wB); break;
      }
#pragma unroll
      for (int c = 0; c < NC; ++c) {
        sc[0][c] = fmaf(part[G - G0][acc_index(0, c)], sA, sc[0][c]);
        sc[1][c] = fmaf(part[G - G0][acc_index(1, c)], sB, sc[1][c]);
      }
    }
    }
    const bool vA = (mask >> tokA) & 1u, vB = (mask >> tokB) & 1u;
    // Several query tokens: in a tile that reaches a row's limit, the row's tokens past it
    // are -inf as absent ones are (the steps of a one-token decode of the row's length).
    int tail = 0;  // tokens before the tile's first one (kQueries, a tile that needs row masks)
    bool masked = false;
    if constexpr (kQueries) {
      tail = tile_start(w, a, i);
      masked = tail + kTileTokens > lim_min;
    }
#pragma unroll
    for (int c = 0; c < NC; ++c) {
      sc[0][c] = vA ? sc[0][c] * a.score_scale : neg_inf();
      sc[1][c] = vB ? sc[1][c] * a.score_scale : neg_inf();
      if constexpr (kQueries) {
        if (masked) {
          // (the lane's row limits recomputed here: kept across the loop they are N / 4 registers)
          const int seen = row_limit<QG>(sq, w.L, col_row(c, ptx::opaque(t))) - tail;  // of this tile's tokens
          if (tokA >= seen) sc[0][c] = neg_inf();
          if (tokB >= seen) sc[1][c] = neg_inf();
        }
      }
      float mx = fmaxf(sc[0][c], sc[1][c]);
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 4));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 8));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 16));
      if (g == 0) red[col_row(c, t) * 4 + warp] = mx;
    }
    __syncthreads();  // the warps' maxima; every warp is done with this stage's K bytes and the previous stage

    // ---- the tile's V scale table (over the stage's K codes, layout above)
    bool big;
    {
      uint2 sa = ptx::lds_v2(stage + ptokA * kRowBytes + kSlotVScales);
      uint2 sb = ptx::lds_v2(stage + ptokB * kRowBytes + kSlotVScales);
      if (!((mask >> ptokA) & 1u)) sa = make_uint2(0u, 0u);  // absent: V = 0 exactly
      if (!((mask >> ptokB) & 1u)) sb = make_uint2(0u, 0u);
      const std::uint32_t a0 = pw0 ? sa.y : sa.x, b0 = pw0 ? sb.y : sb.x;
      const std::uint32_t a2 = pw2 ? sa.y : sa.x, b2 = pw2 ? sb.y : sb.x;
      const std::uint32_t p0 = ue8m0_pair_bf16(a0, b0, psel0), p1 = ue8m0_pair_bf16(a0, b0, psel1),
                          p2 = ue8m0_pair_bf16(a2, b2, psel2);
      // every byte <= 132: 2^(b - 1 - kPvShift) = 2^122 x 2^(b - 127) is exact and <= 2^127 in bf16
      big = ((ptx::bf16x2_max(ptx::bf16x2_max(p0, p1), p2) + kBigScaleAddend) & 0x80008000u) != 0u;
      const std::uint32_t f0 = ptx::bf16x2_mul_rn(p0, kBf16x2VMultiplier), f1 = ptx::bf16x2_mul_rn(p1, kBf16x2VMultiplier),
                          f2 = ptx::bf16x2_mul_rn(p2, kBf16x2VMultiplier);
      asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(stage + ptab), "r"(p0), "r"(p1), "r"(f0), "r"(f1) : "memory");
      asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(stage + ptab + 16), "r"(p1), "r"(p2), "r"(f1), "r"(f2)
                   : "memory");
    }

    // ---- online softmax (base 2), P^T to shared memory, acc *= alpha
    float alpha[NC];
    bool moved = false;
#pragma unroll
    for (int c = 0; c < NC; ++c) {
      const int row = col_row(c, t);
      const float4 r4 = ptx::lds_f4(red_a + row * 16);
      const float mt = fmaxf(fmaxf(r4.x, r4.y), fmaxf(r4.z, r4.w));
      const float m_new = fmaxf(m[c], mt);
      alpha[c] = m[c] == neg_inf() ? 1.0f : ptx::ex2(m[c] - m_new);
      moved = moved || alpha[c] != 1.0f;
      m[c] = m_new;
      const float pA = m_new == neg_inf() ? 0.0f : ptx::ex2(sc[0][c] - m_new);
      const float pB = m_new == neg_inf() ? 0.0f : ptx::ex2(sc[1][c] - m_new);
      l[c] = l[c] * alpha[c] + (pA + pB);
      // P' = bf16(2^kPvShift p) = 2^kPvShift bf16(p) (a power of two; the two differ only for
      // p < 2^-122, on bf16's subnormal grid, by < 2^-126): the part of V's scale P^T carries
      const std::uint32_t pp = ptx::pack_bf16x2(pA * kPvShiftFactor, pB * kPvShiftFactor);
      asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(p_lane + p_column(c)), "r"(pp) : "memory");
    }
    if (moved) {
#pragma unroll
      for (int k = 0; k < 4; ++k)
#pragma unroll
        for (int c = 0; c < NC; ++c) {
          acc[k][acc_index(0, c)] *= alpha[c];
          acc[k][acc_index(1, c)] *= alpha[c];
        }
    }
    ptx::fence_proxy_async_shared();  // P^T is read by the wgmmas (and the copy engine refills the table's bytes)
    // barrier + "some scale byte >= 133": then 2^(b - 1 - kPvShift) may overflow bf16 (two multiplies)
    const bool any_big = __syncthreads_or(big) != 0;

    // ---- P.V: 16 bf16 wgmmas (4 k-steps of 16 tokens x 4 groups of 64 dims), A = V^T; the
    // choice between the two scalings is made once per tile, so the common one is one
    // straight run of code (the kernel is instruction-fetch bound at small grids)
    if (!any_big) pv_tile<N, kPvSplit, false>(acc, stage, warp, g, voff, voff1, vtab, pdesc);
    else pv_tile<N, kPvSplit, true>(acc, stage, warp, g, voff, voff1, vtab, pdesc);

    // ---- refill the previous tile's stage with the tile kStages - 1 after this one (every
    // warp finished it before the barrier above)
    if (bulk && warp == 0 && refill && lk < nk) issue_next();
    refill = true;
    if (++st == kStages) {
      st = 0;
      ph ^= 1u;
    }
  }
  ptx::wgmma_wait<0>();
#pragma unroll
  for (int k = 0; k < 4; ++k)
#pragma unroll
    for (int e = 0; e < NA; ++e) ptx::reg_fence(acc[k][e]);

  // ---- l over the lanes and warps (fixed order), then the outputs. (Several query tokens: each
  // row's token and output addresses are computed here from opaque copies of the sequence's
  // query rows and of t: hoisted out of the loops they were 64-bit values live across them.)
  SequenceQueries eq = sq;
  int te = t;
  if constexpr (kQueries) {
    eq.first = ptx::opaque(eq.first);
    eq.n = ptx::opaque(eq.n);
    te = ptx::opaque(t);
  }
#pragma unroll
  for (int c = 0; c < NC; ++c) {
    float s = l[c];
    s += __shfl_xor_sync(0xffffffffu, s, 4);
    s += __shfl_xor_sync(0xffffffffu, s, 8);
    s += __shfl_xor_sync(0xffffffffu, s, 16);
    if (g == 0) redl[col_row(c, t) * 4 + warp] = s;
  }
  __syncthreads();
#pragma unroll
  for (int c = 0; c < NC; ++c) {
    const int row = col_row(c, t);
    if (row >= live) continue;
    const float4 r4 = ptx::lds_f4(redl_a + row * 16);
    const float lt = (r4.x + r4.y) + (r4.z + r4.w);
    // (several query tokens: NaN only where the partition holds a token the row sees, else the
    // empty state, which a non-finite row's lt = 0 gives there)
    const int rq = kQueries ? col_row(c, te) : row;  // (row, for the multi-token addresses)
    const bool bad = qbad[row] != 0 && (!kQueries || holds_row(w.p, row_limit<QG>(eq, w.L, rq)));
    const float inv = 1.0f / (lt > 0.0f ? lt : 1.0f);
    std::uint32_t o[2][2];  // [row half][pair]
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      o[r][0] = ptx::pack_bf16x2(acc[0][acc_index(r, c)] * inv, acc[1][acc_index(r, c)] * inv);
      o[r][1] = ptx::pack_bf16x2(acc[2][acc_index(r, c)] * inv, acc[3][acc_index(r, c)] * inv);
    }
    const int hq = w.h * QG + (kQueries ? row_head<QG>(rq) : row);
    const int seq_row = kQueries ? row_token<QG>(eq, rq) : w.b;  // the row of out and lse
    // the partials first: the common case runs straight through (P = 1 jumps)
    if (!write_out) {
      if (!bad && lt > 0.0f) {
        std::uint16_t* const prow = a.partial_out + (kQueries ? row_partial<QG>(a, eq, w, rq) : w.row0 + row) * kHeadDim;
        store_bf16x4(prow + d0, o[0][0], o[0][1]);
        store_bf16x4(prow + d1, o[1][0], o[1][1]);
      }
      if (warp == 0 && g == 0) {
        const std::int64_t at = kQueries ? row_lm<QG>(a, eq, w, rq) : partition_lm_index(a, w, row, QG);
        a.partial_l[at] = bad ? quiet_nan() : lt;
        a.partial_m[at] = bad ? quiet_nan() : (lt > 0.0f ? __fmul_rn(m[c], kLn2) : neg_inf());
      }
    } else {
      std::uint16_t* const orow = a.out + seq_row * a.out_stride_seq + static_cast<std::int64_t>(hq) * a.out_stride_head;
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int d = r == 0 ? d0 : d1;
        std::uint32_t lo = o[r][0], hi = o[r][1];
        if (bad) lo = hi = 0x7FC07FC0u;
        else if (!(lt > 0.0f)) lo = hi = 0u;
        if (a.flags & kOutVector) {
          store_bf16x4(orow + d, lo, hi);
        } else {
          orow[(d + 0) * a.out_stride_dim] = static_cast<std::uint16_t>(lo);
          orow[(d + 1) * a.out_stride_dim] = static_cast<std::uint16_t>(lo >> 16);
          orow[(d + 2) * a.out_stride_dim] = static_cast<std::uint16_t>(hi);
          orow[(d + 3) * a.out_stride_dim] = static_cast<std::uint16_t>(hi >> 16);
        }
      }
      if (a.lse != nullptr && warp == 0 && g == 0)
        a.lse[seq_row * a.lse_stride_seq + static_cast<std::int64_t>(hq) * a.lse_stride_head] =
            bad ? quiet_nan() : (lt > 0.0f ? __fadd_rn(__fmul_rn(m[c], kLn2), logf(lt)) : neg_inf());
    }
  }
  }  // partitions of this CTA
}

}  // namespace decode_detail

// kCopy: how tiles arrive (decode_copy_kind: kCopySync, kCopyRuns, kCopyBoxes). Separate
// instances, so that the common one's tile loop carries no code of the others (at decode-sized
// grids the kernel was instruction-fetch bound: a tensor-map branch beside the run copies cost
// 7 % at the headline, docs/perf-log/2026-12-02-sm90-tensor-map-reducer.md). slots: the cache's
// tensor map for kCopyBoxes
// (decode.cu), unused otherwise.
template <int QG, int kCopy>
__global__ void __launch_bounds__(kThreads, kDecodeCtasPerSm)
    decode_partitions_kernel(const DecodeKernelArgs a, const __grid_constant__ CUtensorMap slots) {
  decode_detail::decode_body<QG, q_rows(QG), false, kCopy>(a, slots);
}

// Several query tokens per sequence (spec ultraquant.md §5.9): N = queries_n(max_query_len x QG)
// query rows (decode_queries.cuh), its own CTAs per SM (decode_queries_ctas_per_sm).
template <int QG, int N, int kCopy>
__global__ void __launch_bounds__(kThreads, decode_queries_ctas_per_sm(N))
    decode_queries_kernel(const DecodeQueriesKernelArgs a, const __grid_constant__ CUtensorMap slots) {
  decode_detail::decode_body<QG, N, true, kCopy>(a, slots);
}

}  // namespace uq::sm90
