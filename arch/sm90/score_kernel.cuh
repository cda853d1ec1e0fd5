// The Hopper (sm_90a) NVFP4 index scorer (spec nvfp4-index.md §4): per request, query row
// and head, the maximum q.k̂ over each 128-token page, with the init / local / invisible
// sentinels.
//
// Work: CTA = one warpgroup (128 threads) = (request, span of consecutive logical blocks).
// A block that no query row needs computed (sentinel or invisible for every row) is never
// loaded; its sentinels are still written.
//
// Memory: warp 0 walks the span's needed blocks ahead of the math (their page ids 32 at a
// time, one window ahead) and lane 0 issues one bulk copy (TMA) of the whole 9216-byte page
// into a ring of kStages page buffers, completing on that stage's mbarrier; the block index
// a stage holds is stored beside it, and after the last page an arrival without a copy
// marks the end. After a page's math and one CTA barrier, its stage is refilled.
//
// Math: per page two tiles of 64 tokens; wgmma m64nNk16 (sm_90a) with tokens as M, query
// columns (row r, head h: column r H + h, zero-padded to 8 NT) as N, dims as K, fp32
// accumulators, A (keys, fp16) from registers, B (queries, fp16) from shared memory. Lane
// (warp w, g, t) holds tokens 64 u + 16 w + g and + 8 and converts their dims 32 t .. 32 t +
// 31 (16 code bytes, 2 scale groups: one 16-byte shared load per token) to fp16 with byte
// permutes and shifts (score_convert.cuh; k̂ exact, times 2^-8); the query operand is laid
// out in the same dim order (query_dim). The k order inside a step is free as long as A and
// B agree: step j, a0/a1 = code word j / 2, pair 2 (j % 2); a2/a3 = pair 2 (j % 2) + 1.
// Products of two fp16 values holding E4M3 values are exact, sums are fp32. Overlap within a
// warpgroup: each tile's second half of the keys is converted while the first half's MMAs
// run, and the second tile's operands are loaded while the first tile's MMAs run.
//
// Maximum: NaN dots never replace the running maximum (fmaxf), so a block whose visible
// dots are all NaN scores -inf; the causal mask is applied only in pages that row 0 does
// not see whole; each lane's maximum over its 4 tokens of the page, then the 32 partial rows
// (warp, g) of each column reduced through shared memory (one buffer per page parity, so
// the next page never waits for it); a zero maximum is stored as +0.
#pragma once

#include "sm90/score_args.hpp"
#include "sm90/score_convert.cuh"
#include "sm90/score_ptx.cuh"
#include "uq/core/nvfp4_rules.hpp"

#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

