// The sm90 UltraQuant decode partition kernel (spec ultraquant.md §5), on tensor cores.
//
// Block (b, h, p): 4 warps over partition p of (sequence b, KV head h). The partition's
// 16-token tiles (tile-groups p, p + P, ... as the spec maps them) are dealt to the warps in
// turn (warp w: tiles w, w + 4, ...); each warp streams its tiles through its own
// double-buffered cp.async pipeline, runs the spec's per-tile online softmax over them, and
// the four warps' (m, l, acc) are merged at the end exactly as the reducer merges partitions.
//
// Per tile, per warp:
//  * QK on fp16 MMAs (m16n8k16; rows = query rows padded to 16, cols = 8 tokens, k = 16 dims):
//    q8 = e4m3(WHT(q)) is exact in fp16, K codes become FP4 x 2^-14 in fp16 (fp4_convert.cuh),
//    so every product is exact; each 32-dim scale group is its own pair of MMAs whose fp32
//    result is scaled by 2^(b - 127) (exact) and summed in fp32.
//  * softmax per tile with natural exp, m and l in fp32, alpha = 1 while m = -inf, l from the
//    unrounded p, P rounded to bf16 for P.V only.
//  * P.V on bf16 MMAs with the roles swapped (rows = 16 head dims, cols = 8 query rows,
//    k = 16 tokens): V^T comes straight from shared memory by transposing ldmatrix on the raw
//    code bytes, FP4 -> bf16 exactly; the V group scale 2^(b - 127) of each token multiplies
//    that token's P (exact in bf16), since every MMA's 16 dims lie in one scale group.
//  * the accumulators of a lane: head dims 32 G + 4 (lane / 4) + {2 hh, 2 hh + 1} of query
//    rows 8 rho + 2 (lane % 4) + {0, 1}, for groups G = 0..7, hh = 0..1, row blocks rho.
#pragma once

#include "sm90/decode_args.hpp"
#include "sm90/fp4_convert.cuh"
#include "sm90/ptx.cuh"

#include <cstdint>

