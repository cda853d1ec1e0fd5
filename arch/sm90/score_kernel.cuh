// The Hopper (sm_90) NVFP4 index scorer (spec nvfp4-index.md §4): per request, query row
// and head, the maximum q.k̂ over each 128-token page, with the init / local / invisible
// sentinels.
//
// Work: CTA = (request, span of consecutive logical blocks), 4 warps; warp w takes blocks
// w, w + 4, ... of the span, so the four warps write neighbouring score entries at the same
// time. A block that no query row needs computed (sentinel or invisible for every row) is
// never loaded; its sentinels are still written.
//
// Memory: each warp streams its pages through its own ring of kStages page buffers in
// shared memory, filled by 16-byte cp.async copies issued one page ahead; a page is copied
// in its global layout, each lane copying exactly the code bytes it later reads (so only
// the scales, which lanes share, need the warp barrier). A warp's copy of a page reads 8
// tokens x 64 bytes = 512 contiguous bytes per instruction.
//
// Math: tokens are the MMA's rows (M = 16 tokens per tile, 8 tiles per page), query columns
// (row r, head h: column r * H + h, zero-padded to 8 * NT) its columns, dims its k. The k
// order inside a k-step is free as long as A and B agree: lane (g, t) feeds dims
// 32 t + 8 s + 0..7 of k-step s (one 32-bit code word, one scale group), so its 16-byte
// code chunk of a token covers all four k-steps. E4M3 MMA (m16n8k32): products of two E4M3
// values are exact, sums in fp32. The f16 variant converts k̂ and q to fp16 (exact) and
// runs two m16n8k16 per k-step.
//
// Maximum: NaN dots never replace the running maximum (fmaxf), so a block whose visible
// dots are all NaN scores -inf; the causal mask is applied only in blocks that row 0 does
// not see whole; a zero maximum is stored as +0.
#pragma once

#include "sm90/ptx.cuh"
#include "sm90/score_args.hpp"
#include "sm90/score_dequant.cuh"

#include <cstdint>

namespace uq::sm90 {
namespace scorer {

__device__ __forceinline__ long long visible_tokens(long long L, int query_len, int r) {
  const long long v = L - query_len + r + 1;
  return v > 0 ? v : 0;
}
__device__ __forceinline__ long long blocks_for(long long tokens) { return (tokens + kBlockTokens - 1) / kBlockTokens; }

// One page global -> this warp's stage buffer. Lane (g, t) copies 16-byte chunk t of tokens
// 16 m + g and 16 m + g + 8 (the bytes it reads in page_maxima) and two of the 64 scale chunks.
template <bool kAsync>
__device__ __forceinline__ void copy_page(unsigned char* dst, const std::uint8_t* src, int lane) {
  const int g = lane >> 2, t = lane & 3;
  auto chunk = [&](int off) {
    if constexpr (kAsync) {
      ptx::cp_async_16(ptx::smem_addr(dst + off), src + off);
    } else {  // any alignment: bytes, assembled into one 16-byte store
      std::uint32_t w[4];
#pragma unroll
      for (int k = 0; k < 4; ++k)
        w[k] = static_cast<std::uint32_t>(src[off + 4 * k]) | (static_cast<std::uint32_t>(src[off + 4 * k + 1]) << 8) |
               (static_cast<std::uint32_t>(src[off + 4 * k + 2]) << 16) |
               (static_cast<std::uint32_t>(src[off + 4 * k + 3]) << 24);
      *reinterpret_cast<uint4*>(dst + off) = make_uint4(w[0], w[1], w[2], w[3]);
    }
  };
  // The byte-copy variant copies one token row chunk at a time (it holds no copies in flight).
#pragma unroll(kAsync ? 8 : 1)
  for (int m = 0; m < 8; ++m) {
    chunk((16 * m + g) * kCodeBytesPerToken + 16 * t);
    chunk((16 * m + g + 8) * kCodeBytesPerToken + 16 * t);
  }
  chunk(kPageCodes + 16 * lane);
  chunk(kPageCodes + 16 * (lane + 32));
}

// The lane's query operand: column 8 j + g, dims 32 t + 8 s + 0..7 for k-step s. E4M3: two
// registers of 4 bytes; f16: four fp16x2 registers.
template <int NT, bool kF16>
struct QueryOperand {
  static constexpr int kRegs = kF16 ? 4 : 2;
  std::uint32_t r[NT][4][kRegs];

