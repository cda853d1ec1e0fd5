// NVFP4 index float64 reference (spec nvfp4-index.md): key writer, dequantisation,
// block scorer and top-k block selection.
//
// Page layout (§2): page = 9216 bytes; code byte of token t, dim d at t*64 + d/2 (even dim
// in the low nibble); scale byte of token t, group g (dims 16g..16g+15) at 8192 + t*8 + g.
//
// Decisions on cases the spec leaves open (implementations follow these):
//  * Writer: a non-finite key value makes its group scale byte 0 and codes 0; the token
//    row counts once in nonfinite_rows however many groups are bad. Skipped (negative)
//    and out-of-range slots (>= num_blocks*128, counted once per token in bad_slots) are
//    not examined, so they never count as non-finite. A = max|x| and A/6 and x/s are
//    fp32 operations (the spec's rounding points); everything else is exact.
//  * LUT / dequant, out-of-contract scale bytes: a NaN scale byte (0x7F, 0xFF) gives NaN
//    keys (nv_dequant) and LUT bytes 0x7F (all eight). Scale bytes with the sign bit are
//    never written; the reference applies the literal formula e4m3(E2M1 * scale) to them,
//    and tests must not depend on it.
//  * Scorer, lengths: L = max(seq_len, 0), then clamped to max_blocks*128 (as
//    ultraquant.md §6 does for decode), before nb_req, vis and nb are computed.
//  * Scorer, bad page ids: a visible block whose block-table entry is outside
//    [0, num_blocks) has no tokens, so raw = -inf; the sentinels still apply (visibility
//    depends on lengths only): such a block scores 1e30 / 1e29 when init / local, else -inf.
//  * Scorer, NaN (only from out-of-contract NaN q or scale bytes): the block max ignores
//    NaN dots (fmax from -inf), so a block whose attended dots are all NaN gives raw = -inf.
//  * Scorer, dot precision: each product of two E4M3 values is exact in double; the dot
//    is accumulated in double and rounded once to float; raw is the max of those floats.
//  * Selection: nb = ceil(vis/128) is computed from L = max(seq_len, 0) (no max_blocks is
//    known here) and bounded by S, so nothing outside the score rows is ever read. Every
//    visible block is a candidate, including one whose score is -inf (a bad page id).
#pragma once

#include <cstdint>

#include "uqref_ultraquant.hpp"  // WriteCounts

namespace uqref {

// Writer (§3). keys: contiguous [T][128] float (bf16 inputs passed as their exact float
// value); slots: [T] int64 (block*128 + pos; negative = skip); cache: contiguous
// [num_blocks][9216], updated in place (only the written tokens' 64 code bytes and 8
// scale bytes). Per group of 16: scale byte = e4m3(fl32(A / 6)); s = its value; s == 0 ->
// codes 0; else code = E2M1 nearest to fl32(x / s), ties to the even code, saturating at
// +-6, zero magnitude -> code 0 (never 8).
WriteCounts nv_write_index_keys(const float* keys, const std::int64_t* slots, std::int64_t T,
                                std::uint8_t* cache, std::int64_t num_blocks);

// The E2M1 code the writer picks for a value y = fl32(x / s), exposed for tests.
unsigned nv_fp4_code(float y);

// k̂[t][d] of one page: e4m3(E2M1(code) * scale value), one rounding (RNE, saturating).
double nv_dequant(const std::uint8_t* page, int t, int d);

// LUT entry of a scale byte: byte i (0 = least significant) = e4m3(E2M1_MAG[i] * scale),
// E2M1_MAG = 0, 0.5, 1, 1.5, 2, 3, 4, 6.
std::uint64_t nv_lut_entry(std::uint8_t scale_byte);

// Scorer (§4). q: E4M3 bytes, element (row, h, d) at q[row*q_stride_row + h*q_stride_head + d]
// with row = req*query_len + r. scores: [heads][num_reqs*query_len][S] row-major float;
// for each (h, r) only the entries b < nb_req are written (others untouched).
struct ScoreInputs {
  const std::uint8_t* q;
  std::int64_t q_stride_row, q_stride_head;
  const std::uint8_t* cache;
  std::int64_t num_blocks;
  const std::int32_t* block_tables;  // row-major [num_reqs][max_blocks]
  int max_blocks;
  const std::int32_t* seq_lens;  // [num_reqs]
  int num_reqs;
  int query_len;
  int heads;
  int init_blocks;
  int local_blocks;
};
void nv_score(const ScoreInputs& in, float* scores, std::int64_t S);

// Selection (§5). scores: [heads][num_reqs*query_len][S]; out: [heads][num_reqs*query_len][k]
// int32. Per (h, row): the k highest-scoring visible blocks (b < nb), in descending score
// order, equal scores -> smaller block index first, NaN counts as -inf; the rest is -1.
void nv_select(const float* scores, std::int64_t S, const std::int32_t* seq_lens, int num_reqs,
               int query_len, int heads, int k, std::int32_t* out);

}  // namespace uqref