namespace uq::sm90 {
namespace decode_detail {

static_assert(kStages == 2, "the tile loop keeps the valid-token count of two stages in registers");

__device__ __forceinline__ float neg_inf() { return __uint_as_float(0xff800000u); }

// e^x as 2^(x log2 e) on the SFU (the spec allows exp2 of x LOG2E; ~2 ulp, -inf -> 0, 0 -> 1).
__device__ __forceinline__ float exp_sfu(float x) { return ptx::ex2(x * 1.4426950408889634f); }

__device__ __forceinline__ float bf16_bits_to_float(std::uint16_t b) {
  return __uint_as_float(static_cast<std::uint32_t>(b) << 16);
}

// The partition a block covers (spec §5 strided map, §6 length rules).
struct Partition {
  int b, h, p;
  std::int64_t row0;  // first partial row
  std::int64_t L;     // sequence length, clamped
  int trip;           // tile-groups of this partition with tokens below L
  int n_tiles;        // tiles with T0 < L (later tiles change nothing)
};

__device__ __forceinline__ Partition locate(const DecodeKernelArgs& a, int qg) {
  Partition w;
  const std::int64_t block = blockIdx.x;
  w.p = static_cast<int>(block % a.partitions);
  w.h = static_cast<int>((block / a.partitions) % a.num_kv_heads);
  w.b = static_cast<int>(block / (static_cast<std::int64_t>(a.partitions) * a.num_kv_heads));
  w.row0 = block * qg;
  std::int64_t L = a.seq_lens[w.b * a.seq_lens_stride];
  const std::int64_t cap = static_cast<std::int64_t>(a.max_blocks_per_seq) * a.block_size;
  const bool counts = threadIdx.x == 0 && w.p == 0 && w.h == 0;  // once per sequence
  if (L < 0) {
    if (counts) atomicAdd(&a.counters[kCounterNegativeSeqLens], 1ull);
    L = 0;
  } else if (L > cap) {
    if (counts) atomicAdd(&a.counters[kCounterLongSeqLens], 1ull);
    L = cap;
  }
  w.L = L;
  const std::int64_t total_tg = (L + kTileGroupTokens - 1) / kTileGroupTokens;
  w.trip = 0;
  w.n_tiles = 0;
  if (w.p < total_tg) {
    const std::int64_t later = (total_tg - w.p + a.partitions - 1) / a.partitions;
    w.trip = static_cast<int>(later < a.tgpp ? later : a.tgpp);
    const std::int64_t last_tg = w.p + static_cast<std::int64_t>(w.trip - 1) * a.partitions;
    const std::int64_t rest = L - last_tg * kTileGroupTokens;  // > 0
    const std::int64_t last_tiles = (rest + kTileTokens - 1) / kTileTokens;
    w.n_tiles = (w.trip - 1) * kTilesPerGroup + static_cast<int>(last_tiles < kTilesPerGroup ? last_tiles : kTilesPerGroup);
  }
  return w;
}

__device__ __forceinline__ std::int64_t tile_start(const Partition& w, const DecodeKernelArgs& a, int i) {
  return (w.p + static_cast<std::int64_t>(i / kTilesPerGroup) * a.partitions) * kTileGroupTokens +
         (i % kTilesPerGroup) * kTileTokens;
}

// Block ids of 32 of this warp's tiles at once, lane k holding tile j0 + k (so the pipeline
// never waits on a block-table load): the physical block (-1 when absent) and the number of
// valid tokens (0 when absent). A bad block id makes the tile absent and is counted once per
// (sequence, logical block), by the tile at the block's start, in KV head 0's block (the
// generic kernel's rule).
__device__ __forceinline__ void fetch_tile_info(const DecodeKernelArgs& a, const Partition& w, int warp, int n_w,
                                                int j0, int lane, int& phys, int& valid) {
  phys = -1;
  valid = 0;
  const int j = j0 + lane;
  if (j >= n_w) return;
  const std::int64_t T0 = tile_start(w, a, warp + kWarps * j);
  const std::int64_t logical = T0 / a.block_size;
  const std::int64_t id =
      static_cast<std::int64_t>(a.block_tables[w.b * a.table_stride_seq + logical * a.table_stride_block]);
  if (id < 0 || id >= a.num_blocks) {
    if (w.h == 0 && T0 % a.block_size == 0) atomicAdd(&a.counters[kCounterBadBlockIds], 1ull);
    return;
  }
  phys = static_cast<int>(id);
  const std::int64_t left = w.L - T0;
  valid = left < kTileTokens ? static_cast<int>(left) : kTileTokens;
}

// Starts loading the `valid` tokens of tile T0 (physical block phys) into `tile` (row layout
// of decode_args.hpp). kAsync: every slot is 16-byte aligned and the copies are cp.async
// (completed by the caller's wait); otherwise plain synchronous 4-byte or 1-byte copies.
template <bool kAsync, bool kCoalesced = true>
__device__ __forceinline__ void load_tile(const DecodeKernelArgs& a, const Partition& w, std::int64_t T0, int phys,
                                          int valid, unsigned char* tile, int lane) {
  if (valid == 0) return;
  const unsigned char* first = a.cache + phys * a.block_stride + (T0 % a.block_size) * a.pos_stride +
                               static_cast<std::int64_t>(w.h) * a.slot_bytes;
  if constexpr (kAsync && !kCoalesced) {  // (A/B only) two lanes per token
    const int tok = lane >> 1, half = lane & 1;
    if (tok < valid) {
      const unsigned char* src = first + tok * a.pos_stride;
      const std::uint32_t row = ptx::smem_addr(tile + tok * kRowBytes);
#pragma unroll
      for (int j = 0; j < 4; ++j) ptx::cp_async_16(row + 64 * half + 16 * j, src + 64 * half + 16 * j);
      const unsigned char* psrc = src + kSlotKScales + 72 * half;
      const std::uint32_t pdst = row + kRowVCodes - 8 + 72 * half;
      ptx::cp_async_8(half ? pdst : row + kRowKScales, psrc);
#pragma unroll
      for (int j = 1; j < 8; ++j) ptx::cp_async_8(pdst + 8 * j, psrc + 8 * j);
      ptx::cp_async_8(half ? row + kRowVScales : pdst + 64, psrc + 64);
    }
  } else if constexpr (kAsync) {
    // 13 cp.async per lane, consecutive lanes on consecutive pieces of the same slots (so one
    // warp instruction touches a few cache lines, not 16 slots): first the 16 x 8 chunks of
    // 16 bytes of K codes, then the 16 x 18 pieces of 8 bytes of slot bytes 128..271 (K scales,
    // V codes, V scales), re-placed as a row: piece k goes to row byte 256 (k = 0, K scales),
    // 120 + 8k (k = 1..16, V codes) or 264 (k = 17, V scales).
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int f = 32 * i + lane, tok = f >> 3, c = f & 7;
      if (tok < valid)
        ptx::cp_async_16(ptx::smem_addr(tile + tok * kRowBytes + 16 * c), first + tok * a.pos_stride + 16 * c);
    }
#pragma unroll
    for (int i = 0; i < 9; ++i) {
      const int f = 32 * i + lane, tok = f / 18, k = f - 18 * tok;
      const int dst = k == 0 ? kRowKScales : k == 17 ? kRowVScales : kRowVCodes - 8 + 8 * k;
      if (tok < valid)
        ptx::cp_async_8(ptx::smem_addr(tile + tok * kRowBytes + dst), first + tok * a.pos_stride + kSlotKScales + 8 * k);
    }
  } else if (a.flags & kWordLoads) {
    for (int f = lane; f < valid * (kRowBytes / 4); f += 32) {
      const int tok = f / (kRowBytes / 4), k = f % (kRowBytes / 4);
      const int s = k < 32 ? k : k < 64 ? k + 2 : k < 66 ? k - 32 : k;
      *reinterpret_cast<std::uint32_t*>(tile + tok * kRowBytes + 4 * k) =
          *reinterpret_cast<const std::uint32_t*>(first + tok * a.pos_stride + 4 * s);
    }
  } else {
    for (int f = lane; f < valid * kRowBytes; f += 32) {
      const int tok = f / kRowBytes, k = f % kRowBytes;
      const int s = k < 128 ? k : k < 256 ? k + 8 : k < 264 ? k - 128 : k;
      tile[tok * kRowBytes + k] = first[tok * a.pos_stride + s];
    }
  }
}

// q8 of the block's query rows into shared memory as the QK A operand (decode_args.hpp):
// warp w rotates rows w, w + 4, ...; lane l holds dims 8l..8l+7, so WHT stages 0-2 run inside
// a lane and stages 3-7 pair lanes l and l ^ 2^(s-3). Same fp32 operations in the same
// order as the spec's butterflies, so the same values.
template <int QG>
__device__ __forceinline__ void stage_query(const DecodeKernelArgs& a, const Partition& w, unsigned char* qs,
                                            int warp, int lane) {
  for (int r = warp; r < q_rows(QG); r += kWarps) {
    uint4 v = make_uint4(0u, 0u, 0u, 0u);
    if (r < QG) {
      const std::uint16_t* row = a.q + w.b * a.q_stride_seq + static_cast<std::int64_t>(w.h * QG + r) * a.q_stride_head;
      float x[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) x[i] = bf16_bits_to_float(row[(8 * lane + i) * a.q_stride_dim]);
      if (!(a.flags & kQRotated)) {
#pragma unroll
        for (int s = 0; s < 3; ++s)
#pragma unroll
          for (int i = 0; i < 8; ++i)
            if (!(i & (1 << s))) {
              const float lo = x[i], hi = x[i + (1 << s)];
              x[i] = lo + hi;
              x[i + (1 << s)] = lo - hi;
            }
#pragma unroll
        for (int s = 3; s < 8; ++s) {
          const int m = 1 << (s - 3);
          const bool upper = lane & m;
#pragma unroll
          for (int i = 0; i < 8; ++i) {
            const float other = __shfl_xor_sync(0xffffffffu, x[i], m);
            x[i] = upper ? other - x[i] : x[i] + other;
          }
        }
#pragma unroll
        for (int i = 0; i < 8; ++i) x[i] *= 0.0625f;
      }
      v.x = ptx::e4m3_round_to_f16x2(x[0], x[2]);
      v.y = ptx::e4m3_round_to_f16x2(x[4], x[6]);
      v.z = ptx::e4m3_round_to_f16x2(x[1], x[3]);
      v.w = ptx::e4m3_round_to_f16x2(x[5], x[7]);
    }
    *reinterpret_cast<uint4*>(qs + r * kQRowBytes + (lane >> 2) * 64 + (lane & 3) * 16) = v;
  }
}

// A lane's running state: softmax m and (lane-partial) l of query rows lane/4 + 8 rho, and
// the P.V accumulators (see the file comment for their rows and dims).
template <int NR>
struct WarpState {
  float m[NR], l[NR];
  float acc[8][2][NR][4];
};

// P.V of one tile (see the file comment). The V operand is FP4 x 2^-126 (raw bits); the
// factor 2^126 and the group scale 2^(b - 127) of each token must come back exactly:
//  * kFastV (every scale byte b < 128): both go on the P side, bf16(p) x 2^126 x 2^(b - 127)
//    = p x 2^(b - 1) <= 2^126, exact in bf16 (no overflow; fewer underflows than p x 2^(b-127));
//  * otherwise 2^126 goes on V (FP4 exactly, one bf16x2 multiply per A register) and P takes
//    2^(b - 127), which may be as large as 2^127 (2^(b - 1) would overflow for b >= 129).
template <int NR, bool kFastV>
__device__ __forceinline__ void pv_tile(std::uint32_t tile_addr, int lane, const std::uint32_t (&vs)[2][4],
                                        const std::uint32_t (&P)[NR][2], float (&acc)[8][2][NR][4]) {
  std::uint32_t Pq[NR][2];
#pragma unroll
  for (int rho = 0; rho < NR; ++rho)
#pragma unroll
    for (int k = 0; k < 2; ++k) Pq[rho][k] = kFastV ? ptx::bf16x2_mul(P[rho][k], kBf16x2TwoPow126) : P[rho][k];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
#pragma unroll
    for (int jj = 0; jj < 2; ++jj) {
      const int g = 4 * half + 2 * jj;
      // x[0] = (group g, tokens 0-7), x[1] = (g, 8-15), x[2] = (g + 1, 0-7), x[3] = (g + 1, 8-15):
      // lane gets code unit lane/4 (dims 32 g + 4 (lane/4) .. + 3) of tokens 2t (low), 2t + 1 (high).
      std::uint32_t x[4];
      ptx::ldmatrix_x4_trans(x, tile_addr + ((lane & 7) + 8 * ((lane >> 3) & 1)) * kRowBytes + kRowVCodes +
                                    16 * (g + (lane >> 4)));
#pragma unroll
      for (int gg = 0; gg < 2; ++gg) {
        const int G = g + gg;
        std::uint32_t s01, s89;  // bf16x2 2^(b - 127) of tokens {2t, 2t+1}, {2t+8, 2t+9}
        if (2 * jj + gg == 0) { s01 = ue8m0_pair_bf16<0>(vs[half][0], vs[half][1]); s89 = ue8m0_pair_bf16<0>(vs[half][2], vs[half][3]); }
        else if (2 * jj + gg == 1) { s01 = ue8m0_pair_bf16<1>(vs[half][0], vs[half][1]); s89 = ue8m0_pair_bf16<1>(vs[half][2], vs[half][3]); }
        else if (2 * jj + gg == 2) { s01 = ue8m0_pair_bf16<2>(vs[half][0], vs[half][1]); s89 = ue8m0_pair_bf16<2>(vs[half][2], vs[half][3]); }
        else { s01 = ue8m0_pair_bf16<3>(vs[half][0], vs[half][1]); s89 = ue8m0_pair_bf16<3>(vs[half][2], vs[half][3]); }
        std::uint32_t B[NR][2];
#pragma unroll
        for (int rho = 0; rho < NR; ++rho) {
          B[rho][0] = ptx::bf16x2_mul(Pq[rho][0], s01);
          B[rho][1] = ptx::bf16x2_mul(Pq[rho][1], s89);
        }
        const std::uint32_t xa = x[2 * gg], xb = x[2 * gg + 1];
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {  // dims 32 G + 4 (lane/4) + 2 hh + {0, 1}
          std::uint32_t a0, a1, a2, a3;
          if (hh == 0) {
            a0 = v_nibble_bf16<0, !kFastV>(xa); a1 = v_nibble_bf16<1, !kFastV>(xa);
            a2 = v_nibble_bf16<0, !kFastV>(xb); a3 = v_nibble_bf16<1, !kFastV>(xb);
          } else {
            a0 = v_nibble_bf16<2, !kFastV>(xa); a1 = v_nibble_bf16<3, !kFastV>(xa);
            a2 = v_nibble_bf16<2, !kFastV>(xb); a3 = v_nibble_bf16<3, !kFastV>(xb);
          }
#pragma unroll
          for (int rho = 0; rho < NR; ++rho) ptx::mma_bf16(acc[G][hh][rho], a0, a1, a2, a3, B[rho][0], B[rho][1]);
        }
      }
    }
  }
}

