// Host side of both launchers (the HIP one in decode.hip / reduce.hip and the emulated one in
// decode_emulated.hpp): checks a launch description and turns it into the kernels' argument
// structs and grids. Everything a kernel's buffer resources need is computed here: the
// byte ranges (each below 2^31, so that the masked offset 0x80000000 is always out of range)
// and the flags.
#pragma once

#include "gfx950/decode_args.hpp"
#include "gfx950/launch_decode.hpp"
#include "uq/error.hpp"

#include <cstdint>
#include <string>

namespace uq::gfx950 {

static_assert(kCounterBadBlockIds == static_cast<int>(uq::Counter::bad_block_ids) &&
                  kCounterNegativeSeqLens == static_cast<int>(uq::Counter::negative_seq_lens) &&
                  kCounterLongSeqLens == static_cast<int>(uq::Counter::long_seq_lens),
              "decode_args.hpp counter indices must match uq::Counter");

struct Grid3 {
  std::uint32_t x = 0, y = 0, z = 0;
  bool empty() const { return x == 0 || y == 0 || z == 0; }
};

namespace launch_detail {

constexpr std::int64_t kMaxRange = std::int64_t{1} << 31;  // exclusive bound of a byte range
constexpr std::int64_t kMaxGridYZ = 65535;

inline void require(bool ok, const char* fn, const char* arg, const std::string& expected, const std::string& got) {
  if (!ok) throw uq::Error(fn, arg, expected, got);
}
inline std::string str(std::int64_t v) { return std::to_string(v); }

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

inline DecodeKernelArgs make_decode_kernel_args(const DecodePartitionsLaunch& l) {
  using namespace launch_detail;
  constexpr const char* fn = "uq::gfx950::launch_decode_partitions";
  require(l.num_seqs >= 0, fn, "num_seqs", ">= 0", str(l.num_seqs));
  require(l.qg == 6 || l.qg == 8 || l.qg == 16, fn, "qg", "6, 8 or 16", str(l.qg));
  require(l.block_size == 16 || l.block_size == 32 || l.block_size == 64 || l.block_size == 128 ||
              l.block_size == 256,
          fn, "block_size", "16, 32, 64, 128 or 256", str(l.block_size));
  require(l.num_kv_heads >= 1 && l.num_kv_heads <= kMaxGridYZ, fn, "num_kv_heads", "1..65535 (grid y)",
          str(l.num_kv_heads));
  require(l.partitions >= 1 && l.partitions <= kMaxGridYZ, fn, "partitions", "1..65535 (grid z)",
          str(l.partitions));
  require(l.tgpp >= 1, fn, "tgpp", ">= 1", str(l.tgpp));
  require(l.max_blocks_per_seq >= 0, fn, "max_blocks_per_seq", ">= 0", str(l.max_blocks_per_seq));
  const std::int64_t window = static_cast<std::int64_t>(l.max_blocks_per_seq) * l.block_size;
  require(static_cast<std::int64_t>(l.partitions) * l.tgpp * kTileGroupTokens >= window, fn, "partitions * tgpp",
          "* 256 >= max_blocks_per_seq * block_size = " + str(window),
          str(l.partitions) + " * " + str(l.tgpp));
  require(l.slot_bytes >= static_cast<int>(kSlotContent) && l.slot_bytes % 4 == 0, fn, "slot_bytes",
          ">= 272 and a multiple of 4", str(l.slot_bytes));
  const std::int64_t pos_stride = static_cast<std::int64_t>(l.num_kv_heads) * l.slot_bytes;
  const std::int64_t block_bytes = pos_stride * l.block_size;
  require(block_bytes < kMaxRange, fn, "kv_cache", "a block of block_size * num_kv_heads * slot_bytes < 2^31 bytes",
          str(block_bytes));
  require(l.num_blocks >= 0, fn, "num_blocks", ">= 0", str(l.num_blocks));
  if (l.num_blocks > 0) {
    // Buffer loads of dwords ignore the two low address bits: every slot must start 4-aligned.
    require(reinterpret_cast<std::uintptr_t>(l.cache) % 4 == 0 && l.block_stride % 4 == 0, fn, "kv_cache",
            "a 4-byte aligned base and block stride",
            "base % 4 = " + str(static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(l.cache) % 4)) +
                ", block stride " + str(l.block_stride));
    require(l.num_blocks == 1 || l.block_stride >= block_bytes, fn, "block_stride",
            ">= block_size * num_kv_heads * slot_bytes = " + str(block_bytes), str(l.block_stride));
  }
  require(l.q_stride_seq >= 0 && l.q_stride_head >= 0 && l.q_stride_dim >= 1, fn, "q strides",
          "non-negative (dim stride >= 1)",
          str(l.q_stride_seq) + ", " + str(l.q_stride_head) + ", " + str(l.q_stride_dim));
  const std::int64_t q_group = (static_cast<std::int64_t>(l.qg - 1) * l.q_stride_head +
                                static_cast<std::int64_t>(kHeadDim - 1) * l.q_stride_dim + 1) * 2;
  require(q_group < kMaxRange, fn, "q", "the qg rows of one KV head within 2^31 bytes", str(q_group));
  require(l.table_stride_seq >= 0 && l.table_stride_block >= 1, fn, "block_tables strides",
          "non-negative (block stride >= 1)", str(l.table_stride_seq) + ", " + str(l.table_stride_block));
  const std::int64_t table_row = l.max_blocks_per_seq > 0 ? span_bytes(l.max_blocks_per_seq, l.table_stride_block, 4) : 0;
  require(table_row < kMaxRange, fn, "block_tables", "a row within 2^31 bytes", str(table_row));
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
  return a;
}

inline ReduceKernelArgs make_reduce_kernel_args(const DecodeReduceLaunch& l) {
  using namespace launch_detail;
  constexpr const char* fn = "uq::gfx950::launch_decode_reduce";
  require(l.num_seqs >= 0, fn, "num_seqs", ">= 0", str(l.num_seqs));
  require(l.qg == 6 || l.qg == 8 || l.qg == 16, fn, "qg", "6, 8 or 16", str(l.qg));
  require(l.num_kv_heads >= 1 && static_cast<std::int64_t>(l.num_kv_heads) * l.qg <= kMaxGridYZ, fn,
          "num_kv_heads", "1.. with num_kv_heads * qg <= 65535 (grid y)", str(l.num_kv_heads));
  require(l.partitions >= 1 && static_cast<std::int64_t>(l.partitions) * l.qg * kHeadDim * 2 < kMaxRange, fn,
          "partitions", ">= 1 with partitions * qg * 512 < 2^31", str(l.partitions));
  require(l.out_stride_seq >= 0 && l.out_stride_head >= 0 && l.out_stride_dim >= 1, fn, "out strides",
          "non-negative (dim stride >= 1)",
          str(l.out_stride_seq) + ", " + str(l.out_stride_head) + ", " + str(l.out_stride_dim));
  const std::int64_t row = span_bytes(kHeadDim, l.out_stride_dim, 2);
  require(row < kMaxRange, fn, "out", "a row within 2^31 bytes", str(row));
  ReduceKernelArgs a{};
  a.partial_out = l.partial_out;
  a.partial_l = l.partial_l;
  a.partial_m = l.partial_m;
  a.out = l.out;
  a.out_stride_seq = l.out_stride_seq;
  a.out_stride_head = l.out_stride_head;
  a.out_stride_dim = l.out_stride_dim;
  a.out_row_bytes = static_cast<std::uint32_t>(row);
  a.num_kv_heads = l.num_kv_heads;
  a.qg = l.qg;
  a.partitions = l.partitions;
  return a;
}

}  // namespace uq::gfx950