namespace uq::sm90 {
namespace scorer {

constexpr int kQueryLoadBatch = 8;  // query bytes a thread has in flight in the prologue

using uq::impl::visible_tokens;  // the core's rule (uq/core/nvfp4_rules.hpp)
using uq::impl::blocks_for_tokens;  // the core's rule

// The dim of the key / query that wgmma k-step j, k index k (0..15) multiplies (the k order
// of the converted keys, score_convert.cuh): lane t = (k % 8) / 2 of the quad converts dims
// 32 t + 8 i + 0..7 (code word i = j / 2), as pairs (n_p, n_{p+4}); a0 holds pair 2 (j % 2),
// a2 pair 2 (j % 2) + 1; e = k % 2 is the half.
__host__ __device__ constexpr int query_dim(int j, int k) {
  const int t = (k % 8) / 2, e = k % 2, p = 2 * (j % 2) + (k >= 8 ? 1 : 0);
  return 32 * t + 8 * (j / 2) + p + 4 * e;
}

// The inverse of query_dim: the k-step and k index that multiply dim d.
__host__ __device__ constexpr int dim_step(int d) { return 2 * ((d >> 3) & 3) + ((d & 3) >> 1); }
__host__ __device__ constexpr int dim_k(int d) { return 8 * (d & 1) + 2 * (d >> 5) + ((d & 7) >> 2); }
__host__ __device__ constexpr bool dim_inverse_holds() {
  for (int d = 0; d < kDim; ++d)
    if (query_dim(dim_step(d), dim_k(d)) != d) return false;
  return true;
}
static_assert(dim_inverse_holds(), "dim_step / dim_k must invert query_dim");

// Byte offset of B element (k-step j, k, column n) in the query operand: per step NT column
// tiles of two 8 x 8 core matrices (k 0..7 then 8..15, 128 bytes apart = the descriptor's
// leading offset), column tiles 256 bytes apart (its stride offset), rows of 16 bytes.
__host__ __device__ constexpr int query_offset_of(int nt, int j, int k, int n) {
  return j * nt * kQueryStepBytes + (k / 8) * 128 + (n / 8) * 256 + (n % 8) * 16 + (k % 8) * 2;
}

// One score column's facts, computed once per CTA, in block indices relative to the CTA's
// first block b0 (clamped into [-1, span + 1], which keeps every comparison below exact):
// where its entries go and where its row's sentinels start (they depend on the row only).
struct Column {
  float* out = nullptr;  // &scores(h, req * QL + r, b0); null when the column is padding
  int nb = 0;            // blocks row r sees
  int init = 0;          // blocks below are init (1e30)
  int local = 0;         // blocks from here to nb are local (1e29)
};
__device__ __forceinline__ int relative(long long b, long long b0, int span) {
  const long long r = b - b0;
  return r < -1 ? -1 : (r > span + 1 ? span + 1 : static_cast<int>(r));
}
__device__ __forceinline__ Column column_of(const ScoreKernelArgs& a, long long req, long long L, long long b0, int c,
                                            int cols, int log2h) {
  Column col;
  if (c < cols) {
    const int r = c >> log2h, h = c & ((1 << log2h) - 1);
    col.out = a.scores + h * a.s_head + (req * a.query_len + r) * a.s_row + b0 * a.s_block;
    const long long nb = blocks_for_tokens(visible_tokens(L, a.query_len, r));
    col.nb = relative(nb, b0, a.span);
    col.init = relative(a.init_blocks, b0, a.span);
    col.local = relative(nb - a.local_blocks, b0, a.span);
  }
  return col;
}

// The score entry of relative block rb from the page maximum raw (times 2^-8,
// score_convert.cuh; -inf when the page is absent).
__device__ __forceinline__ void store_score(const ScoreKernelArgs& a, const Column& col, int rb, float raw) {
  float value;
  if (rb >= col.nb) value = -__int_as_float(0x7f800000);
  else if (rb < col.init) value = uq::nvfp4::kInitScore;
  else if (rb >= col.local) value = uq::nvfp4::kLocalScore;
  else value = raw * 256.0f + 0.0f;  // exact; -0 -> +0; NaN cannot occur (fmaxf), -inf stays
  col.out[rb * a.s_block] = value;
}

// One tile's operands from shared memory: lane (g, t) of warp w, tokens ta and ta + 8 of the
// page (ta = 64 u + 16 w + g): their 16 code bytes 16 t .. 16 t + 15 and scale bytes 2 t,
// 2 t + 1 (groups 2 t, 2 t + 1), and those groups' derived table rows (this lane's copy).
struct TileData {
  uint4 code[2];
  std::uint32_t scales[2];
  Row row[2][2];  // [token][group]
};
__device__ __forceinline__ void load_tile(TileData& d, const unsigned char* codes_t, const unsigned char* scales_t,
                                          const unsigned char* rows_t, int ta) {
#pragma unroll
  for (int m = 0; m < 2; ++m) {
    const int tok = ta + 8 * m;
    d.code[m] = *reinterpret_cast<const uint4*>(codes_t + tok * kCodeBytesPerToken);  // codes_t: page + 16 t
    d.scales[m] = *reinterpret_cast<const unsigned short*>(scales_t + tok * 8);     // scales_t: page + 8192 + 2 t
  }
#pragma unroll
  for (int m = 0; m < 2; ++m)
#pragma unroll
    for (int q = 0; q < 2; ++q) {
      const std::uint32_t sb = prmt(d.scales[m], 0u, 0x4440u + q);  // scale byte q, zero-extended
      const uint2 r = *reinterpret_cast<const uint2*>(rows_t + sb * (kRowCopies * 8));  // rows_t: rows + 8 t
      d.row[m][q] = Row{r.x, r.y};
    }
}

// Half h of a tile's A operand (code words 2 h, 2 h + 1 of both tokens = group 2 t + h =
// k-steps 4 h .. 4 h + 3): frag[token][word][pair].
__device__ __forceinline__ void convert_half(const TileData& d, int h, std::uint32_t (&frag)[2][2][4]) {
#pragma unroll
  for (int m = 0; m < 2; ++m) {
    std::uint32_t f0, f1;
    scale_flips(d.scales[m], f0, f1);
    const std::uint32_t flip = h ? f1 : f0;
    convert_word(h ? d.code[m].z : d.code[m].x, d.row[m][h], flip, frag[m][0]);
    convert_word(h ? d.code[m].w : d.code[m].y, d.row[m][h], flip, frag[m][1]);
  }
}

// The four wgmmas of half h: step j = 4 h + s takes word s / 2 of the half, pairs
// 2 (s % 2) (a0, a1) and 2 (s % 2) + 1 (a2, a3).
template <int NT>
__device__ __forceinline__ void mma_half(float (&acc)[4 * NT], const std::uint32_t (&frag)[2][2][4], int h,
                                         score_ptx::SmemDesc desc0) {
  score_ptx::wgmma_fence();
#pragma unroll
  for (int s = 0; s < 4; ++s) {
    const int i = s / 2, p = 2 * (s % 2);
    const std::uint32_t op[4] = {frag[0][i][p], frag[1][i][p], frag[0][i][p + 1], frag[1][i][p + 1]};
    const int j = 4 * h + s;
    score_ptx::Wgmma<NT>::run(acc, op, score_ptx::SmemDesc{desc0.lo + j * NT * kQueryStepBytes / 16, desc0.hi},
                              j > 0 ? 1 : 0);
  }
}

// The tile's dots into the running maxima (per lane column 8 j + 2 t + e, over tokens ta,
// ta + 8), masked to the tokens each column sees on a partially visible page.
template <int NT, bool kMasked>
__device__ __forceinline__ void tile_maxima(float (&acc)[4 * NT], float (&run)[NT][2], const int (&lim)[NT][2],
                                            int ta) {
  const float ninf = -__int_as_float(0x7f800000);
#pragma unroll
  for (int i = 0; i < 4 * NT; ++i) score_ptx::fence_operand(acc[i]);
#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      float va = acc[4 * j + e], vb = acc[4 * j + 2 + e];
      if constexpr (kMasked) {
        va = ta < lim[j][e] ? va : ninf;
        vb = ta + 8 < lim[j][e] ? vb : ninf;
      }
      run[j][e] = fmaxf(run[j][e], fmaxf(va, vb));
    }
}

// A page's two tiles: the second tile's operands are loaded while the first tile's MMAs
// run, and each tile's second half is converted while its first half's MMAs run.
template <int NT, bool kMasked>
__device__ __forceinline__ void page_maxima(const unsigned char* codes_t, const unsigned char* scales_t,
                                            const unsigned char* rows_t, int ta0,
                                            score_ptx::SmemDesc desc0, const int (&lim)[NT][2], float (&run)[NT][2]) {
  TileData d[2];
  load_tile(d[0], codes_t, scales_t, rows_t, ta0);
#pragma unroll
  for (int u = 0; u < 2; ++u) {
    std::uint32_t lo[2][2][4], hi[2][2][4];
    float acc[4 * NT];
#pragma unroll
    for (int i = 0; i < 4 * NT; ++i) acc[i] = 0.0f;
    convert_half(d[u], 0, lo);
    mma_half<NT>(acc, lo, 0, desc0);
    convert_half(d[u], 1, hi);
    mma_half<NT>(acc, hi, 1, desc0);
    score_ptx::wgmma_commit();
    if (u == 0) load_tile(d[1], codes_t, scales_t, rows_t, ta0 + 64);
    score_ptx::wgmma_wait_all();
    tile_maxima<NT, kMasked>(acc, run, lim, ta0 + 64 * u);
  }
}

}  // namespace scorer