template <int QG, int kQkUnroll, bool kAllowFastV>
__device__ __forceinline__ void compute_tile(const unsigned char* tile, int valid, std::uint32_t qs_addr,
                                             float score_scale, WarpState<(QG <= 8 ? 1 : 2)>& st, int lane) {
  constexpr int NR = QG <= 8 ? 1 : 2;
  const int gid = lane >> 2, t = lane & 3;
  const std::uint32_t tile_addr = ptx::smem_addr(tile);

  // ---- QK: S[nb][e]: token 8 nb + 2t + (e & 1), query row gid + 8 (e >> 1)
  float S[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll kQkUnroll
  for (int half = 0; half < 2; ++half) {  // scale groups 4 half .. 4 half + 3
    std::uint32_t ks[2][2];  // K scale bytes of groups 4 half.. of the lane's tokens 8 nb + 2t + c
#pragma unroll
    for (int nb = 0; nb < 2; ++nb)
#pragma unroll
      for (int c = 0; c < 2; ++c)
        ks[nb][c] = ptx::lds_u32(tile_addr + (8 * nb + 2 * t + c) * kRowBytes + kRowKScales + 4 * half);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int g = 4 * half + j;
      // kw[nb] = word t of group g of token 8 nb + gid (matrices: tokens 0-7, 8-15)
      std::uint32_t kw[2];
      ptx::ldmatrix_x2(kw, tile_addr + (lane & 15) * kRowBytes + kRowKCodes + 16 * g);
      const uint4 qa = ptx::lds_v4(qs_addr + gid * kQRowBytes + g * 64 + t * 16);
      uint4 qb = make_uint4(0u, 0u, 0u, 0u);
      if constexpr (NR == 2) qb = ptx::lds_v4(qs_addr + (gid + 8) * kQRowBytes + g * 64 + t * 16);
#pragma unroll
      for (int nb = 0; nb < 2; ++nb) {
        std::uint32_t kf[4];
        k_word_to_f16(kw[nb], kf);
        float c[4] = {0.f, 0.f, 0.f, 0.f};
        ptx::mma_f16(c, qa.x, qb.x, qa.y, qb.y, kf[0], kf[1]);  // dims +0 +2 | +4 +6
        ptx::mma_f16(c, qa.z, qb.z, qa.w, qb.w, kf[2], kf[3]);  // dims +1 +3 | +5 +7
        float s0, s1;
        if (j == 0) { s0 = ue8m0_f32<0>(ks[nb][0]); s1 = ue8m0_f32<0>(ks[nb][1]); }
        else if (j == 1) { s0 = ue8m0_f32<1>(ks[nb][0]); s1 = ue8m0_f32<1>(ks[nb][1]); }
        else if (j == 2) { s0 = ue8m0_f32<2>(ks[nb][0]); s1 = ue8m0_f32<2>(ks[nb][1]); }
        else { s0 = ue8m0_f32<3>(ks[nb][0]); s1 = ue8m0_f32<3>(ks[nb][1]); }
        S[nb][0] += c[0] * s0;
        S[nb][1] += c[1] * s1;
        if constexpr (NR == 2) {
          S[nb][2] += c[2] * s0;
          S[nb][3] += c[3] * s1;
        }
      }
    }
  }

  // ---- scores (x softmax scale after the dot product), masking, online softmax
  std::uint32_t P[NR][2];  // bf16 p of query row gid + 8 rho: {tokens 2t, 2t+1}, {2t+8, 2t+9}
  float alpha[NR];
#pragma unroll
  for (int rho = 0; rho < NR; ++rho) {
    float s[4];
#pragma unroll
    for (int nb = 0; nb < 2; ++nb)
#pragma unroll
      for (int c = 0; c < 2; ++c)
        s[2 * nb + c] = 8 * nb + 2 * t + c < valid ? S[nb][2 * rho + c] * score_scale : neg_inf();
    float tmax = fmaxf(fmaxf(s[0], s[1]), fmaxf(s[2], s[3]));
    tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 1));
    tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 2));
    const float m_old = st.m[rho];
    const float m_new = fmaxf(m_old, tmax);
    alpha[rho] = m_old == neg_inf() ? 1.0f : exp_sfu(m_old - m_new);
    float p[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) p[i] = m_new == neg_inf() ? 0.0f : exp_sfu(s[i] - m_new);
    st.l[rho] = st.l[rho] * alpha[rho] + ((p[0] + p[1]) + (p[2] + p[3]));
    st.m[rho] = m_new;
    P[rho][0] = ptx::pack_bf16x2(p[0], p[1]);
    P[rho][1] = ptx::pack_bf16x2(p[2], p[3]);
  }

  // ---- acc *= alpha (rows 8 rho + 2t + c take alpha from lane 4 (2t + c)); skipped, exactly,
  // when no row's max moved
  bool moved = alpha[0] != 1.0f;
  if constexpr (NR == 2) moved = moved || alpha[1] != 1.0f;
  if (__any_sync(0xffffffffu, moved)) {
#pragma unroll
    for (int rho = 0; rho < NR; ++rho) {
      const float a0 = __shfl_sync(0xffffffffu, alpha[rho], 8 * t);
      const float a1 = __shfl_sync(0xffffffffu, alpha[rho], 8 * t + 4);
#pragma unroll
      for (int G = 0; G < 8; ++G)
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
          st.acc[G][hh][rho][0] *= a0;
          st.acc[G][hh][rho][1] *= a1;
          st.acc[G][hh][rho][2] *= a0;
          st.acc[G][hh][rho][3] *= a1;
        }
    }
  }

  // ---- P.V: V scale words of the lane's tokens 2t, 2t+1, 2t+8, 2t+9 (0 when absent), then the
  // faster exact variant when no scale byte has its top bit set (every b < 128).
  const int tok[4] = {2 * t, 2 * t + 1, 2 * t + 8, 2 * t + 9};
  std::uint32_t vs[2][4];
