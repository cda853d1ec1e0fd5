// The reference's inputs for the layouts the tests build: queries stored densely (a row per
// query token, heads 256 elements apart for decode), a dense cache and row-major block tables.
// What a test varies beyond that (rotation, several query tokens per sequence) it sets on the
// result before calling the reference.
#pragma once

#include "uqref.hpp"

#include <cstdint>

namespace uqtest {

// uqref::uq_decode's inputs: q [rows][q_row_heads][256] (q_row_heads = Hk x qg, or more in a
// fused qkv row whose first Hk x qg heads are the queries), cache [num_blocks][block_size]
// [num_kv_heads][slot_bytes], block_tables [num_seqs][max_blocks_per_seq], seq_lens [num_seqs];
// one query token per sequence, not rotated.
inline uqref::DecodeInputs reference_decode_inputs(const std::uint16_t* q, std::int64_t q_row_heads, int qg,
                                                   const std::uint8_t* cache, std::int64_t num_blocks, int block_size,
                                                   int num_kv_heads, int slot_bytes, const std::int32_t* block_tables,
                                                   int max_blocks_per_seq, const std::int32_t* seq_lens, int num_seqs,
                                                   double scale) {
  uqref::DecodeInputs in{};
  in.q = q;
  in.q_stride_seq = q_row_heads * 256;
  in.q_stride_head = 256;
  in.cache = cache;
  in.num_blocks = num_blocks;
  in.block_size = block_size;
  in.num_kv_heads = num_kv_heads;
  in.slot_bytes = slot_bytes;
  in.block_tables = block_tables;
  in.max_blocks_per_seq = max_blocks_per_seq;
  in.seq_lens = seq_lens;
  in.num_seqs = num_seqs;
  in.qg = qg;
  in.scale = scale;
  in.q_rotated = false;
  return in;
}

// uqref::nv_score's inputs: q row r, head h at q[r * q_stride_row + h * q_stride_head] (128 E4M3
// bytes), cache [num_blocks][9216], block_tables [num_reqs][max_blocks], seq_lens [num_reqs].
inline uqref::ScoreInputs reference_score_inputs(const std::uint8_t* q, std::int64_t q_stride_row,
                                                 std::int64_t q_stride_head, int heads, const std::uint8_t* cache,
                                                 std::int64_t num_blocks, const std::int32_t* block_tables,
                                                 int max_blocks, const std::int32_t* seq_lens, int num_reqs,
                                                 int query_len, int init_blocks, int local_blocks) {
  uqref::ScoreInputs in{};
  in.q = q;
  in.q_stride_row = q_stride_row;
  in.q_stride_head = q_stride_head;
  in.cache = cache;
  in.num_blocks = num_blocks;
  in.block_tables = block_tables;
  in.max_blocks = max_blocks;
  in.seq_lens = seq_lens;
  in.num_reqs = num_reqs;
  in.query_len = query_len;
  in.heads = heads;
  in.init_blocks = init_blocks;
  in.local_blocks = local_blocks;
  return in;
}

}  // namespace uqtest
