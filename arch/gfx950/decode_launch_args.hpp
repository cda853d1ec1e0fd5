// Host side of both launchers (the HIP one in decode.hip / reduce.hip and the emulated one in
// decode_emulated.hpp): checks a launch description and turns it into the kernels' argument
// structs and grids. Everything a kernel's buffer resources need is computed here: the
// byte ranges (each below 2^31, so that the masked offset 0x80000000 is always out of range)
// and the flags.
#pragma once

#include "gfx950/decode_args.hpp"
#include "gfx950/launch_decode.hpp"
#include "uq/core/decode_launch_checks.hpp"
#include "uq/error.hpp"

#include <cstdint>
#include <string>

namespace uq::gfx950 {

static_assert(kCounterBadBlockIds == static_cast<int>(uq::Counter::bad_block_ids) &&
                  kCounterNegativeSeqLens == static_cast<int>(uq::Counter::negative_seq_lens) &&
                  kCounterLongSeqLens == static_cast<int>(uq::Counter::long_seq_lens) &&
                  kCounterNonfiniteInputs == static_cast<int>(uq::Counter::nonfinite_inputs) &&
                  kCounterBadStartLocs == static_cast<int>(uq::Counter::bad_start_locs),
              "decode_args.hpp counter indices must match uq::Counter");

struct Grid3 {
  std::uint32_t x = 0, y = 0, z = 0;
  bool empty() const { return x == 0 || y == 0 || z == 0; }
};

namespace launch_detail {

constexpr std::int64_t kMaxRange = std::int64_t{1} << 31;  // exclusive bound of a byte range
constexpr std::int64_t kMaxGridYZ = 65535;

using uq::impl::require;
using uq::impl::str;

inline int log2_exact(int v) {
  int n = 0;
  while ((1 << n) < v) ++n;
  return n;
}

// Bytes spanned by `count` elements of `bytes` each, `stride` elements apart, plus the
// extent of the last one.
inline std::int64_t span_bytes(std::int64_t count, std::int64_t stride, std::int64_t bytes) {
  return ((count - 1) * stride + 1) * bytes;
}

}  // namespace launch_detail

inline Grid3 decode_partitions_grid(const DecodePartitionsLaunch& l) {
  return Grid3{static_cast<std::uint32_t>(l.num_seqs), static_cast<std::uint32_t>(l.num_kv_heads),
               static_cast<std::uint32_t>(l.partitions)};
}

inline Grid3 decode_reduce_grid(const DecodeReduceLaunch& l) {
  return Grid3{static_cast<std::uint32_t>(l.num_seqs), static_cast<std::uint32_t>(l.num_kv_heads * l.qg),
               kReduceChunks};
}

// `fn`: the launcher named in the errors.
inline DecodeKernelArgs make_decode_kernel_args(const DecodePartitionsLaunch& l, const char* fn) {
  using namespace launch_detail;
  // the grid's y and z limits first: sizes past them would fail the common checks less clearly
  require(l.num_kv_heads <= kMaxGridYZ, fn, "num_kv_heads", "<= 65535 (grid y)", str(l.num_kv_heads));
  require(l.partitions <= kMaxGridYZ, fn, "partitions", "<= 65535 (grid z)", str(l.partitions));
  uq::impl::check_decode_partitions_launch(fn, l);
  const std::int64_t pos_stride = static_cast<std::int64_t>(l.num_kv_heads) * l.slot_bytes;
  const std::int64_t block_bytes = pos_stride * l.block_size;
  require(block_bytes < kMaxRange, fn, "kv_cache", "a block of block_size * num_kv_heads * slot_bytes < 2^31 bytes",
          str(block_bytes));
  if (l.num_blocks > 0) {
    // Buffer loads of dwords ignore the two low address bits: every slot must start 4-aligned.
    require(reinterpret_cast<std::uintptr_t>(l.cache) % 4 == 0 && l.block_stride % 4 == 0, fn, "kv_cache",
            "a 4-byte aligned base and block stride",
            "base % 4 = " + str(static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(l.cache) % 4)) +
                ", block stride " + str(l.block_stride));
  }
  const std::int64_t q_group = (static_cast<std::int64_t>(l.qg - 1) * l.q_stride_head +
                                static_cast<std::int64_t>(kHeadDim - 1) * l.q_stride_dim + 1) * 2;
  require(q_group < kMaxRange, fn, "q", "the qg rows of one KV head within 2^31 bytes", str(q_group));
  const std::int64_t table_row = l.max_blocks_per_seq > 0 ? span_bytes(l.max_blocks_per_seq, l.table_stride_block, 4) : 0;
  require(table_row < kMaxRange, fn, "block_tables", "a row within 2^31 bytes", str(table_row));

