// The gfx950 UltraQuant decode partition kernel (spec ultraquant.md §5; design in
// arch/gfx950/README.md, "The decode kernels"). One wavefront per workgroup (sequence b,
// KV head h, partition p) computes the QG query rows of KV head h over the tile-groups
// p, p + P, p + 2P, ... (at most TGPP) of sequence b:
//
//   prologue  q8 = e4m3(WHT(q)) of the QG rows into LDS (decode_query.hpp), the two scaled
//             MFMA Q operands kept in registers for the whole loop;
//   per tile  (16 tokens; the K/V loads of the next two tiles are in flight: as tile k's K and
//             V registers are consumed they take tile k + 2's loads)
//     S   = K Q8^T by two chained scaled FP4 x E4M3 MFMAs (A = K codes straight from the
//           cache with their UE8M0 bytes as scales, B = Q8); lane (g, r) gets
//           S[token 4g + i][query r], i = 0..3
//     online softmax per query (fp32, exp2 of x log2 e): the 4 lane groups combine their
//           tokens by xor-16 and xor-32 shuffles
//     V   dequantised (scaled FP4 -> bf16 convert) into LDS as [token][dim], read back
//           transposed by ds_read_b64_tr_b16 as the A operand of 16 bf16 MFMAs (one per 16
//           dims) whose B operand is bf16(P), taken straight from the S registers
//   epilogue  partial = bf16(acc * fl32(1/l)), l, m for the rows r < QG (a partial row only
//             where l > 0); with P = 1 (kDirectOut) out = bf16(acc * fl32(1/l)) and lse instead.
//
// Revision 2 (the rules beside DecodePartitionsLaunch, src/uq/core/decode_launch.hpp): a
// partition without tokens loads nothing but its seq_len (partition 0 also q, to find
// non-finite rows) and writes only l = 0, m = -inf; a query row whose q holds a NaN or an
// infinity writes l = m = NaN (with P = 1: a NaN out row and lse), counted once by partition 0.
//
// The kernel is a plain function, built for gfx950 by decode.hip and for the CPU emulator by
// decode_emulated.hpp. Tiles wholly past the sequence are skipped (they would change nothing:
// p = 0 and alpha = 1 exactly).
#pragma once

#include "gfx950/decode_args.hpp"
#include "gfx950/decode_lse.hpp"
#include "gfx950/decode_queries.hpp"
#include "gfx950/decode_query.hpp"
#include "gfx950/decode_tile.hpp"
#include "gfx950/isa.hpp"
#include "uq/core/sequence_rules.hpp"

