// UltraQuant D=256 float64 reference (spec ultraquant.md §2–§6): rotation, cache writer,
// dequantisation, query rounding and the decode's "reference meaning".
//
// Arithmetic: the spec mandates fp32 for the rotation (WHT butterflies in the spec's
// order, then * 1/16) and for s = fl32(A * 0.156f); the reference does exactly that in
// float. Everything else (group exponent, y = r / 2^e, code choice, dequantisation,
// dot products, softmax, outputs) is exact or double.
//
// Decisions on cases the spec leaves open (implementations follow these):
//  * Writer, tiny groups: if s = fl32(A * 0.156f) underflows to 0 the exponent is -inf,
//    i.e. e < -126: the group is flushed (scale byte 0, codes 0), like any e < -126.
//  * Writer, non-finite input is judged per group on the values being quantised (after
//    the rotation for K: one inf in k makes every K group non-finite, and a finite bf16
//    row whose rotation overflows fp32 is non-finite too).
//  * Writer, counting: a token whose slot is negative (skip) or >= num_blocks*block_size
//    (bad, counted once per token in bad_slots whatever the number of heads) is not
//    examined at all, so its rows never count in nonfinite_rows. nonfinite_rows counts
//    each written (token, head, K-or-V) row that has at least one non-finite group.
//  * Decode: a negative softmax scale is allowed (the reference is plain math);
//    score_abs uses |scale|. A query row whose bf16 holds a NaN or an infinity gives an
//    all-NaN output row and a NaN lse (spec §6, whether or not it attends any token); other
//    NaN inputs (scale byte 255) simply propagate.
#pragma once

#include <cstdint>
#include <vector>