  DecodeKernelArgs a{};
  a.partial_out = l.partial_out;
  a.partial_l = l.partial_l;
  a.partial_m = l.partial_m;
  a.counters = l.counters;
  a.q = l.q;
  a.q_stride_seq = l.q_stride_seq;
  a.q_stride_head = l.q_stride_head;
  a.q_stride_dim = l.q_stride_dim;
  a.q_group_bytes = static_cast<std::uint32_t>(q_group);
  a.cache = l.cache;
  a.num_blocks = l.num_blocks;
  a.block_stride = l.num_blocks > 1 ? l.block_stride : block_bytes;
  a.pos_stride = static_cast<std::uint32_t>(pos_stride);
  a.block_bytes = static_cast<std::uint32_t>(block_bytes);
  a.slot_bytes = static_cast<std::uint32_t>(l.slot_bytes);
  a.block_size_log2 = static_cast<std::uint32_t>(log2_exact(l.block_size));
  a.block_tables = l.block_tables;
  a.table_stride_seq = l.table_stride_seq;
  a.table_stride_block = l.table_stride_block;
  a.table_row_bytes = static_cast<std::uint32_t>(table_row);
  a.seq_lens = l.seq_lens;
  a.seq_lens_stride = l.seq_lens_stride;
  a.max_blocks_per_seq = l.max_blocks_per_seq;
  a.num_kv_heads = l.num_kv_heads;
  a.partitions = l.partitions;
  a.tgpp = l.tgpp;
  a.scale = l.scale;
  const bool vector_q = l.q_stride_dim == 1 && l.q_stride_seq % 2 == 0 && l.q_stride_head % 2 == 0 &&
                        reinterpret_cast<std::uintptr_t>(l.q) % 4 == 0;
  a.flags = (l.q_rotated ? kQRotated : 0u) | (vector_q ? kQVectorLoads : 0u);
  if (l.out != nullptr) {  // P = 1 (checked above): out and lse written by this kernel
    const std::int64_t out_group = (static_cast<std::int64_t>(l.qg - 1) * l.out_stride_head +
                                    static_cast<std::int64_t>(kHeadDim - 1) * l.out_stride_dim + 1) * 2;
    require(out_group < kMaxRange, fn, "out", "the qg rows of one KV head within 2^31 bytes", str(out_group));
    a.out = l.out;
    a.out_stride_seq = l.out_stride_seq;
    // both below out_group < 2^31 (qg >= 6 rows, 256 dims)
    a.out_head_bytes = static_cast<std::uint32_t>(2 * l.out_stride_head);
    a.out_dim_bytes = static_cast<std::uint32_t>(2 * l.out_stride_dim);
    a.out_group_bytes = static_cast<std::uint32_t>(out_group);
    // 8-byte stores of 4 consecutive dims: dim-contiguous rows whose groups of 4 are 8-aligned
    const bool vector_out = l.out_stride_dim == 1 && l.out_stride_seq % 4 == 0 && l.out_stride_head % 4 == 0 &&
                            reinterpret_cast<std::uintptr_t>(l.out) % 8 == 0;
    a.flags |= kDirectOut | (vector_out ? kOutVectorStores : 0u);
    if (l.lse != nullptr) {
      const std::int64_t lse_group = (static_cast<std::int64_t>(l.qg - 1) * l.lse_stride_head + 1) * 4;
      require(lse_group < kMaxRange, fn, "lse", "the qg values of one KV head within 2^31 bytes", str(lse_group));
      a.lse = l.lse;
      a.lse_stride_seq = l.lse_stride_seq;
      a.lse_head_bytes = static_cast<std::uint32_t>(4 * l.lse_stride_head);  // below lse_group
      a.lse_group_bytes = static_cast<std::uint32_t>(lse_group);
      a.flags |= kWantLse;
    }
  }
  return a;
}

inline DecodeKernelArgs make_decode_kernel_args(const DecodePartitionsLaunch& l) {
  return make_decode_kernel_args(l, "uq::gfx950::launch_decode_partitions");
}

