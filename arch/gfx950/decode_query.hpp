// The decode kernel's query prologue: q8 = e4m3(WHT(fp32(q))) (or e4m3(fp32(q)) for a
// pre-rotated q) of the QG rows of one KV head, written to LDS as QG rows of 256 E4M3 bytes
// in natural dim order, and the scaled MFMA's Q operands read back from there. The multi-token
// kernel (spec §5.9) has the rows of up to 16 / QG query tokens a 16-column N tile instead (one
// or two tiles): row r = j QG + g is query token j's row g (Rows = tile_query_rows(QG, tiles) of
// them, `live` = n_b QG in use). The loads
// (load_query) are issued apart from the rest (write_query_lds), so that the kernel can issue
// its first tiles' loads in between.
//
// LDS layout: row r at r * 256; its 16-byte chunk j (dims 16j .. 16j+15) at chunk position
// j ^ r. The MFMA operand read has the 16 lanes of a phase read the same chunk of 16 rows 256
// bytes apart, all in the same 4 banks without the XOR (6 / 8 / 16 cycles a phase at QG 6 / 8 /
// 16, measured by the emulator's bank profile); with it, 16 different chunk positions.
//
// Lane map of the rotation (docs/spec/ultraquant-sources.md §4.4): in pass i = 0 .. ceil(QG/8)-1
// lane L holds query row (L >> 3) + 8i and the 32 consecutive dims 32c .. 32c+31, c = L & 7.
// WHT stages 0..4 (pair strides 1..16) pair values inside the lane; stages 5..7 (strides
// 32, 64, 128) pair chunk c with chunk c ^ 1, ^ 2, ^ 4 of the same row, i.e. lane L ^ 1, ^ 2,
// ^ 4, exchanged with ds_swizzle. Rows past QG (QG = 6: rows 6 and 7) read zeros and are
// not stored, but their lanes take part in the swizzles (likewise rows past `live`).
#pragma once

#include "gfx950/decode_args.hpp"
#include "gfx950/isa.hpp"

