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
                  kCounterLongSeqLens == static_cast<int>(uq::Counter::long_seq_lens) &&
                  kCounterNonfiniteInputs == static_cast<int>(uq::Counter::nonfinite_inputs),
              "decode_args.hpp counter indices must match uq::Counter");

namespace launch_detail {

using uq::impl::require;
using uq::impl::str;

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
  uq::impl::check_decode_partitions_launch(fn, l);
  require(decode_partitions_blocks(l) <= kMaxGrid, fn, "num_seqs * num_kv_heads * partitions", "<= 2^31 - 1",
          str(decode_partitions_blocks(l)));
  const std::int64_t pos_stride = static_cast<std::int64_t>(l.num_kv_heads) * l.slot_bytes;
  const std::int64_t block_bytes = pos_stride * l.block_size;

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
  a.block_shift = 0;
  while ((1 << a.block_shift) < l.block_size) ++a.block_shift;
  a.block_tables = l.block_tables;
  a.table_stride_seq = l.table_stride_seq;
  a.table_stride_block = l.table_stride_block;
  a.seq_lens = l.seq_lens;
  a.seq_lens_stride = l.seq_lens_stride;
  a.max_blocks_per_seq = l.max_blocks_per_seq;
  a.num_seqs = l.num_seqs;
  a.num_kv_heads = l.num_kv_heads;
  a.partitions = l.partitions;
  a.tgpp = l.tgpp;
  // The K operand holds FP4 x 2^-6 (fp4_convert.cuh): dot = 2^6 x the wgmma sum, exactly; the
  // kernel's softmax runs in base 2, so log2(e) joins the same multiplier (one rounding).
  a.score_scale = static_cast<float>(static_cast<double>(l.scale) * 64.0 * 1.4426950408889634);
  auto aligned = [&](std::int64_t n) {
    return reinterpret_cast<std::uintptr_t>(l.cache) % n == 0 && l.slot_bytes % n == 0 && pos_stride % n == 0 &&
           a.block_stride % n == 0;
  };
  // P = 1 with out given: the kernel writes out (and lse) itself and no reducer runs. P = 1
  // without out (a caller that runs the reducer anyway) gets partials, as for P > 1.
  const bool write_out = l.partitions == 1 && l.out != nullptr;
  if (write_out) {
    require(l.out_stride_seq >= 0 && l.out_stride_head >= 0 && l.out_stride_dim >= 1, fn, "out strides",
            "non-negative (dim stride >= 1)",
            str(l.out_stride_seq) + ", " + str(l.out_stride_head) + ", " + str(l.out_stride_dim));
    require(l.lse == nullptr || (l.lse_stride_seq >= 0 && l.lse_stride_head >= 0), fn, "lse strides", "non-negative",
            str(l.lse_stride_seq) + ", " + str(l.lse_stride_head));
  } else {
    require(reinterpret_cast<std::uintptr_t>(l.partial_out) % 8 == 0, fn, "partial_out", "an 8-byte aligned buffer",
            "address % 8 = " + str(static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(l.partial_out) % 8)));
  }
  a.out = l.out;
  a.out_stride_seq = l.out_stride_seq;
  a.out_stride_head = l.out_stride_head;
  a.out_stride_dim = l.out_stride_dim;
  a.lse = write_out ? l.lse : nullptr;
  a.lse_stride_seq = l.lse_stride_seq;
  a.lse_stride_head = l.lse_stride_head;
  const bool out_vector = write_out && l.out_stride_dim == 1 && reinterpret_cast<std::uintptr_t>(l.out) % 8 == 0 &&
                          l.out_stride_seq % 4 == 0 && l.out_stride_head % 4 == 0;
  const bool q_vector = l.q_stride_dim == 1 && reinterpret_cast<std::uintptr_t>(l.q) % 16 == 0 && l.q_stride_seq % 8 == 0 &&
                        l.q_stride_head % 8 == 0;
  a.flags = (l.q_rotated ? kQRotated : 0u) | (aligned(16) ? kBulkLoads : 0u) | (aligned(4) ? kWordLoads : 0u) |
            (l.num_kv_heads == 1 && l.slot_bytes == kSlotContent ? kDenseRows : 0u) | (write_out ? kWriteOut : 0u) |
            (out_vector ? kOutVector : 0u) | (q_vector ? kQVector : 0u);
  return a;
}

inline ReduceKernelArgs make_reduce_kernel_args(const DecodeReduceLaunch& l) {
  using namespace launch_detail;
  constexpr const char* fn = "uq::sm90::launch_decode_reduce";
  uq::impl::check_decode_reduce_launch(fn, l);
  // the plan's limit (uq::kMaxPartitions); the reducer itself has none
  require(l.partitions <= 4096, fn, "partitions", "1..4096", str(l.partitions));
  require(l.lse == nullptr || (l.lse_stride_seq >= 0 && l.lse_stride_head >= 0), fn, "lse strides", "non-negative",
          str(l.lse_stride_seq) + ", " + str(l.lse_stride_head));
  require(decode_reduce_blocks(l) <= kMaxGrid, fn, "num_seqs * num_kv_heads * qg * 8", "<= 2^31 - 1",
          str(decode_reduce_blocks(l)));
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
  a.lse = l.lse;
  a.lse_stride_seq = l.lse_stride_seq;
  a.lse_stride_head = l.lse_stride_head;
  a.num_kv_heads = l.num_kv_heads;
  a.qg = l.qg;
  a.partitions = l.partitions;
  return a;
}

}  // namespace uq::sm90