namespace uq::gfx950 {
namespace decode_detail {

struct QueryLdsTag {};
struct VTileLdsTag {};

// The online-softmax state of the lane's query column r (identical in the 4 lane groups).
struct SoftmaxState {
  float m;  // running max (natural-log units), -inf before the first valid token
  float l;  // running sum of the unrounded p
};

// The two 16x16x128 scaled MFMAs of one tile: S[token][query] = sum over 256 dims of
// FP4(k) 2^(b_k - 127) q8 (the Q operand's scale is the unit 127). A group whose scale byte is
// 0 is a zero group whatever its codes (spec §1): its codes are replaced by 0.
UQ_DEVICE inline f32x4 tile_scores(const KLoads& t, const i32x8 (&q_op)[2], std::uint32_t lane) {
  const std::uint32_t g = lane >> 4;
  f32x4 s = {0.0f, 0.0f, 0.0f, 0.0f};
  UQ_GFX950_UNROLL
  for (int issue = 0; issue < 2; ++issue) {
    const std::uint32_t scale = (t.scales[issue] >> (8u * g)) & 0xFFu;
    const u32x4 c = t.codes[issue];
    const bool zero_group = scale == 0u;
    const i32x8 k_op = {zero_group ? 0 : static_cast<std::int32_t>(c[0]),
                        zero_group ? 0 : static_cast<std::int32_t>(c[1]),
                        zero_group ? 0 : static_cast<std::int32_t>(c[2]),
                        zero_group ? 0 : static_cast<std::int32_t>(c[3]),
                        0, 0, 0, 0};
    s = mfma_scale_f32_16x16x128_f8f6f4<kFp4, kFp8>(k_op, q_op[issue], s,
                                                    static_cast<std::int32_t>(scale), 127);
  }
  return s;
}

// V of the tile into LDS as bf16 rows [token][dim] (row stride kVRowBytes): lane 4t + c
// dequantises token t's dims 64c .. 64c+63 with the scaled convert (exact: FP4 x 2^(b-127)
// fits bf16). A zero-scale group (or a masked token, which read zeros) gives exact zeros.
UQ_DEVICE inline void write_v_tile(const VLoads& t, std::uint32_t v_lds, std::uint32_t lane) {
  const std::uint32_t token = lane >> 2, c = lane & 3;
  UQ_GFX950_UNROLL
  for (int half = 0; half < 2; ++half) {
    const std::uint32_t group = 2u * c + static_cast<std::uint32_t>(half);
    const std::uint32_t scale_byte = (t.scales >> (8u * (group & 3u))) & 0xFFu;
    const float scale = bit_cast<float>(scale_byte << 23);  // E8M0 as a float's exponent
    const std::uint32_t row = v_lds + token * kVRowBytes + 2u * (64u * c + 32u * static_cast<std::uint32_t>(half));
    UQ_GFX950_UNROLL
    for (int w = 0; w < 4; ++w) {
      const std::uint32_t codes = scale_byte == 0u ? 0u : t.codes[half][w];
      const u32x4 bf16x8 = {cvt_scalef32_pk_bf16_fp4<0>(codes, scale), cvt_scalef32_pk_bf16_fp4<1>(codes, scale),
                            cvt_scalef32_pk_bf16_fp4<2>(codes, scale), cvt_scalef32_pk_bf16_fp4<3>(codes, scale)};
      lds_store(row + 16u * static_cast<std::uint32_t>(w), bf16x8);
    }
  }
}

UQ_DEVICE inline float max_f32(float a, float b) { return a > b ? a : b; }

// Scores -> probabilities for one tile (spec ultraquant.md §5.3); updates m and l and returns alpha, the
// factor the accumulator must be scaled by. p[i] is the unrounded probability of token
// 4g + i for query r (0 for a masked token). `valid`: the tile's tokens below seq_len in a
// valid block (TileSource::valid, wave-uniform), so that a lane's test is one 32-bit compare.
UQ_DEVICE inline float softmax_tile(f32x4 s, std::uint32_t valid, float scale, std::uint32_t lane, SoftmaxState& st,
                                    float (&p)[4]) {
  const std::uint32_t g = lane >> 4;
  const float neg_inf = -__builtin_inff();
  float x[4];
  UQ_GFX950_UNROLL
  for (int i = 0; i < 4; ++i) {
    x[i] = 4u * g + static_cast<std::uint32_t>(i) < valid ? s[i] * scale : neg_inf;  // fp32 score x scale
  }
  float tile_max = max_f32(max_f32(x[0], x[1]), max_f32(x[2], x[3]));
  tile_max = max_f32(tile_max, shfl_xor<16>(tile_max));
  tile_max = max_f32(tile_max, shfl_xor<32>(tile_max));
  const float m_new = max_f32(st.m, tile_max);
  const bool none = m_new == neg_inf;
  const float alpha = st.m == neg_inf ? 1.0f : fast_exp2((st.m - m_new) * kLog2e);
  float sum = 0.0f;
  UQ_GFX950_UNROLL
  for (int i = 0; i < 4; ++i) {
    p[i] = none ? 0.0f : fast_exp2((x[i] - m_new) * kLog2e);
    sum += p[i];
  }
  sum += shfl_xor<16>(sum);
  sum += shfl_xor<32>(sum);
  st.l = st.l * alpha + sum;
  st.m = m_new;
  return alpha;
}

// acc[c] += V^T[16c .. 16c+15][tokens] * bf16(P)[tokens][queries]: lane (g, r) of acc[c] holds
// query r, dims 16c + 4g + 0..3. The transposing read gives lane 16G + t' the 4 bf16 V[4G + j]
// [16c + t'] (j = 0..3) when it addresses row (16G + t') >> 2, dims 16c + 4(t' & 3).
UQ_DEVICE inline void accumulate_pv(f32x4 (&acc)[16], const float (&p)[4], std::uint32_t v_lds,
                                    std::uint32_t lane) {
  const i16x4 p_op = bit_cast<i16x4>(u32x2{cvt_pk_bf16_f32(p[0], p[1]), cvt_pk_bf16_f32(p[2], p[3])});
  const std::uint32_t at = v_lds + (lane >> 2) * kVRowBytes + 8u * (lane & 3);
  // Reads in groups of kPvReads before their MFMAs: read by read, the compiler gave them one
  // register pair, and each MFMA waited an LDS latency for its read (16 a tile).
  constexpr int kPvReads = 8;
  UQ_GFX950_UNROLL
  for (int c0 = 0; c0 < 16; c0 += kPvReads) {
    i16x4 v_t[kPvReads];
    UQ_GFX950_UNROLL
    for (int c = 0; c < kPvReads; ++c) v_t[c] = ds_read_b64_tr_b16(at + 32u * static_cast<std::uint32_t>(c0 + c));
    sched_barrier<0>();
    UQ_GFX950_UNROLL
    for (int c = 0; c < kPvReads; ++c) acc[c0 + c] = mfma_f32_16x16x16_bf16(v_t[c], p_op, acc[c0 + c]);
  }
}

// acc[n][c] += V^T[16c .. 16c+15][tokens] * bf16(P_n)[tokens][queries] for each N tile n: lane
// (g, r) of acc[n][c] holds query r of tile n, dims 16c + 4g + 0..3. The transposing read gives
// lane 16G + t' the 4 bf16 V[4G + j][16c + t'] (j = 0..3) when it addresses row (16G + t') >> 2,
// dims 16c + 4(t' & 3); the N tiles share it (one read, NTiles MFMAs).
template <int NTiles>
UQ_DEVICE inline void accumulate_pv_tiles(f32x4 (&acc)[NTiles][16], const float (&p)[NTiles][4], std::uint32_t v_lds,
                                    std::uint32_t lane) {
  i16x4 p_op[NTiles];
  UQ_GFX950_UNROLL
  for (int n = 0; n < NTiles; ++n) {
    p_op[n] = bit_cast<i16x4>(u32x2{cvt_pk_bf16_f32(p[n][0], p[n][1]), cvt_pk_bf16_f32(p[n][2], p[n][3])});
  }
  const std::uint32_t at = v_lds + (lane >> 2) * kVRowBytes + 8u * (lane & 3);
  // Reads in groups before their MFMAs, as accumulate_pv, of kPvReads / NTiles: the same MFMAs a
  // group (8), and 8 fewer VGPRs than groups of 8, which the two tiles' registers need to stay
  // within 256 (2 waves a SIMD).
  constexpr int kPvReads = 8 / NTiles;
  UQ_GFX950_UNROLL
  for (int c0 = 0; c0 < 16; c0 += kPvReads) {
    i16x4 v_t[kPvReads];
    UQ_GFX950_UNROLL
    for (int c = 0; c < kPvReads; ++c) v_t[c] = ds_read_b64_tr_b16(at + 32u * static_cast<std::uint32_t>(c0 + c));
    sched_barrier<0>();
    UQ_GFX950_UNROLL
    for (int c = 0; c < kPvReads; ++c) {
      UQ_GFX950_UNROLL
      for (int n = 0; n < NTiles; ++n) acc[n][c0 + c] = mfma_f32_16x16x16_bf16(v_t[c], p_op[n], acc[n][c0 + c]);
    }
  }
}

// The tile loop's state between tiles: where the next tiles come from.
struct TileStream {
  std::uint32_t ids;  // block-table entries of tiles 64c .. 64c + 63 (c: the chunk in use)
  buffer_rsrc table;
  std::int32_t p, h, tiles;
  std::int64_t seq_len;
};

// Tile k + 2's source. A partition of more than 64 tiles (TGPP > 4) loads the next 64 entries
// when tile k + 2 starts a chunk, and waits for them there: one memory latency per 64 tiles
// (~2 %). (A load issued further ahead and consumed many loads later made the compiler's wait
// analysis drain every tile's loads: s_waitcnt vmcnt(0) before each tile's v_readlane.)
UQ_DEVICE inline TileSource next_source(const DecodeKernelArgs& a, TileStream& ts, std::int32_t k,
                                        std::uint32_t lane) {
  const std::int32_t n = k + 2;
  std::int32_t block;
  // the entry is read in both arms: read after them, the register would count as possibly in
  // flight on every path, and every tile would wait for it
  if ((n & (kIdsPerLoad - 1)) == 0 && n < ts.tiles) {  // wave-uniform
    ts.ids = load_block_ids(a, ts.table, ts.p, n, ts.tiles, lane);
    block = block_id(ts.ids, n);
  } else {
    block = block_id(ts.ids, n);
  }
  return tile_source(a, block, ts.p, ts.h, n, ts.tiles, ts.seq_len, lane);
}

// One tile, and the loads of tile k + 2 into the registers this tile frees: scores (then its K
// registers take tile k + 2's K loads), online softmax, acc *= alpha unless alpha = 1 in the
// whole wave (x * 1 = x: skipping changes no bit), V into LDS (then its V registers take tile
// k + 2's V loads), acc += V^T bf16(P). So the loads of tiles k + 1 and k + 2 are in flight
// while tile k is computed, in the registers of two tiles.
// Queries (spec §5.9): the lane's column sees only the tokens below `row_tokens`
// (row_valid_tokens); a tile it sees none of gives it p = 0 and alpha = 1 exactly, so its
// state, and acc (+ 0 * V), keep their bits: the one-token decode of that length stops there.
template <bool Queries = false>
UQ_DEVICE inline void process_tile(const DecodeKernelArgs& a, TileStream& ts, std::int32_t k, TileSource& src,
                                   KLoads& kl, VLoads& vl, const i32x8 (&q_op)[2], std::uint32_t v_lds,
                                   std::uint32_t lane, SoftmaxState& st, f32x4 (&acc)[16],
                                   std::int32_t row_tokens = 0) {
  const f32x4 s = tile_scores(kl, q_op, lane);
  const TileSource next = next_source(a, ts, k, lane);
  kl = load_k(a, next, ts.h, lane);
  float prob[4];
  std::uint32_t valid = src.valid;
  if constexpr (Queries) valid = row_valid_tokens(a, ts.p, k, src.valid, row_tokens);
  const float alpha = softmax_tile(s, valid, a.scale, lane, st, prob);
  if (ballot(alpha != 1.0f) != 0u) {  // wave-uniform
    UQ_GFX950_UNROLL
    for (int c = 0; c < 16; ++c) acc[c] = acc[c] * alpha;
  }
  // The previous tile's transposing reads (cross-lane operations) ordered every lane's reads
  // of the V tile before these writes.
  write_v_tile(vl, v_lds, lane);
  vl = load_v(a, next, ts.h, lane);
  barrier();
  accumulate_pv(acc, prob, v_lds, lane);
  src = next;
}

// The multi-token kernel's tile with NTiles N tiles (spec §5.9): process_tile's steps, each N
// tile with its own scores, softmax state, Q operands and accumulators over the same K and V
// registers and V tile. (Reading tile 1's Q operands from LDS each tile instead of holding them
// took more VGPRs, not fewer: 269 against 258 at QG 6.) A function of its own rather
// than process_tile with loops over the N tiles: with those loops, even of one trip, the
// one-token kernel's code came out scheduled differently.
template <int NTiles>
UQ_DEVICE inline void process_tiles(const DecodeKernelArgs& a, TileStream& ts, std::int32_t k, TileSource& src,
                                    KLoads& kl, VLoads& vl, const i32x8 (&q_op)[NTiles][2], std::uint32_t v_lds,
                                    std::uint32_t lane,
                                    SoftmaxState (&st)[NTiles], f32x4 (&acc)[NTiles][16],
                                    const std::int32_t (&row_tokens)[NTiles]) {
  static_assert(NTiles >= 2, "one N tile: process_tile");
  f32x4 s[NTiles];
  UQ_GFX950_UNROLL
  for (int n = 0; n < NTiles; ++n) s[n] = tile_scores(kl, q_op[n], lane);
  const TileSource next = next_source(a, ts, k, lane);
  kl = load_k(a, next, ts.h, lane);
  float prob[NTiles][4];
  UQ_GFX950_UNROLL
  for (int n = 0; n < NTiles; ++n) {
    const std::uint32_t valid = row_valid_tokens(a, ts.p, k, src.valid, row_tokens[n]);
    const float alpha = softmax_tile(s[n], valid, a.scale, lane, st[n], prob[n]);
    if (ballot(alpha != 1.0f) != 0u) {  // wave-uniform
      UQ_GFX950_UNROLL
      for (int c = 0; c < 16; ++c) acc[n][c] = acc[n][c] * alpha;
    }
  }
  // The previous tile's transposing reads (cross-lane operations) ordered every lane's reads
  // of the V tile before these writes.
  write_v_tile(vl, v_lds, lane);
  vl = load_v(a, next, ts.h, lane);
  barrier();
  accumulate_pv_tiles(acc, prob, v_lds, lane);
  src = next;
}

// The results of this workgroup for its rows r < QG. Partial rows (P > 1, or the two stages
// run separately): l and m (NaN for a non-finite row) and, where l > 0, the partial row
// bf16(acc * fl32(1/l)). With kDirectOut (P = 1): the out rows, bf16(acc * fl32(1/l)) (what
// the reducer would return for one partition: 0 when l = 0, NaN for a non-finite row), and
// lse with kWantLse. One store loop for both: rows at `base` + r * head_bytes + d * dim_bytes
// within a range of `range` bytes (all 32-bit, ranges checked below 2^31 by the host).
// J: the multi-token kernel's query token (spec §5.9): rows J QG .. J QG + QG - 1 hold its rows,
// those in N tile `Tile` (columns 16 Tile .. 16 Tile + 15) written here as the rows of sequence
// `b` = its query-token row (row0: its first partial row), by the lanes whose column is `live`
// (a token past the sequence's n has none); the one-token kernel has J = 0, Tile = 0 only.
template <int QG, int J = 0, int Tile = 0>
UQ_DEVICE inline void write_results(const DecodeKernelArgs& a, std::uint32_t b, std::uint32_t h, std::int64_t row0,
                                    const f32x4 (&acc)[16], const SoftmaxState& st, bool nonfinite,
                                    std::uint32_t lane, bool live = true) {
  const std::uint32_t g = lane >> 4, column = (lane & 15) + static_cast<std::uint32_t>(kTileQueryRows * Tile);
  const std::uint32_t r = column - static_cast<std::uint32_t>(J * QG);  // the row within the token's QG
  const bool direct = (a.flags & kDirectOut) != 0u;  // wave-uniform
  const std::uint8_t* base;
  std::uint32_t head_bytes, dim_bytes, range;
  bool vector;
  if (direct) {
    base = reinterpret_cast<const std::uint8_t*>(a.out + static_cast<std::int64_t>(b) * a.out_stride_seq) +
           static_cast<std::int64_t>(h) * QG * a.out_head_bytes;
    head_bytes = a.out_head_bytes;
    dim_bytes = a.out_dim_bytes;
    range = a.out_group_bytes;
    vector = (a.flags & kOutVectorStores) != 0u;
  } else {
    base = reinterpret_cast<const std::uint8_t*>(a.partial_out + row0 * kHeadDim);
    head_bytes = 2u * kHeadDim;
    dim_bytes = 2u;
    range = QG * kHeadDim * 2;
    vector = true;
  }
  const buffer_rsrc rows = make_buffer_rsrc(base, range);
  const bool row_ok = live && column >= static_cast<std::uint32_t>(J * QG) && r < static_cast<std::uint32_t>(QG);
  if (row_ok && (direct || (st.l > 0.0f && !nonfinite))) {
    const float inv = 1.0f / (st.l > 0.0f ? st.l : 1.0f);
    const std::uint32_t row = r * head_bytes;
    UQ_GFX950_UNROLL
    for (int c = 0; c < 16; ++c) {
      const f32x4 o = acc[c] * inv;
      const u32x2 bits = nonfinite ? u32x2{kBf16NanPair, kBf16NanPair}
                                   : u32x2{cvt_pk_bf16_f32(o[0], o[1]), cvt_pk_bf16_f32(o[2], o[3])};
      const std::uint32_t d0 = 16u * static_cast<std::uint32_t>(c) + 4u * g;
      if (vector) {  // 4 consecutive dims, 8-byte aligned
        buffer_store_b64(bits, rows, row + 2u * d0);
      } else {
        UQ_GFX950_UNROLL
        for (int j = 0; j < 4; ++j) {
          const std::uint16_t v = static_cast<std::uint16_t>(bits[j >> 1] >> (16 * (j & 1)));
          buffer_store_b16(v, rows, row + (d0 + static_cast<std::uint32_t>(j)) * dim_bytes);
        }
      }
    }
  }
  if (!row_ok || g != 0) return;
  if (direct) {
    if (a.flags & kWantLse) {
      const buffer_rsrc lse = make_buffer_rsrc(
          reinterpret_cast<const std::uint8_t*>(a.lse + static_cast<std::int64_t>(b) * a.lse_stride_seq) +
              static_cast<std::int64_t>(h) * QG * a.lse_head_bytes,
          a.lse_group_bytes);
      buffer_store_b32(bit_cast<std::uint32_t>(lse_of(st.m, st.l, nonfinite)), lse, r * a.lse_head_bytes);
    }
    return;
  }
  const buffer_rsrc l_rsrc = make_buffer_rsrc(a.partial_l + row0, QG * 4);
  const buffer_rsrc m_rsrc = make_buffer_rsrc(a.partial_m + row0, QG * 4);
  const float nan = __builtin_nanf("");
  buffer_store_b32(bit_cast<std::uint32_t>(nonfinite ? nan : st.l), l_rsrc, 4u * r);
  buffer_store_b32(bit_cast<std::uint32_t>(nonfinite ? nan : st.m), m_rsrc, 4u * r);
}

// Partition 0 counts each non-finite query row of (b, h) once (spec §6).
UQ_DEVICE inline void count_nonfinite(const DecodeKernelArgs& a, std::uint32_t p, std::uint32_t nonfinite_rows,
                                      std::uint32_t lane) {
  if (p == 0 && nonfinite_rows != 0u && lane == 0) {
    atomic_add_u64(a.counters + kCounterNonfiniteInputs,
                   static_cast<unsigned long long>(__builtin_popcount(nonfinite_rows)));
  }
}

// Query token J's rows in N tile Tile, then tokens J + 1 .. of the tile (Queries). Token J's rows
// are num_kv_heads * P * QG partial rows after token J - 1's.
template <int QG, int NTiles, int Tile, int J>
UQ_DEVICE inline void write_token_rows(const DecodeKernelArgs& a, std::uint32_t token, std::uint32_t h,
                                       std::int64_t row0, const f32x4 (&acc)[16], const SoftmaxState& st,
                                       bool nonfinite, std::uint32_t lane, std::int32_t row_tokens) {
  constexpr int kLast = (kTileQueryRows * (Tile + 1) - 1) / QG < max_tile_query_tokens(QG, NTiles) - 1
                            ? (kTileQueryRows * (Tile + 1) - 1) / QG
                            : max_tile_query_tokens(QG, NTiles) - 1;
  const std::int64_t rows = J == 0 ? row0 : row0 + static_cast<std::int64_t>(J) * a.num_kv_heads * a.partitions * QG;
  // the first token's rows of tile 0 are always in use (n >= 1)
  write_results<QG, J, Tile>(a, token + static_cast<std::uint32_t>(J), h, rows, acc, st, nonfinite, lane,
                             (Tile == 0 && J == 0) || row_tokens >= 0);
  if constexpr (J < kLast) write_token_rows<QG, NTiles, Tile, J + 1>(a, token, h, row0, acc, st, nonfinite, lane, row_tokens);
}

template <int QG, int NTiles, int Tile>
UQ_DEVICE inline void write_tile_rows(const DecodeKernelArgs& a, std::uint32_t token, std::uint32_t h,
                                      std::int64_t row0, const f32x4 (&acc)[NTiles][16],
                                      const SoftmaxState (&st)[NTiles], const bool (&nonfinite)[NTiles],
                                      std::uint32_t lane, const std::int32_t (&row_tokens)[NTiles]) {
  write_token_rows<QG, NTiles, Tile, kTileQueryRows * Tile / QG>(a, token, h, row0, acc[Tile], st[Tile],
                                                                  nonfinite[Tile], lane, row_tokens[Tile]);
  if constexpr (Tile + 1 < NTiles) write_tile_rows<QG, NTiles, Tile + 1>(a, token, h, row0, acc, st, nonfinite, lane, row_tokens);
}

// The results of all the tiles' rows: the one-token kernel's QG rows of sequence `token`, or
// (Queries) those of each of the sequence's query tokens, token `token` + J in rows
// J QG .. J QG + QG - 1 of the N tiles, written where the lane's column is in use (column_tokens
// >= 0; not a wave-uniform count of tokens: the kernel's scalar registers are full). row0: the
// first partial row of `token`'s rows.
template <int QG, bool Queries, int NTiles>
UQ_DEVICE inline void write_tile_results(const DecodeKernelArgs& a, std::uint32_t token, std::uint32_t h,
                                         std::int64_t row0, const f32x4 (&acc)[NTiles][16],
                                         const SoftmaxState (&st)[NTiles], const bool (&nonfinite)[NTiles],
                                         std::uint32_t lane, const std::int32_t (&row_tokens)[NTiles]) {
  if constexpr (Queries) {
    write_tile_rows<QG, NTiles, 0>(a, token, h, row0, acc, st, nonfinite, lane, row_tokens);
  } else {
    write_results<QG>(a, token, h, row0, acc[0], st[0], nonfinite[0], lane);
  }
}

}  // namespace decode_detail

// The partition kernel of both launches. Queries = false: the one-token kernel (Args =
// DecodeKernelArgs). Queries = true (Args = DecodeQueriesKernelArgs, spec §5.9): the columns of
// NTiles N tiles hold the rows of the sequence's n query tokens (n QG <= 16 NTiles, checked by
// the host), each column masked to the tokens its query token sees; everything else, the tile
// loop, its loads and the partition map of the sequence, is the one-token kernel's.
template <int QG, bool Queries, int NTiles = 1, class Args>
UQ_DEVICE inline void decode_kernel(const Args& a) {
  static_assert(QG == 6 || QG == 8 || QG == 16, "QG is 6, 8 or 16");
  static_assert(NTiles >= 1 && NTiles <= kMaxQueryTiles && (Queries || NTiles == 1), "one-token: one N tile");
  using namespace decode_detail;
  constexpr int Rows = Queries ? tile_query_rows(QG, NTiles) : QG;  // query rows in LDS
  const std::uint32_t lane = lane_id();
  const std::uint32_t b = workgroup_id_x(), h = workgroup_id_y(), p = workgroup_id_z();
  const std::int32_t P = a.partitions;
  const bool counting = h == 0 && p == 0;  // per-sequence counts: by one workgroup of the sequence

  // The query tokens and the length (Queries: a malformed range is counted and skipped, and
  // a sequence without query tokens writes nothing, its length counted, as generic).
  SequenceQueries sq{static_cast<std::int32_t>(b), 1, 0};
  if constexpr (Queries) {
    sq = sequence_queries(a, b, counting, lane);
    if (sq.n <= 0) return;  // wave-uniform
  } else {
    sq.len = clamped_seq_len(a, b, counting, lane);
  }
  const std::int64_t seq_len = sq.len;
  // Tile-groups p, p + P, ... below the sequence's end, at most TGPP of them. In 32 bits (a
  // clamped int32 length; a 64-bit division by P is a long subroutine, on the prologue's path):
  // seq_len + 255 < 2^32, and (p + (trip - 1) P) * 256 < the length.
  const std::uint32_t len32 = static_cast<std::uint32_t>(seq_len);
  const std::uint32_t trip = uq::impl::partition_trip<std::uint32_t>(
      p, static_cast<std::uint32_t>(P), static_cast<std::uint32_t>(a.tgpp), uq::impl::decode_tile_groups(len32));

  // The first query token's rows (one-token: the sequence's).
  const std::uint32_t token = Queries ? static_cast<std::uint32_t>(sq.first) : b;
  const auto first_row = [&] { return ((static_cast<std::int64_t>(token) * a.num_kv_heads + h) * P + p) * QG; };
  // The multi-token kernel computes it where it writes (one scalar pair fewer live through the
  // loop: the kernel's scalar registers are full).
  const std::int64_t row0 = Queries ? 0 : first_row();
  // The tile's query rows and, per column, the tokens it sees (Queries only).
  QueryRows qrows{b, static_cast<std::uint32_t>(QG), a.q_group_bytes};
  std::int32_t row_tokens[NTiles] = {};
  if constexpr (Queries) {
    const std::uint32_t n = static_cast<std::uint32_t>(sq.n);
    qrows = QueryRows{token, n * QG, a.q_group_bytes + (n - 1u) * a.q_token_bytes};
    UQ_GFX950_UNROLL
    for (int t = 0; t < NTiles; ++t) row_tokens[t] = column_tokens<QG>(static_cast<std::int32_t>(len32), sq.n, lane, t);
  }
  // bit 16 t + c of the rows' non-finite mask: column c of N tile t
  const auto row_nonfinite = [&](std::uint32_t rows, int t) {
    return ((rows >> (static_cast<std::uint32_t>(kTileQueryRows * t) + (lane & 15))) & 1u) != 0u;
  };

  if (trip == 0) {  // wave-uniform: no token, so no cache or table load; partition 0 reads q (spec §6)
    const std::uint32_t nonfinite_rows = p == 0 ? nonfinite_query_rows<QG, Rows>(a, qrows, h, lane) : 0u;
    count_nonfinite(a, p, nonfinite_rows, lane);
    // l = 0 and m = -inf only (NaN for a non-finite row); with P = 1 (kDirectOut) the out rows,
    // exactly 0 (NaN), and lse -inf (NaN).
    f32x4 zeros[NTiles][16];
    SoftmaxState empty[NTiles];
    bool nonfinite[NTiles];
    UQ_GFX950_UNROLL
    for (int t = 0; t < NTiles; ++t) {
      UQ_GFX950_UNROLL
      for (int c = 0; c < 16; ++c) zeros[t][c] = f32x4{0.0f, 0.0f, 0.0f, 0.0f};
      empty[t] = SoftmaxState{-__builtin_inff(), 0.0f};
      nonfinite[t] = row_nonfinite(nonfinite_rows, t);
    }
    write_tile_results<QG, Queries, NTiles>(a, token, h, Queries ? first_row() : row0, zeros, empty, nonfinite, lane,
                                            row_tokens);
    return;
  }

  SoftmaxState st[NTiles];
  f32x4 acc[NTiles][16];
  UQ_GFX950_UNROLL
  for (int t = 0; t < NTiles; ++t) {
    st[t] = SoftmaxState{-__builtin_inff(), 0.0f};
    UQ_GFX950_UNROLL
    for (int c = 0; c < 16; ++c) acc[t][c] = f32x4{0.0f, 0.0f, 0.0f, 0.0f};
  }

  // Tiles of this partition: whole tile-groups, the last one up to the sequence's end.
  const std::uint32_t last_group_tokens = len32 - (p + (trip - 1) * static_cast<std::uint32_t>(P)) * kTileGroupTokens;
  const std::uint32_t last_tokens = last_group_tokens < kTileGroupTokens ? last_group_tokens : kTileGroupTokens;
  const std::int32_t tiles =
      static_cast<std::int32_t>((trip - 1) * kTilesPerGroup + (last_tokens + kTileTokens - 1) / kTileTokens);

  // Prologue (one memory round trip after seq_len's): the block-table entries of the first 64
  // tiles and the query rows together; with the entries, tiles 0 and 1's loads; the query's
  // rotation and E4M3 rounding while those are in flight.
  TileStream ts;
  ts.table = make_buffer_rsrc(a.block_tables + static_cast<std::int64_t>(b) * a.table_stride_seq, a.table_row_bytes);
  ts.p = static_cast<std::int32_t>(p);
  ts.h = static_cast<std::int32_t>(h);
  ts.tiles = tiles;
  ts.seq_len = seq_len;
  ts.ids = load_block_ids(a, ts.table, ts.p, 0, tiles, lane);
  float q[query_passes(Rows)][32];
  load_query<QG, Rows>(a, qrows, h, lane, q);
  TileSource src_even = tile_source(a, block_id(ts.ids, 0), ts.p, ts.h, 0, tiles, seq_len, lane);
  TileSource src_odd = tile_source(a, block_id(ts.ids, 1), ts.p, ts.h, 1, tiles, seq_len, lane);
  // in the loop's order (K, V of one tile, then the next's), so that its waits count alike
  KLoads k_even = load_k(a, src_even, ts.h, lane);
  VLoads v_even = load_v(a, src_even, ts.h, lane);
  KLoads k_odd = load_k(a, src_odd, ts.h, lane);
  VLoads v_odd = load_v(a, src_odd, ts.h, lane);
  sched_barrier<0>();  // keep the tile loads ahead of the rotation (the compiler sank them below it)

  const std::uint32_t q_lds = lds_allocate<q_lds_bytes(Rows), QueryLdsTag>();
  const std::uint32_t v_lds = lds_allocate<kVTileBytes, VTileLdsTag>();
  // wave-uniform: bit r = query row r holds a NaN or an infinity
  const std::uint32_t nonfinite_rows = write_query_lds<QG, Rows>(a, q, qrows.live, q_lds, lane);
  count_nonfinite(a, p, nonfinite_rows, lane);
  i32x8 q_op[NTiles][2];
  q_op[0][0] = query_operand<QG, Rows>(q_lds, lane, 0, qrows.live);
  q_op[0][1] = query_operand<QG, Rows>(q_lds, lane, 1, qrows.live);
  if constexpr (NTiles > 1) {  // written out: a loop over the tiles moved the one-token kernel's code
    static_assert(NTiles == 2, "one or two N tiles");
    q_op[1][0] = query_operand<QG, Rows>(q_lds, lane, 0, qrows.live, 1);
    q_op[1][1] = query_operand<QG, Rows>(q_lds, lane, 1, qrows.live, 1);
  }

  // The tile loop, unrolled twice so that the two tiles' registers alternate (no copies,
  // which would make the compiler wait for a load early); an odd last tile after it. (With a
  // break between the two tiles, the compiler routed it through the loop's header, and the
  // wait analysis, seeing a path into the first tile with only its V loads issued since its K
  // loads, waited for all but 3 loads there.)
  std::int32_t k = 0;
  if constexpr (NTiles == 1) {
    for (; k + 1 < tiles; k += 2) {
      process_tile<Queries>(a, ts, k, src_even, k_even, v_even, q_op[0], v_lds, lane, st[0], acc[0], row_tokens[0]);
      process_tile<Queries>(a, ts, k + 1, src_odd, k_odd, v_odd, q_op[0], v_lds, lane, st[0], acc[0], row_tokens[0]);
    }
    if (k < tiles) process_tile<Queries>(a, ts, k, src_even, k_even, v_even, q_op[0], v_lds, lane, st[0], acc[0], row_tokens[0]);
  } else {
    for (; k + 1 < tiles; k += 2) {
      process_tiles<NTiles>(a, ts, k, src_even, k_even, v_even, q_op, v_lds, lane, st, acc, row_tokens);
      process_tiles<NTiles>(a, ts, k + 1, src_odd, k_odd, v_odd, q_op, v_lds, lane, st, acc, row_tokens);
    }
    if (k < tiles) {
      process_tiles<NTiles>(a, ts, k, src_even, k_even, v_even, q_op, v_lds, lane, st, acc, row_tokens);
    }
  }

  if constexpr (!Queries) {  // written out: through the loop below, its code came out scheduled differently
    write_results<QG>(a, token, h, row0, acc[0], st[0], ((nonfinite_rows >> (lane & 15)) & 1u) != 0u, lane);
    return;
  }
  bool nonfinite[NTiles];
  UQ_GFX950_UNROLL
  for (int t = 0; t < NTiles; ++t) nonfinite[t] = row_nonfinite(nonfinite_rows, t) && holds_row(p, row_tokens[t]);
  write_tile_results<QG, Queries, NTiles>(a, token, h, Queries ? first_row() : row0, acc, st, nonfinite, lane,
                                          row_tokens);
}

// The one-token partition kernel (spec §5.1-§5.8).
template <int QG>
UQ_DEVICE inline void decode_partition_kernel(const DecodeKernelArgs& a) {
  decode_kernel<QG, false>(a);
}

// The multi-token partition kernel (spec §5.9) with NTiles N tiles (query_tiles of the launch):
// at n_b = 1 it computes exactly what the one-token kernel does, bit for bit.
template <int QG, int NTiles = 1>
UQ_DEVICE inline void decode_queries_kernel(const DecodeQueriesKernelArgs& a) {
  decode_kernel<QG, true, NTiles>(a);
}

}  // namespace uq::gfx950