template <int NT, bool kAsync>
__global__ void __launch_bounds__(scorer::kThreads, scorer::kCtasPerSm) score_kernel(const ScoreKernelArgs a) {
  using namespace scorer;
  namespace ptx = score_ptx;
  extern __shared__ __align__(128) unsigned char smem[];
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const long long req = blockIdx.x / a.spans_per_req;
  const long long b0 = static_cast<long long>(blockIdx.x % a.spans_per_req) * a.span;
  const int QL = a.query_len, H = a.heads, cols = QL * H;
  const float ninf = -__int_as_float(0x7f800000);

  // Bad lengths: masked, and counted once per request (by its first CTA).
  const uq::impl::RequestLength length = uq::impl::request_length_in_table(a.seq_lens[req * a.l_stride], a.max_blocks);
  const long long L = length.tokens;
  if ((length.negative || length.too_long) && b0 == 0 && tid == 0)
    atomicAdd(a.counters + (length.negative ? kCounterNegativeSeqLens : kCounterLongSeqLens), 1ull);
  const long long nb_req = blocks_for_tokens(L);
  const long long b_end = b0 + a.span < nb_req ? b0 + a.span : nb_req;
  if (b0 >= b_end) return;

  __shared__ __align__(128) unsigned char static_smem[kStaticBytes<NT>];
  unsigned char* rows = static_smem;
  unsigned char* query = static_smem + kQueryOffset;
  unsigned char* dyn = smem - kStaticBytes<NT>;  // offsets of score_args.hpp from here on
  unsigned char* ring = dyn + kRingOffset<NT>;
  float* reduce = reinterpret_cast<float*>(dyn + kReduceOffset<NT>);
  const std::uint32_t bar0 = ptx::smem_addr(dyn + kBarrierOffset<NT>);
  int* stage_block = reinterpret_cast<int*>(dyn + kBarrierOffset<NT> + kStages * 8);

  // ---------------------------------------------------------------- producer (warp 0)
  // Blocks some row needs computed: [need_lo, need_hi); the walk covers the span's part.
  const long long need_lo = a.init_blocks, need_hi = nb_req - a.local_blocks;
  const long long f_begin = b0 > need_lo ? b0 : need_lo;
  const long long f_end = b_end < need_hi ? b_end : need_hi;
  // The walk in 32-bit indices relative to f_begin (a span is at most max_blocks long).
  const int n_fetch = f_end > f_begin ? static_cast<int>(f_end - f_begin) : 0;
  const std::int32_t* ids = a.block_tables + req * a.t_req + f_begin * a.t_block;
  int fetch_k = 0;  // next block the producer examines (warp 0 only)
  int issued = 0;   // items issued (pages and the end marker)
  bool exhausted = false;
  std::int32_t ids_cur = -1, ids_next = -1;  // page ids of window (k & ~31) and the one after, lane l: + l
  int window = -1;
  auto load_window = [&](int base) -> std::int32_t {
    const int k = base + lane;
    return k < n_fetch ? ids[static_cast<long long>(k) * a.t_block] : -1;
  };
  auto issue_item = [&]() {  // warp 0, converged
    const int s = issued % kStages;
    const std::uint32_t bar = bar0 + 8 * s;
    while (fetch_k < n_fetch) {
      const int k = fetch_k++, base = k & ~31;
      if (base != window) {
        ids_cur = window < 0 ? load_window(base) : ids_next;
        ids_next = load_window(base + 32);
        window = base;
      }
      const std::int32_t page = __shfl_sync(0xffffffffu, ids_cur, k & 31);
      if (page < 0 || page >= a.num_blocks) {
        if (lane == 0) atomicAdd(a.counters + kCounterBadBlockIds, 1ull);
        continue;
      }
      if (lane == 0) {
        stage_block[s] = static_cast<int>(f_begin - b0) + k;
        if constexpr (kAsync) {
          ptx::fence_proxy_async_shared();  // the stage was last read by generic loads
          ptx::mbarrier_arrive_expect_tx(bar, kPageBytes);
          ptx::bulk_copy_g2s(ptx::smem_addr(ring + s * kStageBytes), a.cache + static_cast<long long>(page) * kPageBytes,
                             kPageBytes, bar);
        } else {
          stage_block[kStages + s] = page;  // the consumers copy it
          ptx::mbarrier_arrive(bar);
        }
      }
      ++issued;
      return;
    }
    if (lane == 0) {
      stage_block[s] = static_cast<int>(b_end - b0);  // end marker
      ptx::mbarrier_arrive(bar);
    }
    ++issued;
    exhausted = true;
  };

  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) ptx::mbarrier_init(bar0 + 8 * s, 1);
    ptx::fence_mbarrier_init();
  }
  __syncthreads();
  if (warp == 0)
    for (int s = 0; s < kStages && !exhausted; ++s) issue_item();

  // ---------------------------------------------------------------- operands
  // Every global load of the prologue is issued before any of them is used (unrolled, no
  // division in the addressing): the serial loads this replaced held ~10 % of the warps'
  // sampled stalls in ncu (docs/perf-log/2026-12-01-sm90-wgmma-scorer.md).
  // The derived table (score_convert.cuh), kRowCopies copies: rows tid and tid + 128.
  {
    static_assert(256 == 2 * kThreads, "two table rows per thread");
    const uint2* src = reinterpret_cast<const uint2*>(a.table);  // 4-byte aligned (checked): two words each
    std::uint32_t w[2][2];
#pragma unroll
    for (int m = 0; m < 2; ++m) {
      const std::uint32_t* row = reinterpret_cast<const std::uint32_t*>(src + tid + m * kThreads);
      w[m][0] = row[0];
      w[m][1] = row[1];
    }
#pragma unroll
    for (int m = 0; m < 2; ++m) {
      const int s = tid + m * kThreads;
      const Row r = make_row(static_cast<std::uint8_t>(s), w[m][0], w[m][1]);
#pragma unroll
      for (int c = 0; c < kRowCopies; ++c)
        *reinterpret_cast<uint2*>(rows + (kRowCopies * s + c) * 8) = make_uint2(r.lo, r.hi);
    }
  }
  // The query operand, fp16 (exact), zero columns beyond cols: thread tid owns dim tid of
  // every column (coalesced when the dims are contiguous), stored where query_dim puts it.
  {
    const int d = tid;
    const int log2h_q = H >> 1;  // H in {1, 2, 4}
    const unsigned char* qd = a.q + req * QL * a.q_row + static_cast<long long>(d) * a.q_dim;
    const int off = query_offset_of(NT, dim_step(d), dim_k(d), 0);
#pragma unroll
    for (int n0 = 0; n0 < 8 * NT; n0 += kQueryLoadBatch) {  // batches bound the registers
      std::uint8_t byte[kQueryLoadBatch];
#pragma unroll
      for (int i = 0; i < kQueryLoadBatch; ++i) {
        const int n = n0 + i;
        byte[i] = n < cols ? qd[static_cast<long long>(n >> log2h_q) * a.q_row +
                                static_cast<long long>(n & (H - 1)) * a.q_head]
                           : std::uint8_t{0};
      }
#pragma unroll
      for (int i = 0; i < kQueryLoadBatch; ++i)
        *reinterpret_cast<std::uint16_t*>(query + off + query_offset_of(NT, 0, 0, n0 + i)) =
            __nv_cvt_fp8_to_halfraw(byte[i], __NV_E4M3).x;
    }
  }
  ptx::fence_proxy_async_shared();  // the query operand is read by wgmma (async proxy)
  __syncthreads();

  const ptx::SmemDesc desc0 = ptx::smem_desc(ptx::smem_addr(query), 128, 256);
  const int log2h = H >> 1;  // H in {1, 2, 4}
  const long long vis0 = visible_tokens(L, QL, 0);
  // Columns this thread writes: tid for absent blocks; for loaded pages 4 threads per
  // column (warps 1..3 when 24 columns or fewer, so that warp 0, the producer, has none).
  const Column absent_col = column_of(a, req, L, b0, tid, cols, log2h);
  const int p2 = cols <= 24 ? tid - 32 : tid;
  const int c2 = p2 >> 2, quarter = p2 & 3;
  const Column page_col = column_of(a, req, L, b0, p2 >= 0 ? c2 : cols, cols, log2h);
  const unsigned char* rows_t = rows + 8 * t;  // this lane's table copy
  // Relative blocks from here on are not seen whole by row 0 (the row that sees least).
  const int masked_from = relative(vis0 / kBlockTokens, b0, a.span);
  const int rb_end = static_cast<int>(b_end - b0);

  // ---------------------------------------------------------------- pages
  int cursor = 0;  // next relative block whose scores are not yet written
  for (int item = 0;; ++item) {
    const int s = item % kStages;
    ptx::mbarrier_wait(bar0 + 8 * s, (item / kStages) & 1);
    const int rb = stage_block[s];
    for (; cursor < rb; ++cursor)  // blocks without a page: sentinels or -inf
      if (absent_col.out) store_score(a, absent_col, cursor, ninf);
    if (rb >= rb_end) break;  // the end marker
    unsigned char* stage = ring + s * kStageBytes;
    if constexpr (!kAsync) {  // a cache not 16-byte aligned: the page copied with byte loads
      const std::uint8_t* src = a.cache + static_cast<long long>(stage_block[kStages + s]) * kPageBytes;
      for (int i = tid; i < kPageBytes / 4; i += kThreads)
        reinterpret_cast<std::uint32_t*>(stage)[i] = static_cast<std::uint32_t>(src[4 * i]) |
                                                    (static_cast<std::uint32_t>(src[4 * i + 1]) << 8) |
                                                    (static_cast<std::uint32_t>(src[4 * i + 2]) << 16) |
                                                    (static_cast<std::uint32_t>(src[4 * i + 3]) << 24);
      __syncthreads();
    }

    const unsigned char* codes_t = stage + 16 * t;
    const unsigned char* scales_t = stage + kPageCodes + 2 * t;
    const int ta0 = 16 * warp + g;
    float run[NT][2];
#pragma unroll
    for (int j = 0; j < NT; ++j) run[j][0] = run[j][1] = ninf;
    if (rb >= masked_from) {  // some row does not see the whole page
      const long long base = (b0 + rb) * kBlockTokens;
      int lim[NT][2];  // tokens of this page column 8 j + 2 t + e sees
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int c = 8 * j + 2 * t + e;
          const long long v = c < cols ? visible_tokens(L, QL, c >> log2h) - base : kBlockTokens;
          lim[j][e] = v < 0 ? 0 : (v > kBlockTokens ? kBlockTokens : static_cast<int>(v));
        }
      page_maxima<NT, true>(codes_t, scales_t, rows_t, ta0, desc0, lim, run);
    } else {
      const int lim[NT][2] = {};
      page_maxima<NT, false>(codes_t, scales_t, rows_t, ta0, desc0, lim, run);
    }

    // The page maximum: 32 partial rows (warp, g) per column, through shared memory.
    float* red = reduce + (item & 1) * (kReduceBytes / 4);
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) red[(8 * warp + g) * kReduceStride + 8 * j + 2 * t + e] = run[j][e];
    __syncthreads();  // the partial maxima are written; the stage is free
    if (warp == 0 && !exhausted) issue_item();
    if (p2 >= 0) {
      float v = ninf;
      if (page_col.out)
#pragma unroll
        for (int k = 0; k < 8; ++k) v = fmaxf(v, red[(8 * quarter + k) * kReduceStride + c2]);
      v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
      v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
      if (page_col.out && quarter == 0) store_score(a, page_col, rb, v);
    }
    cursor = rb + 1;
  }
}

}  // namespace uq::sm90