namespace uqref {

// ---- rotation (§3): fp32 butterflies, stage s = 0..7, pairs (i, i + 2^s) with bit s of
// i clear -> (x[i] + x[i+2^s], x[i] - x[i+2^s]); then every element * (1/16).
void wht256_fp32(const float* in, float* out);  // 256 elements; in == out allowed

// ---- writer pieces (§4), exposed for tests
// Step 5: the integer e with 2^(e-1/2) <= s < 2^(e+1/2), exactly. s must be finite and > 0.
int uq_group_exponent(float s);
// Step 8: the FP4 code of a normalised value y (midpoint counting; ties to the lower
// level; |y| > 5 saturates to +-6; zero and -0.0 give code 0, never 8).
unsigned uq_fp4_code(double y);

// One row of 256 values given as bf16 bits; rotate = true for K. Writes 128 code bytes
// (byte j: code of element 2j in bits 3..0, element 2j+1 in bits 7..4) and 8 UE8M0
// scale bytes. Returns true if any group had a non-finite value (written as zero).
bool uq_quantize_row(const std::uint16_t* row256, bool rotate, std::uint8_t* codes128,
                     std::uint8_t* scales8);

struct WriteCounts {
  std::uint64_t bad_slots = 0;
  std::uint64_t nonfinite_rows = 0;
};

// k, v: contiguous [T][Hk][256] bf16 bits; slots: [T] int64 (block * block_size + pos;
// negative = skip). cache: contiguous [num_blocks][block_size][Hk][slot_bytes], updated
// in place: bytes 0..271 of each written slot (K codes, K scales, V codes, V scales);
// skipped slots and padding bytes 272..slot_bytes-1 are untouched.
WriteCounts uq_write_kv(const std::uint16_t* k, const std::uint16_t* v, const std::int64_t* slots,
                        std::int64_t T, int Hk, std::uint8_t* cache, std::int64_t num_blocks,
                        int block_size, int slot_bytes);

// Dequantised K (rotated basis) / V of one slot: FP4(code) * 2^(b - 127), 0 when b = 0.
void uq_dequant_k(const std::uint8_t* slot, double* out256);
void uq_dequant_v(const std::uint8_t* slot, double* out256);

// q8 of one query row: e4m3(WHT(fp32(q))), or e4m3(fp32(q)) when q_rotated; as doubles.
void uq_query_q8(const std::uint16_t* q256, bool q_rotated, double* out256);

// ---- decode (§5 reference meaning, §6 bad data, §5.9 several query tokens), all in double:
// for each query row (query token i, query head hq; KV head hq / qg) of sequence b, with L =
// seq_len clamped to [0, max_blocks_per_seq * block_size] and the row's visible length
// vis = max(L - n_b + j + 1, 0) (j: the token's index within its sequence, n_b its sequence's
// query tokens; vis = L with one query token per sequence): s_t = scale * sum_d q8[d] k̂_t[d]
// over the attended tokens t < vis (a token whose block-table entry is outside
// [0, num_blocks) is absent), out = sum_t softmax(s)_t v̂_t, lse = log sum_t exp(s_t); no
// attended token -> out = 0, lse = -inf; a non-finite query row -> out = NaN, lse = NaN.
// A sequence whose query_start_loc range is malformed (§5.9's per-sequence rule) is skipped
// and counted; rows not covered by exactly one well-formed range are flagged undefined.
struct DecodeInputs {
  // element (i, hq, d) at q[i*q_stride_seq + hq*q_stride_head + d], i the query token (the
  // sequence with one query token per sequence)
  const std::uint16_t* q;
  std::int64_t q_stride_seq, q_stride_head;
  const std::uint8_t* cache;  // dense [num_blocks][block_size][num_kv_heads][slot_bytes]
  std::int64_t num_blocks;
  int block_size;
  int num_kv_heads;
  int slot_bytes;
  const std::int32_t* block_tables;  // row-major [num_seqs][max_blocks_per_seq]
  int max_blocks_per_seq;
  const std::int32_t* seq_lens;  // [num_seqs]
  int num_seqs;
  int qg;  // query heads per KV head; num_q_heads = num_kv_heads * qg
  double scale;
  bool q_rotated;
  // Several query tokens per sequence (§5.9): query_start_loc [num_seqs + 1] and T = the number
  // of query tokens (q, out and lse rows); nullptr: one query token per sequence (T = num_seqs).
  // max_query_len: the largest n_b a well-formed range may have (0: no limit).
  const std::int32_t* query_start_loc = nullptr;
  int num_query_tokens = 0;
  int max_query_len = 0;
};

// Rows are query tokens: R = num_seqs with one query token per sequence, else T.
struct DecodeResult {
  std::vector<double> out;  // [R][Hq][256]
  // For tolerance derivation, per (query token, hq) row:
  std::vector<double> vmax;          // [R][Hq][256]: max |v̂_t[d]| over attended tokens (0 if none)
  std::vector<double> score_abs;     // [R][Hq]: max over attended t of |scale| * sum_d |q8[d] k̂_t[d]|
  std::vector<std::int64_t> attended;  // [R][Hq]: number of attended tokens
  // [R][Hq]: log sum_t exp(s_t) over the attended tokens (natural log); -inf when none, NaN
  // for a non-finite query row.
  std::vector<double> lse;
  std::vector<int> nonfinite_q;  // [R][Hq]: 1 where the query row holds a NaN or an infinity
  // [R]: 1 where exactly one well-formed query_start_loc range covers the query token (the
  // others hold unspecified values in uq: §5.9); all 1 without query_start_loc.
  std::vector<int> defined;
  std::uint64_t bad_start_locs = 0;  // malformed query_start_loc ranges (§5.9), skipped
};

DecodeResult uq_decode(const DecodeInputs& in);

// Whether sequence b's range [locs[b], locs[b+1]) of a *_start_loc array of num_seqs + 1
// entries over T rows is malformed by §5.9's per-sequence rule (max_len 0: no length limit).
bool malformed_start_loc(const std::int32_t* locs, int num_seqs, int b, std::int64_t T, int max_len);

// ---- dequantising gather (§7): sequence b's positions t < n_b = kv_start_loc[b+1] -
// kv_start_loc[b] go to row kv_start_loc[b] + t of k and v (bf16 bits, dense [T][Hk][256]):
// bf16 of the dequantised K (rotated, as stored) and V; rows of absent tokens (bad block ids,
// positions past the table's capacity) are zero; a malformed range is skipped (its rows are left
// as they were) and counted.
struct GatherInputs {
  const std::uint8_t* cache;  // dense [num_blocks][block_size][num_kv_heads][slot_bytes]
  std::int64_t num_blocks;
  int block_size;
  int num_kv_heads;
  int slot_bytes;
  const std::int32_t* block_tables;  // row-major [num_seqs][max_blocks_per_seq]
  int max_blocks_per_seq;
  const std::int32_t* kv_start_loc;  // [num_seqs + 1]
  int num_seqs;
  std::int64_t num_tokens;  // T: rows of k and v
};

struct GatherCounts {
  std::uint64_t bad_block_ids = 0;   // (sequence, logical block) with requested positions
  std::uint64_t long_seq_lens = 0;   // sequences with positions past the table's capacity
  std::uint64_t bad_start_locs = 0;  // malformed ranges
};

// k, v: [T][Hk][256] bf16 bits, updated in place (rows of malformed ranges untouched).
GatherCounts uq_gather_kv(const GatherInputs& in, std::uint16_t* k, std::uint16_t* v);

}  // namespace uqref
