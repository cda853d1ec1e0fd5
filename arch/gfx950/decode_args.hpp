// What the gfx950 UltraQuant decode kernels receive (both builds: the gfx950 code object and
// the emulator), and the constants of their memory layouts. The host fills these structs
// from a launch description (decode_launch_args.hpp); the kernels only read them.
#pragma once

#include "uq/core/decode_launch.hpp"
#include "uq/core/ultraquant_format.hpp"

#include <cstdint>

// Full unrolling of constant-trip loops: the kernels index small arrays (the 32 values of a
// lane's query chunk, the 16 PV accumulators) with the loop counter, and only a fully
// unrolled loop keeps them in registers. Both g++ and clang understand this spelling.
#define UQ_GFX950_UNROLL _Pragma("GCC unroll 64")

namespace uq::gfx950 {

// ---------------------------------------------------------------- problem constants
// The format's values come from the Kokkos-free core (uq/core/ultraquant_format.hpp); the
// kernels want them as unsigned (their offset arithmetic is 32-bit unsigned).
constexpr std::uint32_t kHeadDim = uq::ultraquant::kHeadDim;
constexpr std::uint32_t kTileTokens = 16;  // tokens per MFMA tile
constexpr std::uint32_t kTileGroupTokens = uq::kTileGroupTokens;  // 16 tiles
constexpr std::uint32_t kTilesPerGroup = kTileGroupTokens / kTileTokens;

// Slot bytes of one (token, KV head) (spec ultraquant.md §2).
constexpr std::uint32_t kSlotKCodes = uq::ultraquant::kKCodes;
constexpr std::uint32_t kSlotKScales = uq::ultraquant::kKScales;
constexpr std::uint32_t kSlotVCodes = uq::ultraquant::kVCodes;
constexpr std::uint32_t kSlotVScales = uq::ultraquant::kVScales;
constexpr std::uint32_t kSlotContent = uq::ultraquant::kSlotContent;

// A buffer offset no range contains (num_records is kept below 2^31): loads read 0.
constexpr std::uint32_t kMaskedOffset = 0x80000000u;

// Indices of the status counters (uq::Counter in src/uq/error.hpp; the host side
// static_asserts that they agree).
constexpr int kCounterBadBlockIds = 0;
constexpr int kCounterNegativeSeqLens = 1;
constexpr int kCounterLongSeqLens = 2;
constexpr int kCounterNonfiniteInputs = 4;
constexpr int kCounterBadStartLocs = 5;

// softmax in base 2: e^x = 2^(x log2 e)
constexpr float kLog2e = 1.4426950408889634f;

// ---------------------------------------------------------------- LDS plan (decode kernel)
// Q: QG rows of 256 E4M3 bytes in natural dim order (the MFMA B operand is read from it).
constexpr std::uint32_t q_lds_bytes(int qg) { return static_cast<std::uint32_t>(qg) * kHeadDim; }
// V tile: 16 token rows of 256 bf16, padded by 32 bytes. The transposing read has a phase of
// 32 lanes read 32 bytes from each of 8 rows: with 544-byte rows (136 dwords, 8 mod 64 banks)
// the 8 rows start 8 banks apart and tile the 64 banks; with the 32-bank habit of 528 bytes
// they overlapped 2-way (the emulator's bank profile, EmuLdsBanks.TransposedVReadIs...). The
// V writes stay 2-way (lanes c and c + 2 of a phase write 128 bytes apart): a lane map that
// avoids it costs a register select per written word.
constexpr std::uint32_t kVRowBytes = kHeadDim * 2 + 32;               // 544
constexpr std::uint32_t kVTileBytes = kTileTokens * kVRowBytes;      // 8704

// Flags of DecodeKernelArgs::flags.
constexpr std::uint32_t kQRotated = 1u;      // q holds WHT(q): no in-kernel rotation
constexpr std::uint32_t kQVectorLoads = 2u;  // q rows are dim-contiguous and 4-byte aligned
constexpr std::uint32_t kDirectOut = 4u;     // P = 1: write out (and lse) instead of partial rows
constexpr std::uint32_t kWantLse = 8u;       // with kDirectOut: write lse too
constexpr std::uint32_t kOutVectorStores = 16u;  // out rows dim-contiguous, 8-byte aligned groups of 4

// The bf16 quiet NaN an output row of a non-finite query holds (spec §6), twice.
constexpr std::uint32_t kBf16NanPair = 0x7FC07FC0u;

// ---------------------------------------------------------------- the partition kernel
// Workgroup (b, h, p) of the grid (num_seqs, num_kv_heads, partitions), one wave, writes the
// QG partial rows ((b * num_kv_heads + h) * partitions + p) * QG + r of partial_out (bf16,
// 256 per row; only rows with l > 0), partial_l and partial_m; with kDirectOut (P = 1) the QG
// rows of out (and lse) instead. All strides are in elements unless named bytes.
// Unlike the reducer's, this argument block does not embed the launch description: it is the
// kernel's scalar-register budget (loaded by s_load into SGPRs), so it carries 32-bit byte
// offsets and ranges for the buffer resources (checked < 2^31 on the host) in place of the
// description's 64-bit element strides, and no host-only fields (stream, qg, the P = 1 request).
struct DecodeKernelArgs {
  std::uint16_t* partial_out;
  float* partial_l;
  float* partial_m;
  unsigned long long* counters;  // uq::kNumCounters device counters