// Several query tokens per sequence (spec §5.9). The multi-token kernel holds the rows of all of a
// sequence's query tokens in one or two 16-column MFMA N tiles (decode_args.hpp, kTileQueryRows,
// kMaxQueryTiles): a plan whose max_query_len * qg exceeds 32 is refused here (the dispatch then
// runs the generic path and says why). Everything else is the one-token kernel's, per query token (q, out, lse and the
// partial rows have one row of QG heads per query token).
inline DecodeQueriesKernelArgs make_decode_queries_kernel_args(const DecodeQueriesLaunch& l) {
  using namespace launch_detail;
  constexpr const char* fn = "uq::gfx950::launch_decode_queries";
  require(l.max_query_len >= 1, fn, "max_query_len", ">= 1", str(l.max_query_len));
  require(query_tiles(l.max_query_len, l.qg) <= kMaxQueryTiles, fn, "max_query_len",
          "max_query_len * qg <= 32: the gfx950 kernel holds a sequence's query rows in at most two 16-column "
          "MFMA N tiles (5 query tokens at qg 6, 4 at qg 8, 2 at qg 16)",
          str(l.max_query_len) + " at qg " + str(l.qg));
  uq::impl::check_decode_queries_form(fn, l);
  DecodeQueriesKernelArgs a{};
  static_cast<DecodeKernelArgs&>(a) = make_decode_kernel_args(l, fn);
  if (l.query_start_loc != nullptr)  // one buffer range holds a sequence's two entries
    require(4 * l.query_start_loc_stride + 4 < kMaxRange, fn, "query_start_loc stride",
            "two entries within 2^31 bytes", str(l.query_start_loc_stride));
  // the q rows of a sequence's query tokens: one buffer range from the first token's
  const std::int64_t token_bytes = 2 * l.q_stride_seq;
  const std::int64_t q_tokens = static_cast<std::int64_t>(a.q_group_bytes) + (l.max_query_len - 1) * token_bytes;
  require(q_tokens < kMaxRange, fn, "q", "the rows of one KV head of max_query_len query tokens within 2^31 bytes",
          str(q_tokens));
  a.query_start_loc = l.query_start_loc;
  a.query_start_loc_stride = l.query_start_loc_stride;
  a.start_pair_bytes = static_cast<std::uint32_t>(4 * l.query_start_loc_stride + 4);
  a.query_len = l.query_len;
  a.max_query_len = l.max_query_len;
  a.num_query_tokens = l.num_query_tokens;
  a.num_seqs = l.num_seqs;
  a.q_token_bytes = l.max_query_len > 1 ? static_cast<std::uint32_t>(token_bytes) : 0u;
  return a;
}

inline ReduceKernelArgs make_reduce_kernel_args(const DecodeReduceLaunch& l) {
  using namespace launch_detail;
  constexpr const char* fn = "uq::gfx950::launch_decode_reduce";
  uq::impl::check_decode_reduce_launch(fn, l);
  require(static_cast<std::int64_t>(l.num_kv_heads) * l.qg <= kMaxGridYZ, fn, "num_kv_heads",
          "num_kv_heads * qg <= 65535 (grid y)", str(l.num_kv_heads));
  require(static_cast<std::int64_t>(l.partitions) * l.qg * kHeadDim * 2 < kMaxRange, fn, "partitions",
          "partitions * qg * 512 < 2^31", str(l.partitions));
  // the reducer holds a row's m, l and weights for at most this many partitions (reduce_kernel.hpp)
  require(l.partitions <= static_cast<int>(kReduceMaxPartitions), fn, "partitions", "<= 4096", str(l.partitions));
  const std::int64_t row = span_bytes(kHeadDim, l.out_stride_dim, 2);
  require(row < kMaxRange, fn, "out", "a row within 2^31 bytes", str(row));
  ReduceKernelArgs a{};
  static_cast<DecodeReduceLaunch&>(a) = l;
  a.out_row_bytes = static_cast<std::uint32_t>(row);
  return a;
}

// Check and launch in one (tests; the dispatch keeps the arguments it checked). Defined only
// where the HIP launchers are linked (not in the emulator's builds).
inline void launch_decode_partitions(const DecodePartitionsLaunch& l) { launch_decode_partitions(l, make_decode_kernel_args(l)); }
inline void launch_decode_queries(const DecodeQueriesLaunch& l) { launch_decode_queries(l, make_decode_queries_kernel_args(l)); }
inline void launch_decode_reduce(const DecodeReduceLaunch& l) { launch_decode_reduce(l, make_reduce_kernel_args(l)); }

}  // namespace uq::gfx950
