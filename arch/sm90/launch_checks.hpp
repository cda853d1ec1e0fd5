// Host side of the sm90 launchers: checks a launch description and turns it into the
// kernels' argument structs (plain C++, so that the checks are testable without a GPU).
#pragma once

#include "sm90/decode_args.hpp"
#include "sm90/launch_decode.hpp"
#include "uq/error.hpp"

#include <cstdint>
#include <limits>
#include <string>

namespace uq::sm90 {

static_assert(kCounterBadBlockIds == static_cast<int>(uq::Counter::bad_block_ids) &&
                  kCounterNegativeSeqLens == static_cast<int>(uq::Counter::negative_seq_lens) &&
                  kCounterLongSeqLens == static_cast<int>(uq::Counter::long_seq_lens),
              "decode_args.hpp counter indices must match uq::Counter");

namespace launch_detail {

inline void require(bool ok, const char* fn, const char* arg, const std::string& expected, const std::string& got) {
  if (!ok) throw uq::Error(fn, arg, expected, got);
}
inline std::string str(std::int64_t v) { return std::to_string(v); }

constexpr std::int64_t kMaxGrid = std::numeric_limits<std::int32_t>::max();  // grid.x

}  // namespace launch_detail

// Blocks of the partition kernel's 1-D grid (0: nothing to launch).
inline std::int64_t decode_partitions_blocks(const DecodePartitionsLaunch& l) {
  return static_cast<std::int64_t>(l.num_seqs) * l.num_kv_heads * l.partitions;
}

inline std::int64_t decode_reduce_blocks(const DecodeReduceLaunch& l) {
  return static_cast<std::int64_t>(l.num_seqs) * l.num_kv_heads * l.qg * kReduceChunks;
}

inline DecodeKernelArgs make_decode_kernel_args(const DecodePartitionsLaunch& l) {
  using namespace launch_detail;
  constexpr const char* fn = "uq::sm90::launch_decode_partitions";
  require(l.num_seqs >= 0, fn, "num_seqs", ">= 0", str(l.num_seqs));
  require(l.qg == 6 || l.qg == 8 || l.qg == 16, fn, "qg", "6, 8 or 16", str(l.qg));
  require(l.block_size == 16 || l.block_size == 32 || l.block_size == 64 || l.block_size == 128 ||
              l.block_size == 256,
          fn, "block_size", "16, 32, 64, 128 or 256", str(l.block_size));
  require(l.num_kv_heads >= 1, fn, "num_kv_heads", ">= 1", str(l.num_kv_heads));
  require(l.partitions >= 1, fn, "partitions", ">= 1", str(l.partitions));
  require(l.tgpp >= 1, fn, "tgpp", ">= 1", str(l.tgpp));
  require(l.max_blocks_per_seq >= 0, fn, "max_blocks_per_seq", ">= 0", str(l.max_blocks_per_seq));
  const std::int64_t window = static_cast<std::int64_t>(l.max_blocks_per_seq) * l.block_size;
  require(static_cast<std::int64_t>(l.partitions) * l.tgpp * kTileGroupTokens >= window, fn, "partitions * tgpp",
          "* 256 >= max_blocks_per_seq * block_size = " + str(window), str(l.partitions) + " * " + str(l.tgpp));
  require(decode_partitions_blocks(l) <= kMaxGrid, fn, "num_seqs * num_kv_heads * partitions", "<= 2^31 - 1",
          str(decode_partitions_blocks(l)));
  require(l.slot_bytes >= kSlotContent && l.slot_bytes % 4 == 0, fn, "slot_bytes", ">= 272 and a multiple of 4",
          str(l.slot_bytes));
  require(l.num_blocks >= 0, fn, "num_blocks", ">= 0", str(l.num_blocks));
  const std::int64_t pos_stride = static_cast<std::int64_t>(l.num_kv_heads) * l.slot_bytes;
  const std::int64_t block_bytes = pos_stride * l.block_size;
  require(l.num_blocks <= 1 || l.block_stride >= block_bytes, fn, "block_stride",
          ">= block_size * num_kv_heads * slot_bytes = " + str(block_bytes), str(l.block_stride));
  require(l.q_stride_seq >= 0 && l.q_stride_head >= 0 && l.q_stride_dim >= 1, fn, "q strides",
          "non-negative (dim stride >= 1)",
          str(l.q_stride_seq) + ", " + str(l.q_stride_head) + ", " + str(l.q_stride_dim));
  require(l.table_stride_seq >= 0 && l.table_stride_block >= 1, fn, "block_tables strides",
          "non-negative (block stride >= 1)", str(l.table_stride_seq) + ", " + str(l.table_stride_block));
  require(l.seq_lens_stride >= 0, fn, "seq_lens stride", ">= 0", str(l.seq_lens_stride));

  DecodeKernelArgs a{};
  a.partial_out = l.partial_out;
  a.partial_l = l.partial_l;
  a.partial_m = l.partial_m;
  a.counters = l.counters;
  a.q = l.q;
  a.q_stride_seq = l.q_stride_seq;
  a.q_stride_head = l.q_stride_head;
  a.q_stride_dim = l.q_stride_dim;
  a.cache = l.cache;
  a.num_blocks = l.num_blocks;
  a.block_stride = l.num_blocks > 1 ? l.block_stride : block_bytes;
  a.pos_stride = pos_stride;
  a.slot_bytes = l.slot_bytes;
  a.block_size = l.block_size;
  a.block_tables = l.block_tables;
  a.table_stride_seq = l.table_stride_seq;
  a.table_stride_block = l.table_stride_block;
  a.seq_lens = l.seq_lens;
  a.seq_lens_stride = l.seq_lens_stride;
  a.max_blocks_per_seq = l.max_blocks_per_seq;
  a.num_kv_heads = l.num_kv_heads;
  a.partitions = l.partitions;
  a.tgpp = l.tgpp;
  // The K operand holds FP4 x 2^-14 (fp4_convert.cuh): dot = 2^14 x the MMA sum, exactly.
  a.score_scale = l.scale * 16384.0f;
  auto aligned = [&](std::int64_t n) {
    return reinterpret_cast<std::uintptr_t>(l.cache) % n == 0 && l.slot_bytes % n == 0 && pos_stride % n == 0 &&
           a.block_stride % n == 0;
  };
  a.flags = (l.q_rotated ? kQRotated : 0u) | (aligned(16) ? kAsyncLoads : 0u) | (aligned(4) ? kWordLoads : 0u);
  return a;
}

inline ReduceKernelArgs make_reduce_kernel_args(const DecodeReduceLaunch& l) {
  using namespace launch_detail;
  constexpr const char* fn = "uq::sm90::launch_decode_reduce";
  require(l.num_seqs >= 0, fn, "num_seqs", ">= 0", str(l.num_seqs));
  require(l.qg == 6 || l.qg == 8 || l.qg == 16, fn, "qg", "6, 8 or 16", str(l.qg));
  require(l.num_kv_heads >= 1, fn, "num_kv_heads", ">= 1", str(l.num_kv_heads));
  require(l.partitions >= 1 && l.partitions <= 4096, fn, "partitions", "1..4096", str(l.partitions));
  require(decode_reduce_blocks(l) <= kMaxGrid, fn, "num_seqs * num_kv_heads * qg * 8", "<= 2^31 - 1",
          str(decode_reduce_blocks(l)));
  require(l.out_stride_seq >= 0 && l.out_stride_head >= 0 && l.out_stride_dim >= 1, fn, "out strides",
          "non-negative (dim stride >= 1)",
          str(l.out_stride_seq) + ", " + str(l.out_stride_head) + ", " + str(l.out_stride_dim));
  require(reinterpret_cast<std::uintptr_t>(l.partial_out) % 16 == 0, fn, "partial_out", "a 16-byte aligned buffer",
          "address % 16 = " + str(static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(l.partial_out) % 16)));
  ReduceKernelArgs a{};
  a.partial_out = l.partial_out;
  a.partial_l = l.partial_l;
  a.partial_m = l.partial_m;
  a.out = l.out;
  a.out_stride_seq = l.out_stride_seq;
  a.out_stride_head = l.out_stride_head;
  a.out_stride_dim = l.out_stride_dim;
  a.num_kv_heads = l.num_kv_heads;
  a.qg = l.qg;
  a.partitions = l.partitions;
  return a;
}

}  // namespace uq::sm90
