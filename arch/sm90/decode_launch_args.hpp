// Host side of the sm90 launchers: checks a launch description and turns it into the
// kernels' argument structs (plain C++, so that the checks are testable without a GPU).
#pragma once

#include "sm90/decode_args.hpp"
#include "sm90/launch_decode.hpp"
#include "uq/core/decode_launch_checks.hpp"
#include "uq/error.hpp"

#include <cstdint>
#include <limits>
#include <string>

namespace uq::sm90 {

static_assert(kCounterBadBlockIds == static_cast<int>(uq::Counter::bad_block_ids) &&
                  kCounterNegativeSeqLens == static_cast<int>(uq::Counter::negative_seq_lens) &&
                  kCounterLongSeqLens == static_cast<int>(uq::Counter::long_seq_lens) &&
                  kCounterNonfiniteInputs == static_cast<int>(uq::Counter::nonfinite_inputs) &&
                  kCounterBadStartLocs == static_cast<int>(uq::Counter::bad_start_locs),
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

// fn: the launcher, as the errors name it.
inline DecodeKernelArgs make_decode_kernel_args(const DecodePartitionsLaunch& l, const char* fn) {
  using namespace launch_detail;
  uq::impl::check_decode_partitions_launch(fn, l);
  require(decode_partitions_blocks(l) <= kMaxGrid, fn, "num_seqs * num_kv_heads * partitions", "<= 2^31 - 1",
          str(decode_partitions_blocks(l)));
  const std::int64_t pos_stride = static_cast<std::int64_t>(l.num_kv_heads) * l.slot_bytes;
  const std::int64_t block_bytes = pos_stride * l.block_size;

  DecodeKernelArgs a{};
  static_cast<DecodePartitionsLaunch&>(a) = l;
  a.block_stride = l.num_blocks > 1 ? l.block_stride : block_bytes;
  a.pos_stride = pos_stride;
  a.block_shift = 0;
  while ((1 << a.block_shift) < l.block_size) ++a.block_shift;
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
  if (!write_out) {  // (out and lse strides: the common checks)
    require(reinterpret_cast<std::uintptr_t>(l.partial_out) % 8 == 0, fn, "partial_out", "an 8-byte aligned buffer",
            "address % 8 = " + str(static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(l.partial_out) % 8)));
  }
  const bool out_vector = write_out && l.out_stride_dim == 1 && reinterpret_cast<std::uintptr_t>(l.out) % 8 == 0 &&
                          l.out_stride_seq % 4 == 0 && l.out_stride_head % 4 == 0;
  const bool q_vector = l.q_stride_dim == 1 && reinterpret_cast<std::uintptr_t>(l.q) % 16 == 0 && l.q_stride_seq % 8 == 0 &&
                        l.q_stride_head % 8 == 0;
  a.flags = (l.q_rotated ? kQRotated : 0u) | (aligned(16) ? kBulkLoads : 0u) | (aligned(4) ? kWordLoads : 0u) |
            (l.num_kv_heads == 1 && l.slot_bytes == kSlotContent ? kDenseRows : 0u) | (write_out ? kWriteOut : 0u) |
            (out_vector ? kOutVector : 0u) | (q_vector ? kQVector : 0u);
  // Single-slot copies (several KV heads or padded slots) by tensor map when a sub-block's rows
  // land 128-byte aligned in the ring (272 x decode_sub_rows bytes apart).
  if ((a.flags & kBulkLoads) && !(a.flags & kDenseRows) && decode_sub_rows(l.block_size) % 8 == 0) a.flags |= kTensorRows;
  return a;
}

inline DecodeKernelArgs make_decode_kernel_args(const DecodePartitionsLaunch& l) {
  return make_decode_kernel_args(l, "uq::sm90::launch_decode_partitions");
}

// Several query tokens per sequence (spec §5.9): the N of the multi-token instance a launch takes,
// its max_query_len x qg query rows padded (decode_args.hpp, queries_n).
inline int decode_queries_rows(const DecodeQueriesLaunch& l) {
  return queries_n(static_cast<int>(static_cast<std::int64_t>(l.max_query_len) * l.qg));
}

// The multi-token kernel holds the query rows of all of a sequence's query tokens in the N of its
// wgmmas (decode_queries.cuh): a plan whose max_query_len x qg exceeds kQueriesMaxRows (32) is
// refused here (the dispatch then runs the generic path and says why). Everything else is the
// one-token kernel's, per query token (q, out, lse and the partial rows have one row of QG heads
// per query token).
inline DecodeQueriesKernelArgs make_decode_queries_kernel_args(const DecodeQueriesLaunch& l) {
  using namespace launch_detail;
  constexpr const char* fn = "uq::sm90::launch_decode_queries";
  require(l.max_query_len >= 1, fn, "max_query_len", ">= 1", str(l.max_query_len));
  require(static_cast<std::int64_t>(l.max_query_len) * l.qg <= kQueriesMaxRows, fn, "max_query_len",
          "max_query_len * qg <= 32: the sm90 kernel holds a sequence's query rows in the N of one wgmma "
          "(5 query tokens at qg 6, 4 at qg 8, 2 at qg 16)",
          str(l.max_query_len) + " at qg " + str(l.qg));
  uq::impl::check_decode_queries_form(fn, l);
  DecodeQueriesKernelArgs a{};
  static_cast<DecodeKernelArgs&>(a) = make_decode_kernel_args(l, fn);
  a.query_start_loc = l.query_start_loc;
  a.query_start_loc_stride = l.query_start_loc_stride;
  a.query_len = l.query_len;
  a.max_query_len = l.max_query_len;
  a.num_query_tokens = l.num_query_tokens;
  return a;
}

inline ReduceKernelArgs make_reduce_kernel_args(const DecodeReduceLaunch& l) {
  using namespace launch_detail;
  constexpr const char* fn = "uq::sm90::launch_decode_reduce";
  uq::impl::check_decode_reduce_launch(fn, l);
  // the plan's limit; the reducer itself has none (lse strides: the common checks)
  require(l.partitions <= uq::kMaxPartitions, fn, "partitions", "1.." + str(uq::kMaxPartitions), str(l.partitions));
  require(decode_reduce_blocks(l) <= kMaxGrid, fn, "num_seqs * num_kv_heads * qg * 8", "<= 2^31 - 1",
          str(decode_reduce_blocks(l)));
  require(reinterpret_cast<std::uintptr_t>(l.partial_out) % 16 == 0, fn, "partial_out", "a 16-byte aligned buffer",
          "address % 16 = " + str(static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(l.partial_out) % 16)));
  return l;
}

// Check and launch in one (tests, benchmarks; the dispatch keeps the arguments it checked).
inline void launch_decode_partitions(const DecodePartitionsLaunch& l) { launch_decode_partitions(l, make_decode_kernel_args(l)); }
inline void launch_decode_queries(const DecodeQueriesLaunch& l) { launch_decode_queries(l, make_decode_queries_kernel_args(l)); }
inline void launch_decode_reduce(const DecodeReduceLaunch& l) { launch_decode_reduce(l, make_reduce_kernel_args(l)); }

}  // namespace uq::sm90