namespace uq::gfx950 {
namespace decode_detail {

// Where a workgroup's query rows are (wave-uniform): tile row r < live is query head
// h * QG + r % QG of query token `token` + r / QG, all within `range` bytes from the first row's
// first element. The one-token kernel: token = the sequence, live = QG, range = q_group_bytes.
struct QueryRows {
  std::uint32_t token;
  std::uint32_t live;
  std::uint32_t range;
};

template <int QG, int Rows>
UQ_DEVICE inline buffer_rsrc query_rsrc(const DecodeKernelArgs& a, const QueryRows& rows, std::uint32_t h) {
  const std::int64_t first = static_cast<std::int64_t>(rows.token) * a.q_stride_seq +
                             static_cast<std::int64_t>(h) * QG * a.q_stride_head;
  if constexpr (Rows == QG) return make_buffer_rsrc(a.q + first, a.q_group_bytes);
  return make_buffer_rsrc(a.q + first, rows.range);
}

// Whether tile row `row` is one of the rows in use (the one-token kernel: its QG rows).
template <int QG, int Rows>
UQ_DEVICE inline bool row_live(std::uint32_t row, std::uint32_t live) {
  if constexpr (Rows == QG) return row < static_cast<std::uint32_t>(QG);
  return row < live;
}

// Whether each prologue pass's 8 rows (8 pass .. 8 pass + 7) hold the rows of at most two query
// tokens (query_row_element's select).
constexpr bool pass_rows_in_two_tokens(int qg, int rows) {
  for (int first = 0; first < rows; first += 8) {
    if (first % qg + 7 >= 2 * qg) return false;
  }
  return true;
}

// Tile row `row`'s first element, counted from the resource's (Rows = QG: one token's rows).
// `pass`: the prologue pass loading it (a constant once its loop is unrolled; used with two N
// tiles only).
template <int QG, int Rows>
UQ_DEVICE inline std::int64_t query_row_element(const DecodeKernelArgs& a, std::uint32_t row, int pass = 0) {
  if constexpr (Rows == QG) {
    return static_cast<std::int64_t>(row) * a.q_stride_head;
  } else if constexpr (Rows > kTileQueryRows) {
    // Two N tiles: the pass's rows are of query token j0 = 8 pass / QG or j0 + 1 (a select, as
    // below, not a per-lane division).
    static_assert(pass_rows_in_two_tokens(QG, Rows), "a pass's rows span at most 2 query tokens");
    const std::uint32_t j0 = 8u * static_cast<std::uint32_t>(pass) / static_cast<std::uint32_t>(QG);
    const std::uint32_t next = (j0 + 1u) * static_cast<std::uint32_t>(QG);  // token j0 + 1's first row
    const bool second = row >= next;
    const std::uint32_t g = second ? row - next : row - j0 * static_cast<std::uint32_t>(QG);
    const std::int64_t head = static_cast<std::int64_t>(g) * a.q_stride_head;
    const std::int64_t token = static_cast<std::int64_t>(j0) * a.q_stride_seq;
    return second ? token + a.q_stride_seq + head : token + head;
  } else {
    // Token 0 or 1 (a select, not a division by QG: at QG 6 the division's registers made the
    // compiler spill scalars).
    static_assert(max_tile_query_tokens(QG) <= 2, "a tile holds the rows of at most 2 query tokens");
    const bool second = row >= static_cast<std::uint32_t>(QG);
    const std::int64_t head = static_cast<std::int64_t>(second ? row - QG : row) * a.q_stride_head;
    return second ? a.q_stride_seq + head : head;
  }
}

// How load_query_chunk loads: by kQVectorLoads (each call tests the flag), or always one form
// (a caller that tests the flag once around several calls).
enum class QueryLoads { by_flag, vector, elements };

// The 32 dims of one lane's query chunk of tile row `row`, as floats: dim-contiguous rows
// (kQVectorLoads) in four 16-byte loads of 8 bf16 each, any other layout in one 2-byte load per
// element. Rows that are not loaded (row_ok false) read zeros through an out-of-range offset.
template <int QG, int Rows, QueryLoads Form = QueryLoads::by_flag>
UQ_DEVICE inline void load_query_chunk(const DecodeKernelArgs& a, const buffer_rsrc& q_rsrc,
                                       std::uint32_t row, std::uint32_t chunk, bool row_ok,
                                       float (&x)[32], int pass = 0) {
  const std::int64_t first = query_row_element<QG, Rows>(a, row, pass) +
                             static_cast<std::int64_t>(32 * chunk) * a.q_stride_dim;
  if ((Form == QueryLoads::by_flag && (a.flags & kQVectorLoads)) || Form == QueryLoads::vector) {
    // Dim-contiguous rows: four 16-byte loads of 8 bf16 each.
    const std::uint32_t base = row_ok ? static_cast<std::uint32_t>(2 * first) : kMaskedOffset;
    UQ_GFX950_UNROLL
    for (int j = 0; j < 4; ++j) {
      const u32x4 w = buffer_load_b128(q_rsrc, base + 16u * static_cast<std::uint32_t>(j));
      UQ_GFX950_UNROLL
      for (int e = 0; e < 4; ++e) {
        x[8 * j + 2 * e] = bit_cast<float>(w[e] << 16);
        x[8 * j + 2 * e + 1] = bit_cast<float>(w[e] & 0xFFFF0000u);
      }
    }
  } else {
    // Any other layout: one 2-byte load per element.
    UQ_GFX950_UNROLL
    for (int e = 0; e < 32; ++e) {
      const std::int64_t element = first + static_cast<std::int64_t>(e) * a.q_stride_dim;
      const std::uint32_t offset = row_ok ? static_cast<std::uint32_t>(2 * element) : kMaskedOffset;
      x[e] = bit_cast<float>(static_cast<std::uint32_t>(buffer_load_b16(q_rsrc, offset)) << 16);
    }
  }
}

// One WHT stage with pair stride 32 * Mask (Mask = 1, 2, 4): the partner chunk is lane ^ Mask.
// The lane holding the pair's upper element (chunk bit set) keeps lower - upper, the other
// lower + upper, exactly the spec's butterfly (x[i], x[i+s]) <- (x[i] + x[i+s], x[i] - x[i+s]).
template <int Mask>
UQ_DEVICE inline void wht_cross_lane_stage(float (&x)[32], std::uint32_t chunk) {
  const bool upper = (chunk & Mask) != 0;
  // All 32 exchanges first, then the butterflies: one LDS-pipe latency a stage rather than one
  // every few values (the compiler, left to interleave, waited after every 2 to 4 swizzles).
  float partner[32];
  UQ_GFX950_UNROLL
  for (int i = 0; i < 32; ++i) partner[i] = shfl_xor<Mask>(x[i]);
  sched_barrier<0>();
  UQ_GFX950_UNROLL
  for (int i = 0; i < 32; ++i) x[i] = upper ? partner[i] - x[i] : x[i] + partner[i];
}

// The spec's WHT (ultraquant.md §3) of the 256 dims spread over the 8 lanes of a row: every
// butterfly sees the same two fp32 inputs as in the serial order, so the result is
// bit-identical to it.
UQ_DEVICE inline void wht256_across_lanes(float (&x)[32], std::uint32_t chunk) {
  UQ_GFX950_UNROLL
  for (int s = 0; s < 5; ++s) {
    const int stride = 1 << s;
    UQ_GFX950_UNROLL
    for (int i = 0; i < 32; ++i) {
      if ((i & stride) == 0) {
        const float lo = x[i], hi = x[i + stride];
        x[i] = lo + hi;
        x[i + stride] = lo - hi;
      }
    }
  }
  wht_cross_lane_stage<1>(x, chunk);
  wht_cross_lane_stage<2>(x, chunk);
  wht_cross_lane_stage<4>(x, chunk);
  UQ_GFX950_UNROLL
  for (int i = 0; i < 32; ++i) x[i] *= 0.0625f;  // 1/16: exact
}

// Four floats -> four E4M3 bytes (RNE). Clamped to +-448 first: the converter gives NaN, not
// saturation, above 448 (spec §1); NaN stays NaN (both comparisons are false for it).
UQ_DEVICE inline std::uint32_t e4m3x4(float a, float b, float c, float d) {
  const auto clamp = [](float v) { return v > 448.0f ? 448.0f : (v < -448.0f ? -448.0f : v); };
  const std::uint32_t lo = cvt_pk_fp8_f32<false>(clamp(a), clamp(b), 0u);
  return cvt_pk_fp8_f32<true>(clamp(c), clamp(d), lo);
}

constexpr int query_passes(int qg) { return (qg + 7) / 8; }

// Issues the loads of the tile's query rows: pass i, lane L holds row (L >> 3) + 8i, dims
// 32 (L & 7) .. + 31 (rows past rows.live read zeros).
template <int QG, int Rows = QG>
UQ_DEVICE inline void load_query(const DecodeKernelArgs& a, const QueryRows& rows, std::uint32_t h,
                                 std::uint32_t lane, float (&x)[query_passes(Rows)][32]) {
  const buffer_rsrc q_rsrc = query_rsrc<QG, Rows>(a, rows, h);
  if constexpr (Rows == QG) {
    UQ_GFX950_UNROLL
    for (int pass = 0; pass < query_passes(Rows); ++pass) {
      const std::uint32_t row = (lane >> 3) + 8u * static_cast<std::uint32_t>(pass);
      load_query_chunk<QG, Rows>(a, q_rsrc, row, lane & 7, row_live<QG, Rows>(row, rows.live), x[pass]);
    }
  } else {
    // The multi-token kernel: one branch around both passes, so that both passes' loads are
    // issued before either is waited for (with a branch per pass, as above, the compiler waits
    // for each pass's loads in turn: one memory round trip a pass).
    if (a.flags & kQVectorLoads) {  // wave-uniform
      UQ_GFX950_UNROLL
      for (int pass = 0; pass < query_passes(Rows); ++pass) {
        const std::uint32_t row = (lane >> 3) + 8u * static_cast<std::uint32_t>(pass);
        load_query_chunk<QG, Rows, QueryLoads::vector>(a, q_rsrc, row, lane & 7, row_live<QG, Rows>(row, rows.live),
                                                       x[pass], pass);
      }
    } else {
      UQ_GFX950_UNROLL
      for (int pass = 0; pass < query_passes(Rows); ++pass) {
        const std::uint32_t row = (lane >> 3) + 8u * static_cast<std::uint32_t>(pass);
        load_query_chunk<QG, Rows, QueryLoads::elements>(a, q_rsrc, row, lane & 7,
                                                         row_live<QG, Rows>(row, rows.live), x[pass], pass);
      }
    }
  }
}

// Bit k + 8 pass (wave-uniform) of the rows of one pass whose bf16 q holds a NaN or an infinity
// (spec §6: the exponent field all ones, the same bits in the fp32 of a bf16): row k of the
// pass is lanes 8k .. 8k+7.
UQ_DEVICE inline std::uint32_t nonfinite_rows_of_pass(const float (&x)[32], int pass) {
  bool bad = false;
  UQ_GFX950_UNROLL
  for (int e = 0; e < 32; ++e) bad = bad || (bit_cast<std::uint32_t>(x[e]) & 0x7F800000u) == 0x7F800000u;
  const std::uint64_t lanes = ballot(bad);
  std::uint32_t rows = 0;
  UQ_GFX950_UNROLL
  for (int k = 0; k < 8; ++k) rows |= ((lanes >> (8 * k)) & 0xFFu) != 0u ? 1u << k : 0u;
  return rows << (8 * pass);
}

// Bit r set: tile row r is non-finite. What a partition without tokens reads of q (partition 0
// only): the loads of the prologue, without rotation or LDS.
template <int QG, int Rows = QG>
UQ_DEVICE inline std::uint32_t nonfinite_query_rows(const DecodeKernelArgs& a, const QueryRows& rows,
                                                    std::uint32_t h, std::uint32_t lane) {
  float x[query_passes(Rows)][32];
  load_query<QG, Rows>(a, rows, h, lane, x);
  std::uint32_t bad = 0;
  UQ_GFX950_UNROLL
  for (int pass = 0; pass < query_passes(Rows); ++pass) bad |= nonfinite_rows_of_pass(x[pass], pass);
  return bad;
}

// The byte of LDS where row `row`'s 16-byte chunk `chunk` lives (layout above).
UQ_DEVICE inline std::uint32_t query_chunk_at(std::uint32_t q_lds, std::uint32_t row, std::uint32_t chunk) {
  return q_lds + row * kHeadDim + 16u * (chunk ^ (row & 15u));
}

// Writes q8 of the loaded rows (load_query) to q_lds and waits for the whole wave's stores.
// Returns the non-finite rows (nonfinite_query_rows); their q8 is stored as 0, so that every
// score stays finite (the epilogue replaces their results).
template <int QG, int Rows = QG>
UQ_DEVICE inline std::uint32_t write_query_lds(const DecodeKernelArgs& a, float (&xs)[query_passes(Rows)][32],
                                               std::uint32_t live, std::uint32_t q_lds, std::uint32_t lane) {
  const std::uint32_t chunk = lane & 7;
  const bool rotate = (a.flags & kQRotated) == 0;
  std::uint32_t nonfinite = 0;
  UQ_GFX950_UNROLL
  for (int pass = 0; pass < query_passes(Rows); ++pass) {
    float (&x)[32] = xs[pass];
    const std::uint32_t row = (lane >> 3) + 8u * static_cast<std::uint32_t>(pass);
    const bool row_ok = row_live<QG, Rows>(row, live);
    nonfinite |= nonfinite_rows_of_pass(x, pass);
    if (rotate) wht256_across_lanes(x, chunk);  // wave-uniform branch
    std::uint32_t bytes[8];
    UQ_GFX950_UNROLL
    for (int w = 0; w < 8; ++w) bytes[w] = e4m3x4(x[4 * w], x[4 * w + 1], x[4 * w + 2], x[4 * w + 3]);
    // A non-finite row computes with q8 = 0 (finite scores; its results are replaced at the end).
    const bool row_nonfinite = ((nonfinite >> row) & 1u) != 0u;
    UQ_GFX950_UNROLL
    for (int w = 0; w < 8; ++w) bytes[w] = row_nonfinite ? 0u : bytes[w];
    if (row_ok) {
      lds_store(query_chunk_at(q_lds, row, 2u * chunk), u32x4{bytes[0], bytes[1], bytes[2], bytes[3]});
      lds_store(query_chunk_at(q_lds, row, 2u * chunk + 1u), u32x4{bytes[4], bytes[5], bytes[6], bytes[7]});
    }
  }
  barrier();
  return nonfinite;
}

// The scaled MFMA's B operand for issue i (dims 128i .. 128i+127): lane (g, r) holds query
// row r, bytes 0..15 = dims 128i + 16g + 0..15 and bytes 16..31 = dims 128i + 64 + 16g +
// 0..15 (docs/gfx950-isa.md §1.3, fp8). Reading those two 16-byte pieces of the natural-order
// row is the head-dim permutation qperm of docs/spec/ultraquant-sources.md §4.2 (which the
// original folded into the rotation instead). Rows r >= live (QG for one token) are zero.
// N tile `tile` (multi-token kernel): rows 16 tile + r.
template <int QG, int Rows = QG>
UQ_DEVICE inline i32x8 query_operand(std::uint32_t q_lds, std::uint32_t lane, int issue,
                                     std::uint32_t live = static_cast<std::uint32_t>(QG), int tile = 0) {
  const std::uint32_t g = lane >> 4, r = static_cast<std::uint32_t>(kTileQueryRows * tile) + (lane & 15);
  const bool row_ok = row_live<QG, Rows>(r, live);
  const std::uint32_t row = row_ok ? r : 0u;
  const std::uint32_t first = 8u * static_cast<std::uint32_t>(issue) + g;  // chunk of dims 128i + 16g
  const u32x4 lo = lds_load<u32x4>(query_chunk_at(q_lds, row, first));
  const u32x4 hi = lds_load<u32x4>(query_chunk_at(q_lds, row, first + 4u));  // dims + 64
  i32x8 op = {0, 0, 0, 0, 0, 0, 0, 0};
  if (row_ok) {
    op = i32x8{static_cast<std::int32_t>(lo[0]), static_cast<std::int32_t>(lo[1]),
               static_cast<std::int32_t>(lo[2]), static_cast<std::int32_t>(lo[3]),
               static_cast<std::int32_t>(hi[0]), static_cast<std::int32_t>(hi[1]),
               static_cast<std::int32_t>(hi[2]), static_cast<std::int32_t>(hi[3])};
  }
  return op;
}

}  // namespace decode_detail
}  // namespace uq::gfx950