  // kDirectOut: out element (b, hq, d) at b*out_stride_seq + hq*out_stride_head + d*out_stride_dim
  // (bf16), lse (b, hq) at b*lse_stride_seq + hq*lse_stride_head (float, with kWantLse). Within
  // one KV head's rows the offsets are 32-bit byte offsets (the host checks the ranges).
  std::uint16_t* out;
  std::int64_t out_stride_seq;
  std::uint32_t out_head_bytes;   // 2 * out_stride_head
  std::uint32_t out_dim_bytes;    // 2 * out_stride_dim
  std::uint32_t out_group_bytes;  // byte range of one KV head's QG out rows, from their first element
  float* lse;
  std::int64_t lse_stride_seq;
  std::uint32_t lse_head_bytes;   // 4 * lse_stride_head
  std::uint32_t lse_group_bytes;  // byte range of one KV head's QG lse values

  const std::uint16_t* q;  // bf16; element (b, hq, d) at b*q_stride_seq + hq*q_stride_head + d*q_stride_dim
  std::int64_t q_stride_seq;
  std::int64_t q_stride_head;
  std::int64_t q_stride_dim;
  std::uint32_t q_group_bytes;  // byte range of one KV head's QG rows, from their first element

  const std::uint8_t* cache;   // [num_blocks][block_size][num_kv_heads][slot_bytes]
  std::int64_t num_blocks;
  std::int64_t block_stride;   // bytes between blocks (64-bit: caches exceed 4 GiB)
  std::uint32_t pos_stride;    // bytes between positions = num_kv_heads * slot_bytes
  std::uint32_t block_bytes;   // block_size * pos_stride: one block's buffer range (< 2^31)
  std::uint32_t slot_bytes;
  std::uint32_t block_size_log2;

  const std::int32_t* block_tables;  // entry (b, j) at b*table_stride_seq + j*table_stride_block
  std::int64_t table_stride_seq;
  std::int64_t table_stride_block;
  std::uint32_t table_row_bytes;     // byte range of one row

  const std::int32_t* seq_lens;  // entry b at b*seq_lens_stride
  std::int64_t seq_lens_stride;

