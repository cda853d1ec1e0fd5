// What the sm90 UltraQuant decode kernels receive, and the constants of their shared-memory
// layouts. The host fills these structs from a launch description (decode.cu, reduce.cu);
// the kernels only read them.
#pragma once

#include <cstdint>

// Small constexpr helpers are called from host and device code.
#if defined(__CUDACC__)
#define UQ_SM90_HOST_DEVICE __host__ __device__
#else
#define UQ_SM90_HOST_DEVICE
#endif

namespace uq::sm90 {

// ---------------------------------------------------------------- problem constants
constexpr int kHeadDim = 256;
constexpr int kTileTokens = 16;        // tokens per MMA tile (the softmax step)
constexpr int kTileGroupTokens = 256;  // tokens per tile-group
constexpr int kTilesPerGroup = kTileGroupTokens / kTileTokens;

// Slot bytes of one (token, KV head) (spec ultraquant.md §2).
constexpr int kSlotKCodes = 0;
constexpr int kSlotKScales = 128;
constexpr int kSlotVCodes = 136;
constexpr int kSlotVScales = 264;
constexpr int kSlotContent = 272;

// Indices of the status counters (uq::Counter in src/uq/error.hpp; decode.cu static_asserts
// that they agree).
constexpr int kCounterBadBlockIds = 0;
constexpr int kCounterNegativeSeqLens = 1;
constexpr int kCounterLongSeqLens = 2;

// ---------------------------------------------------------------- partition kernel layout
constexpr int kWarps = 4;  // warps per block; warp w takes tiles w, w + 4, ... of the partition
constexpr int kThreads = 32 * kWarps;

// A token's row in a shared-memory tile: the slot's 272 bytes reordered so that the V codes
// start 16-byte aligned (ldmatrix rows) and the two scale words sit together. 272 = 17 x 16,
// so every row, and every 16-byte group of codes in it, is 16-byte aligned; 68 words per row
// puts the 8 rows an ldmatrix phase reads in 8 different 4-bank groups.
constexpr int kRowKCodes = 0;     // 128 bytes: K codes, group g at 16 g
constexpr int kRowVCodes = 128;   // 128 bytes: V codes, group g at 128 + 16 g
constexpr int kRowKScales = 256;  // 8 bytes
constexpr int kRowVScales = 264;  // 8 bytes
constexpr int kRowBytes = 272;
constexpr int kTileBytes = kTileTokens * kRowBytes;  // 4352

// Tiles in flight per warp (a cp.async pipeline: the next tile loads while one is computed).
constexpr int kStages = 2;
constexpr int kTileRegionBytes = kWarps * kStages * kTileBytes;  // 34816

// Q as the QK MMA's A operand: per query row (QG rows, zero-padded to 8 or 16), per scale
// group g and lane quad t, 16 bytes of fp16 holding q8 of dims 32g + 8t + {0, 2, 4, 6, 1, 3,
// 5, 7} (the order in which a lane's K word is split into MMA k-slots). Rows are padded by
// 64 bytes so that two rows read in one LDS.128 phase use different banks.
constexpr int kQRowBytes = kHeadDim * 2 + 64;  // 576
UQ_SM90_HOST_DEVICE constexpr int q_rows(int qg) { return qg <= 8 ? 8 : 16; }

// Epilogue: per-warp m and l of every row, then the two fp32 sums of the warps' outputs
// (warps 0 + 2 and 1 + 3), rows padded to 260 floats, placed over the tile region.
constexpr int kMergeRowFloats = kHeadDim + 4;
constexpr int kStatsBytes = (2 * kWarps * 16 + 3 * 16) * 4;  // m[4][16], l[4][16]; per row M, l, 1/l

UQ_SM90_HOST_DEVICE constexpr int decode_smem_bytes(int qg) { return kTileRegionBytes + q_rows(qg) * kQRowBytes + kStatsBytes; }
static_assert(2 * 16 * kMergeRowFloats * 4 <= kTileRegionBytes, "the merge buffers fit over the tiles");

// Flags of DecodeKernelArgs::flags.
constexpr std::uint32_t kQRotated = 1u;     // q holds WHT(q): no in-kernel rotation
constexpr std::uint32_t kAsyncLoads = 2u;   // every slot is 16-byte aligned: cp.async path
constexpr std::uint32_t kWordLoads = 4u;    // (sync path) every slot is 4-byte aligned

// Block i of the grid is (b, h, p) with i = (b * num_kv_heads + h) * partitions + p; it writes
// the QG partial rows i * QG + r of partial_out (bf16, 256 per row), partial_l and partial_m.
struct DecodeKernelArgs {
  std::uint16_t* partial_out;
  float* partial_l;
  float* partial_m;
  unsigned long long* counters;

  const std::uint16_t* q;  // bf16; element (b, hq, d) at b*q_stride_seq + hq*q_stride_head + d*q_stride_dim
  std::int64_t q_stride_seq;
  std::int64_t q_stride_head;
  std::int64_t q_stride_dim;

  const std::uint8_t* cache;  // [num_blocks][block_size][num_kv_heads][slot_bytes]
  std::int64_t num_blocks;
  std::int64_t block_stride;  // bytes between blocks
  std::int64_t pos_stride;    // bytes between positions = num_kv_heads * slot_bytes
  std::int32_t slot_bytes;
  std::int32_t block_size;

  const std::int32_t* block_tables;  // entry (b, j) at b*table_stride_seq + j*table_stride_block
  std::int64_t table_stride_seq;
  std::int64_t table_stride_block;
  const std::int32_t* seq_lens;  // entry b at b*seq_lens_stride
  std::int64_t seq_lens_stride;

  std::int32_t max_blocks_per_seq;
  std::int32_t num_kv_heads;
  std::int32_t partitions;  // P
  std::int32_t tgpp;        // tile-groups per partition
  float score_scale;        // softmax scale x 2^14 (the K operand holds FP4 x 2^-14)
  std::uint32_t flags;
};

// ---------------------------------------------------------------- the reducer
constexpr int kReduceThreads = 256;
constexpr int kReduceChunk = 32;                       // dims per block
constexpr int kReduceChunks = kHeadDim / kReduceChunk;  // 8
constexpr int kReduceDimLanes = kReduceChunk / 8;      // 4 threads x 8 dims (16-byte loads)
constexpr int kReduceGroups = kReduceThreads / kReduceDimLanes;  // 64 partition groups
constexpr int kReduceBatch = 8;  // partials loaded per thread before any is used

struct ReduceKernelArgs {
  const std::uint16_t* partial_out;
  const float* partial_l;
  const float* partial_m;
  std::uint16_t* out;  // bf16; element (b, hq, d) at b*out_stride_seq + hq*out_stride_head + d*out_stride_dim
  std::int64_t out_stride_seq;
  std::int64_t out_stride_head;
  std::int64_t out_stride_dim;
  std::int32_t num_kv_heads;
  std::int32_t qg;
  std::int32_t partitions;
};

UQ_SM90_HOST_DEVICE constexpr int reduce_smem_bytes(int partitions) {
  return 2 * partitions * 4 + (kReduceThreads / 32) * kReduceChunk * 4 + 64;  // m/w, l, warp sums, scratch
}

}  // namespace uq::sm90
