// What every tuned decode kernel requires of its launch description (core/decode_launch.hpp),
// checked on the host by each path's launcher before its own limits (grid dimensions, buffer
// byte ranges, alignment). Each failure is a uq::Error naming the launcher, the argument, what
// was expected and what was given.
#pragma once

#include "uq/core/decode_launch.hpp"
#include "uq/core/ultraquant_format.hpp"
#include "uq/error.hpp"

#include <cstdint>
#include <string>

namespace uq {
namespace impl {

// The strides of an out view ([num_seqs][num_q_heads][256] bf16) and of an lse view
// ([num_seqs][num_q_heads] float), which both kernels may write (the message is composed only
// on failure).
inline void check_out_strides(const char* fn, std::int64_t seq, std::int64_t head, std::int64_t dim) {
  if (seq >= 0 && head >= 0 && dim >= 1) return;
  require(false, fn, "out strides", "non-negative (dim stride >= 1)", str(seq) + ", " + str(head) + ", " + str(dim));
}
inline void check_lse_strides(const char* fn, std::int64_t seq, std::int64_t head) {
  if (seq >= 0 && head >= 0) return;
  require(false, fn, "lse strides", "non-negative", str(seq) + ", " + str(head));
}

// What every tuned decode kernel requires of a launch, checked by each path's launcher before
// its own limits (grid dimensions, buffer byte ranges, alignment). `fn` is the launcher's name
// for the uq::Error.
inline void check_decode_partitions_launch(const char* fn, const DecodePartitionsLaunch& l) {
  require(l.num_seqs >= 0, fn, "num_seqs", ">= 0", str(l.num_seqs));
  require(is_decode_qg(l.qg), fn, "qg", "6, 8 or 16", str(l.qg));
  require(is_decode_block_size(l.block_size), fn, "block_size", "16, 32, 64, 128 or 256", str(l.block_size));
  require(l.num_kv_heads >= 1, fn, "num_kv_heads", ">= 1", str(l.num_kv_heads));
  require(l.partitions >= 1, fn, "partitions", ">= 1", str(l.partitions));
  require(l.tgpp >= 1, fn, "tgpp", ">= 1", str(l.tgpp));
  require(l.max_blocks_per_seq >= 0, fn, "max_blocks_per_seq", ">= 0", str(l.max_blocks_per_seq));
  const std::int64_t window = static_cast<std::int64_t>(l.max_blocks_per_seq) * l.block_size;
  require(static_cast<std::int64_t>(l.partitions) * l.tgpp * kTileGroupTokens >= window, fn, "partitions * tgpp",
          "* 256 >= max_blocks_per_seq * block_size = " + str(window), str(l.partitions) + " * " + str(l.tgpp));
  require(l.slot_bytes >= ultraquant::kSlotContent && l.slot_bytes % 4 == 0, fn, "slot_bytes", ">= 272 and a multiple of 4",
          str(l.slot_bytes));
  require(l.num_blocks >= 0, fn, "num_blocks", ">= 0", str(l.num_blocks));
  const std::int64_t block_bytes = static_cast<std::int64_t>(l.num_kv_heads) * l.slot_bytes * l.block_size;
  require(l.num_blocks <= 1 || l.block_stride >= block_bytes, fn, "block_stride",
          ">= block_size * num_kv_heads * slot_bytes = " + str(block_bytes), str(l.block_stride));
  require(l.q_stride_seq >= 0 && l.q_stride_head >= 0 && l.q_stride_dim >= 1, fn, "q strides",
          "non-negative (dim stride >= 1)",
          str(l.q_stride_seq) + ", " + str(l.q_stride_head) + ", " + str(l.q_stride_dim));
  require(l.table_stride_seq >= 0 && l.table_stride_block >= 1, fn, "block_tables strides",
          "non-negative (block stride >= 1)", str(l.table_stride_seq) + ", " + str(l.table_stride_block));
  require(l.seq_lens_stride >= 0, fn, "seq_lens stride", ">= 0", str(l.seq_lens_stride));
  require(l.out == nullptr || l.partitions == 1, fn, "out", "set only with partitions == 1 (no reducer)",
          "set with partitions = " + str(l.partitions));
  require(l.lse == nullptr || l.out != nullptr, fn, "lse", "set only with out (partitions == 1)",
          "lse without out");
  if (l.out != nullptr) check_out_strides(fn, l.out_stride_seq, l.out_stride_head, l.out_stride_dim);
  if (l.lse != nullptr) check_lse_strides(fn, l.lse_stride_seq, l.lse_stride_head);
}

// The query-token fields of a multi-token launch (spec §5.9), which every tuned kernel reads
// alike: max_query_len >= 1, the uniform form's query_len within it and its num_seqs * query_len
// rows within num_query_tokens, or a non-negative query_start_loc stride. Each path checks its
// own row limit (max_query_len * qg) before this.
inline void check_decode_queries_form(const char* fn, const DecodeQueriesLaunch& l) {
  require(l.num_query_tokens >= 0, fn, "num_query_tokens", ">= 0", str(l.num_query_tokens));
  if (l.query_start_loc == nullptr) {  // the uniform form: rows b * query_len + j < T
    require(l.query_len >= 1 && l.query_len <= l.max_query_len, fn, "query_len", "1 .. max_query_len",
            str(l.query_len));
    require(static_cast<std::int64_t>(l.num_seqs) * l.query_len <= l.num_query_tokens, fn, "num_query_tokens",
            ">= num_seqs * query_len", str(l.num_query_tokens));
  } else {
    require(l.query_start_loc_stride >= 0, fn, "query_start_loc stride", ">= 0", str(l.query_start_loc_stride));
  }
}

inline void check_decode_reduce_launch(const char* fn, const DecodeReduceLaunch& l) {
  require(l.num_seqs >= 0, fn, "num_seqs", ">= 0", str(l.num_seqs));
  require(is_decode_qg(l.qg), fn, "qg", "6, 8 or 16", str(l.qg));
  require(l.num_kv_heads >= 1, fn, "num_kv_heads", ">= 1", str(l.num_kv_heads));
  require(l.partitions >= 1, fn, "partitions", ">= 1", str(l.partitions));
  check_out_strides(fn, l.out_stride_seq, l.out_stride_head, l.out_stride_dim);
  if (l.lse != nullptr) check_lse_strides(fn, l.lse_stride_seq, l.lse_stride_head);
}

}  // namespace impl
}  // namespace uq