  __device__ __forceinline__ void load(const ScoreKernelArgs& a, long long req, int g, int t) {
    const int cols = a.query_len * a.heads;
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const int c = 8 * j + g;
      const bool valid = c < cols;
      const std::uint8_t* base =
          a.q + (valid ? (req * a.query_len + c / a.heads) * a.q_row + static_cast<long long>(c % a.heads) * a.q_head
                       : 0);
#pragma unroll
      for (int s = 0; s < 4; ++s) {
        std::uint32_t b[8];
#pragma unroll
        for (int i = 0; i < 8; ++i) b[i] = valid ? base[static_cast<long long>(32 * t + 8 * s + i) * a.q_dim] : 0u;
        if constexpr (kF16) {
#pragma unroll
          for (int p = 0; p < 4; ++p) r[j][s][p] = ptx::e4m3x2_to_f16x2(b[2 * p] | (b[2 * p + 1] << 8));
        } else {
          r[j][s][0] = b[0] | (b[1] << 8) | (b[2] << 16) | (b[3] << 24);
          r[j][s][1] = b[4] | (b[5] << 8) | (b[6] << 16) | (b[7] << 24);
        }
      }
    }
  }
};

// Per lane column (8 j + 2 t + e), the maximum over the page's tokens 16 m + g, 16 m + g + 8
// (the MMA rows this lane holds) of the dot, over tokens below lim[j][e] only when masked.
template <int NT, bool kF16>
__device__ __forceinline__ void page_maxima(const unsigned char* stage, const uint2* table,
                                            const QueryOperand<NT, kF16>& q, bool masked, const int (&lim)[NT][2],
                                            float (&run)[NT][2], int g, int t) {
#pragma unroll 2  // two token tiles' loads and table lookups overlap
  for (int m = 0; m < 8; ++m) {
    const int ta = 16 * m + g, tb = ta + 8;
    const uint4 ca = *reinterpret_cast<const uint4*>(stage + ta * kCodeBytesPerToken + 16 * t);
    const uint4 cb = *reinterpret_cast<const uint4*>(stage + tb * kCodeBytesPerToken + 16 * t);
    const std::uint32_t sa = *reinterpret_cast<const unsigned short*>(stage + kPageCodes + ta * 8 + 2 * t);
    const std::uint32_t sb = *reinterpret_cast<const unsigned short*>(stage + kPageCodes + tb * 8 + 2 * t);
    const uint2 ea[2] = {table[sa & 0xFFu], table[sa >> 8]};
    const uint2 eb[2] = {table[sb & 0xFFu], table[sb >> 8]};
    const std::uint32_t wa[4] = {ca.x, ca.y, ca.z, ca.w};
    const std::uint32_t wb[4] = {cb.x, cb.y, cb.z, cb.w};
    float acc[NT][4];
#pragma unroll
    for (int j = 0; j < NT; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      std::uint32_t alo, ahi, blo, bhi;  // token ta / tb, dims 32 t + 8 s + 0..3 / 4..7
      dequant_word(wa[s], ea[s >> 1], alo, ahi);
      dequant_word(wb[s], eb[s >> 1], blo, bhi);
      if constexpr (kF16) {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const std::uint32_t xa = half ? ahi : alo, xb = half ? bhi : blo;
          const std::uint32_t a0 = ptx::e4m3x2_to_f16x2(xa), a2 = ptx::e4m3x2_to_f16x2(xa >> 16);
          const std::uint32_t a1 = ptx::e4m3x2_to_f16x2(xb), a3 = ptx::e4m3x2_to_f16x2(xb >> 16);
#pragma unroll
          for (int j = 0; j < NT; ++j) ptx::mma_f16(acc[j], a0, a1, a2, a3, q.r[j][s][2 * half], q.r[j][s][2 * half + 1]);
        }
      } else {
#pragma unroll
        for (int j = 0; j < NT; ++j) ptx::mma_e4m3(acc[j], alo, blo, ahi, bhi, q.r[j][s][0], q.r[j][s][1]);
      }
    }
    const float ninf = -__int_as_float(0x7f800000);
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float va = acc[j][e], vb = acc[j][2 + e];
        if (masked) {
          va = ta < lim[j][e] ? va : ninf;
          vb = tb < lim[j][e] ? vb : ninf;
        }
        run[j][e] = fmaxf(run[j][e], fmaxf(va, vb));
      }
  }
}

}  // namespace scorer