#pragma unroll
  for (int half = 0; half < 2; ++half)
#pragma unroll
    for (int c = 0; c < 4; ++c)
      vs[half][c] = tok[c] < valid ? ptx::lds_u32(tile_addr + tok[c] * kRowBytes + kRowVScales + 4 * half) : 0u;
  const std::uint32_t any = vs[0][0] | vs[0][1] | vs[0][2] | vs[0][3] | vs[1][0] | vs[1][1] | vs[1][2] | vs[1][3];
  if (kAllowFastV && __all_sync(0xffffffffu, (any & 0x80808080u) == 0u))
    pv_tile<NR, true>(tile_addr, lane, vs, P, st.acc);
  else
    pv_tile<NR, false>(tile_addr, lane, vs, P, st.acc);
}

}  // namespace decode_detail

// kMinBlocks: blocks per SM the register budget is sized for (4 -> 128 registers per thread;
// fewer -> more registers, and the QK loop fully unrolled). kAllowFastV: take pv_tile's faster
// exact variant for tiles whose V scale bytes are all below 128.
template <int QG, bool kAsync, int kMinBlocks = (QG <= 8 ? 4 : 2), bool kAllowFastV = true, bool kCoalesced = true>
__global__ void __launch_bounds__(kThreads, kMinBlocks) decode_partitions_kernel(const DecodeKernelArgs a) {
  using namespace decode_detail;
  constexpr int NR = QG <= 8 ? 1 : 2;
  extern __shared__ __align__(128) unsigned char smem[];
  unsigned char* const tiles = smem;
  unsigned char* const qs = smem + kTileRegionBytes;
  float* const stat_m = reinterpret_cast<float*>(qs + q_rows(QG) * kQRowBytes);  // [warp][row]
  float* const stat_l = stat_m + kWarps * 16;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;

  const Partition w = locate(a, QG);
  if (w.trip == 0) {  // empty partition: its rows are still written (0, 0, -inf)
    for (int i = threadIdx.x; i < QG * kHeadDim / 2; i += kThreads)
      reinterpret_cast<std::uint32_t*>(a.partial_out + w.row0 * kHeadDim)[i] = 0u;
    if (threadIdx.x < QG) {
      a.partial_l[w.row0 + threadIdx.x] = 0.0f;
      a.partial_m[w.row0 + threadIdx.x] = neg_inf();
    }
    return;
  }

  // ---- this warp's tiles: i = warp + 4 j, j < n_w; stage j % 2
  const int n_w = w.n_tiles > warp ? (w.n_tiles - warp + kWarps - 1) / kWarps : 0;
  unsigned char* const my_tiles = tiles + warp * kStages * kTileBytes;
  int info_phys, info_valid;  // lane k: tile j0 + k, j0 a multiple of 32
  fetch_tile_info(a, w, warp, n_w, 0, lane, info_phys, info_valid);
  int valid_next = __shfl_sync(0xffffffffu, info_valid, 0);
  if (n_w > 0)
    load_tile<kAsync, kCoalesced>(a, w, tile_start(w, a, warp), __shfl_sync(0xffffffffu, info_phys, 0), valid_next, my_tiles, lane);
  ptx::cp_async_commit();

  stage_query<QG>(a, w, qs, warp, lane);  // while the first tiles load
  __syncthreads();

  WarpState<NR> st;
#pragma unroll
  for (int rho = 0; rho < NR; ++rho) {
    st.m[rho] = neg_inf();
    st.l[rho] = 0.0f;
  }
#pragma unroll
  for (int G = 0; G < 8; ++G)
#pragma unroll
    for (int hh = 0; hh < 2; ++hh)
#pragma unroll
      for (int rho = 0; rho < NR; ++rho)
#pragma unroll
        for (int e = 0; e < 4; ++e) st.acc[G][hh][rho][e] = 0.0f;

  for (int j = 0; j < n_w; ++j) {
    const int valid = valid_next;
    __syncwarp();  // every lane is done with the stage the next load overwrites
    if (j + 1 < n_w) {
      if (((j + 1) & 31) == 0) fetch_tile_info(a, w, warp, n_w, j + 1, lane, info_phys, info_valid);
      valid_next = __shfl_sync(0xffffffffu, info_valid, (j + 1) & 31);
      load_tile<kAsync, kCoalesced>(a, w, tile_start(w, a, warp + kWarps * (j + 1)), __shfl_sync(0xffffffffu, info_phys, (j + 1) & 31),
                        valid_next, my_tiles + ((j + 1) & 1) * kTileBytes, lane);
    }
    ptx::cp_async_commit();
    ptx::cp_async_wait<1>();
    __syncwarp();  // tile j's bytes, copied by other lanes, are visible
    compute_tile<QG, (kMinBlocks >= 4 ? 1 : 2), kAllowFastV>(my_tiles + (j & 1) * kTileBytes, valid, ptx::smem_addr(qs), a.score_scale, st, lane);
  }
  ptx::cp_async_wait<0>();
  // ---- merge the warps: M = max m, f_w = exp(m_w - M) (0 for empty warps), l = sum f_w l_w,
  // acc = (f_0 acc_0 + f_2 acc_2) + (f_1 acc_1 + f_3 acc_3); partial = bf16(acc * fl32(1/l)).
  const int gid = lane >> 2, t = lane & 3;
#pragma unroll
  for (int rho = 0; rho < NR; ++rho) {
    st.l[rho] += __shfl_xor_sync(0xffffffffu, st.l[rho], 1);
    st.l[rho] += __shfl_xor_sync(0xffffffffu, st.l[rho], 2);
    const int row = gid + 8 * rho;
    if (t == 0 && row < QG) {
      stat_m[warp * 16 + row] = st.m[rho];
      stat_l[warp * 16 + row] = st.l[rho];
    }
  }
  __syncthreads();  // every warp's tiles consumed, stats visible

  float f[NR][2];  // this warp's factor for the lane's accumulator rows 8 rho + 2t + c
#pragma unroll
  for (int rho = 0; rho < NR; ++rho)
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      const int row = 8 * rho + 2 * t + c;
      f[rho][c] = 0.0f;
      if (row < QG) {
        float M = stat_m[row];
        for (int v = 1; v < kWarps; ++v) M = fmaxf(M, stat_m[v * 16 + row]);
        const float mw = stat_m[warp * 16 + row];
        f[rho][c] = mw == neg_inf() ? 0.0f : expf(mw - M);
      }
    }
  float* const merge = reinterpret_cast<float*>(tiles);  // [2][16][kMergeRowFloats] over the tile region
  float* const fin_m = stat_l + kWarps * 16;             // per row: M, l, fl32(1/l)
  float* const fin_l = fin_m + 16;
  float* const fin_inv = fin_l + 16;
  if (threadIdx.x < QG) {
    const int row = threadIdx.x;
    float M = stat_m[row];
    for (int v = 1; v < kWarps; ++v) M = fmaxf(M, stat_m[v * 16 + row]);
    float l = 0.0f;
    for (int v = 0; v < kWarps; ++v) {
      const float mw = stat_m[v * 16 + row];
      l += mw == neg_inf() ? 0.0f : stat_l[v * 16 + row] * expf(mw - M);
    }
    fin_m[row] = M;
    fin_l[row] = l;
    fin_inv[row] = 1.0f / (l > 0.0f ? l : 1.0f);
  }
  for (int phase = 0; phase < 2; ++phase) {  // warps 0, 1 store; then warps 2, 3 add
    if ((warp >> 1) == phase) {
      float* const buf = merge + (warp & 1) * 16 * kMergeRowFloats;
#pragma unroll
      for (int G = 0; G < 8; ++G)
#pragma unroll
        for (int hh = 0; hh < 2; ++hh)
#pragma unroll
          for (int rho = 0; rho < NR; ++rho)
#pragma unroll
            for (int c = 0; c < 2; ++c) {
              const int row = 8 * rho + 2 * t + c;
              if (row < QG) {
                float2* const dst = reinterpret_cast<float2*>(buf + row * kMergeRowFloats + 32 * G + 4 * gid + 2 * hh);
                float2 v = make_float2(st.acc[G][hh][rho][c] * f[rho][c], st.acc[G][hh][rho][c + 2] * f[rho][c]);
                if (phase == 1) {
                  const float2 o = *dst;
                  v.x = o.x + v.x;
                  v.y = o.y + v.y;
                }
                *dst = v;
              }
            }
    }
    __syncthreads();
  }

  // partial = bf16(acc * fl32(1/l)), two dims per thread (coalesced 4-byte stores)
  for (int i = threadIdx.x; i < QG * kHeadDim / 2; i += kThreads) {
    const int row = i / (kHeadDim / 2), d = 2 * (i % (kHeadDim / 2));
    const float inv = fin_inv[row];
    const float2 x = *reinterpret_cast<const float2*>(merge + row * kMergeRowFloats + d);
    const float2 y = *reinterpret_cast<const float2*>(merge + (16 + row) * kMergeRowFloats + d);
    reinterpret_cast<std::uint32_t*>(a.partial_out + (w.row0 + row) * kHeadDim)[d / 2] =
        ptx::pack_bf16x2((x.x + y.x) * inv, (x.y + y.y) * inv);
  }
  if (threadIdx.x < QG) {
    a.partial_l[w.row0 + threadIdx.x] = fin_l[threadIdx.x];
    a.partial_m[w.row0 + threadIdx.x] = fin_m[threadIdx.x];
  }
}

}  // namespace uq::sm90