  std::int32_t max_blocks_per_seq;
  std::int32_t num_kv_heads;
  std::int32_t partitions;  // P
  std::int32_t tgpp;        // tile-groups per partition
  float scale;              // softmax scale
  std::uint32_t flags;      // kQRotated | kQVectorLoads | kDirectOut | kWantLse | kOutVectorStores
};

// ---------------------------------------------------------------- several query tokens
// The multi-token partition kernel (spec ultraquant.md §5.9, DecodeQueriesLaunch) puts the query
// rows of all of a sequence's query tokens into the 16-column MFMA N tiles: row r = j * QG + g is
// query token j, query head h * QG + g, and sits in column r % 16 of N tile r / 16. One tile when
// max_query_len * QG <= 16 (2 tokens at QG 6 and 8, 1 at QG 16); two tiles up to 32 rows (5, 4
// and 2 tokens), each with its own scores, softmax state and P.V accumulators over the same K and
// V registers. Longer launches are refused (the generic path runs them).
constexpr int kTileQueryRows = 16;
constexpr int kMaxQueryTiles = 2;
// The N tiles a launch of max_query_len tokens at QG needs (> kMaxQueryTiles: refused).
constexpr long long query_tiles(long long max_query_len, int qg) {
  return (max_query_len * qg + kTileQueryRows - 1) / kTileQueryRows;
}
constexpr int max_tile_query_tokens(int qg, int tiles = 1) { return tiles * kTileQueryRows / qg; }
// The most query rows `tiles` N tiles hold (one: 12, 16, 16; two: 30, 32, 32): the kernel's Q
// rows in LDS.
constexpr int tile_query_rows(int qg, int tiles = 1) { return max_tile_query_tokens(qg, tiles) * qg; }

// The multi-token kernel's arguments: the one-token kernel's (with rows of query tokens where
// those have sequences: q, out and lse rows, partial rows [T][num_kv_heads][P][QG]) and where a
// sequence's query tokens are.
struct DecodeQueriesKernelArgs : DecodeKernelArgs {
  const std::int32_t* query_start_loc;  // [num_seqs + 1]; nullptr: the uniform form
  std::int64_t query_start_loc_stride;
  std::uint32_t start_pair_bytes;  // byte range of entries b and b + 1: 4 * stride + 4
  std::int32_t query_len;          // the uniform form's tokens per sequence
  std::int32_t max_query_len;      // a longer range is malformed (spec §5.9)
  std::int32_t num_query_tokens;   // T
  std::int32_t num_seqs;
  std::uint32_t q_token_bytes;     // 2 * q_stride_seq: from one query token's rows to the next's
};

// ---------------------------------------------------------------- the reducer
// Workgroup (b, hq, c) of the grid (num_seqs, num_q_heads, kReduceChunks) reduces the dims
// kReduceChunk * c .. + kReduceChunk - 1 of query head hq with kReduceWaves waves
// (reduce_kernel.hpp). Each lane holds 8 dims (one 16-byte load) of one partition row at a
// time: kReduceRowLanes lanes cover the chunk, so a workgroup loads kReduceSlots partition rows
// per instruction, and each lane keeps kReduceBatch loads in flight.
constexpr std::uint32_t kReduceChunk = 32;
constexpr std::uint32_t kReduceChunks = kHeadDim / kReduceChunk;
constexpr std::uint32_t kReduceWaves = 4;
constexpr std::uint32_t kReduceLanes = 64 * kReduceWaves;
constexpr std::uint32_t kReduceDimsPerLane = 8;
constexpr std::uint32_t kReduceRowLanes = kReduceChunk / kReduceDimsPerLane;
constexpr std::uint32_t kReduceSlots = kReduceLanes / kReduceRowLanes;
constexpr std::uint32_t kReduceBatch = 8;
// The most partitions a plan may have (spec ultraquant.md §5.7: an override lies in 1 .. 4096):
// the reducer keeps every partition's m and l of its row in registers, MlLoads per lane, and
// every weight in LDS. Two builds: up to 1024 partitions (the default plans' 512 at most; 4
// loads of each a lane) and up to 4096 (16).
constexpr std::uint32_t kReduceMaxPartitions = 4096;
constexpr std::uint32_t kReduceNarrowPartitions = 1024;
static_assert(kReduceChunk % kReduceDimsPerLane == 0 && kReduceLanes % kReduceRowLanes == 0 && kReduceChunk <= 32,
              "reducer lane map: wave 0 sums the slots in two halves of 32 lanes");

// The launch description (uq/core/decode_launch.hpp) is the base; gfx950 adds the byte range
// of one output row (its buffer resource).
struct ReduceKernelArgs : uq::impl::DecodeReduceLaunch {
  std::uint32_t out_row_bytes;
};

}  // namespace uq::gfx950