template <int NT, bool kAsync, bool kF16>
__global__ void __launch_bounds__(scorer::kThreads, scorer::kCtasPerSm) score_kernel(const ScoreKernelArgs a) {
  using namespace scorer;
  extern __shared__ __align__(16) unsigned char smem[];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const long long req = blockIdx.x / a.spans_per_req;
  const long long b0 = static_cast<long long>(blockIdx.x % a.spans_per_req) * a.span;
  const int QL = a.query_len, H = a.heads, cols = QL * H;

  // Bad lengths: masked, and counted once per request (by its first CTA).
  const long long seq = a.seq_lens[req * a.l_stride];
  const long long capacity = static_cast<long long>(a.max_blocks) * kBlockTokens;
  long long L = seq;
  if (seq < 0 || seq > capacity) {
    L = seq < 0 ? 0 : capacity;
    if (b0 == 0 && threadIdx.x == 0)
      atomicAdd(a.counters + (seq < 0 ? kCounterNegativeSeqLens : kCounterLongSeqLens), 1ull);
  }
  const long long nb_req = blocks_for(L);
  const long long b_end = b0 + a.span < nb_req ? b0 + a.span : nb_req;
  if (b0 >= b_end) return;

  {
    auto* dst = reinterpret_cast<std::uint32_t*>(smem);
    const auto* src = reinterpret_cast<const std::uint32_t*>(a.table);
    for (int i = threadIdx.x; i < kTableBytes / 4; i += kThreads) dst[i] = src[i];
  }
  __syncthreads();
  const uint2* table = reinterpret_cast<const uint2*>(smem);
  unsigned char* ring = smem + kTableBytes + warp * kWarpRingBytes;

  const long long first = b0 + warp;
  if (first >= b_end) return;  // no block barrier below this point
  const int nk = static_cast<int>((b_end - first + kWarps - 1) / kWarps);

  QueryOperand<NT, kF16> q;
  q.load(a, req, g, t);
  const long long vis0 = visible_tokens(L, QL, 0);

  // Block b needs its page iff some row's score of b is computed: the last row sees most.
  const long long need_lo = a.init_blocks, need_hi = nb_req - a.local_blocks;
  auto page_ok = [&](long long page) { return page >= 0 && page < a.num_blocks; };
  // The warp's page ids come 32 at a time, lane i holding that of the window's block i, so
  // that a page's copy never waits on its own block-table read. Two windows: one for the
  // copies (which run ahead) and one for the consumer.
  struct IdWindow {
    int base = -1;
    std::int32_t id = -1;
  };
  auto page_at = [&](IdWindow& w, int k) -> long long {
    const int base = k & ~31;
    if (base != w.base) {  // warp-uniform
      w.base = base;
      const int kk = base + lane;
      w.id = kk < nk ? a.block_tables[req * a.t_req + (first + static_cast<long long>(kWarps) * kk) * a.t_block] : -1;
    }
    return __shfl_sync(0xffffffffu, w.id, k & 31);
  };
  IdWindow fetch_ids, consume_ids;

  int fetch_k = 0, fetched = 0;
  // Issues the copy of the next needed page with a valid id (if any) as one commit group;
  // an empty group otherwise, so that wait_group counts stay uniform.
  auto fetch_next = [&]() {
    while (fetch_k < nk) {
      const int k = fetch_k++;
      const long long b = first + static_cast<long long>(kWarps) * k;
      if (b < need_lo || b >= need_hi) continue;
      const long long page = page_at(fetch_ids, k);
      if (!page_ok(page)) continue;
      copy_page<kAsync>(ring + (fetched++ % kStages) * kStageBytes, a.cache + page * kPageBytes, lane);
      break;
    }
    ptx::cp_async_commit();
  };
#pragma unroll
  for (int i = 0; i < kStages - 1; ++i) fetch_next();

  const float ninf = -__int_as_float(0x7f800000);
  int consumed = 0;
  for (int k = 0; k < nk; ++k) {
    const long long b = first + static_cast<long long>(kWarps) * k;
    const bool need = b >= need_lo && b < need_hi;
    const bool loaded = need && page_ok(page_at(consume_ids, k));
    float run[NT][2];
#pragma unroll
    for (int j = 0; j < NT; ++j) run[j][0] = run[j][1] = ninf;
    if (loaded) {
      fetch_next();
      ptx::cp_async_wait<kStages - 1>();
      __syncwarp();
      const unsigned char* stage = ring + (consumed++ % kStages) * kStageBytes;
      const long long base = b * kBlockTokens;
      const bool masked = vis0 < base + kBlockTokens;
      // Tokens of this page the lane's columns (8 j + 2 t + e) see; needed only when masked.
      int lim[NT][2];
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int c = 8 * j + 2 * t + e;
          const long long v = masked && c < cols ? visible_tokens(L, QL, c / H) - base : kBlockTokens;
          lim[j][e] = v < 0 ? 0 : (v > kBlockTokens ? kBlockTokens : static_cast<int>(v));
        }
      scorer::page_maxima<NT, kF16>(stage, table, q, masked, lim, run, g, t);
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e)
#pragma unroll
          for (int x = 4; x < 32; x <<= 1) run[j][e] = fmaxf(run[j][e], __shfl_xor_sync(0xffffffffu, run[j][e], x));
      __syncwarp();  // the stage is free for the copy that reuses it
    } else if (need && lane == 0) {
      atomicAdd(a.counters + kCounterBadBlockIds, 1ull);
    }
    // Lane c stores column c (row c / H, head c % H); its maximum sits in lane (c % 8) / 2.
    const int c = lane;
    float raw = ninf;
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float v = __shfl_sync(0xffffffffu, run[j][e], (c & 7) >> 1);
        if ((c >> 3) == j && (c & 1) == e) raw = v;
      }
    if (c < cols) {
      const int r = c / H, h = c % H;
      const long long nb = blocks_for(visible_tokens(L, QL, r));
      float value;
      if (b >= nb) value = ninf;
      else if (b < a.init_blocks) value = 1e30f;
      else if (b >= nb - a.local_blocks) value = 1e29f;
      else value = raw + 0.0f;  // -0 -> +0; NaN cannot occur (fmaxf), -inf stays
      a.scores[h * a.s_head + (req * QL + r) * a.s_row + b * a.s_block] = value;
    }
  }
  ptx::cp_async_wait<0>();  // no copy outlives the block (only empty groups can be pending)
}

}  // namespace uq::sm90
