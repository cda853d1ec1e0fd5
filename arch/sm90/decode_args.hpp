// What the sm90 UltraQuant decode kernels receive, and the constants of their shared-memory
// layouts. The host fills these structs from a launch description (decode_launch_args.hpp); the
// kernels only read them.
#pragma once

#include "uq/core/decode_launch.hpp"
#include "uq/core/ultraquant_format.hpp"

#include <cstdint>

// Small constexpr helpers are called from host and device code.
#if defined(__CUDACC__)
#define UQ_SM90_HOST_DEVICE __host__ __device__
#else
#define UQ_SM90_HOST_DEVICE
#endif

namespace uq::sm90 {

// ---------------------------------------------------------------- problem constants
// From the Kokkos-free core (uq/core/ultraquant_format.hpp): head dim, tile-group, slot layout.
using uq::kTileGroupTokens;
using uq::ultraquant::kHeadDim;
constexpr int kSlotKCodes = uq::ultraquant::kKCodes;  // slot bytes of one (token, KV head)
constexpr int kSlotKScales = uq::ultraquant::kKScales;
constexpr int kSlotVCodes = uq::ultraquant::kVCodes;
constexpr int kSlotVScales = uq::ultraquant::kVScales;
using uq::ultraquant::kSlotContent;

// Indices of the status counters (uq::Counter in src/uq/error.hpp; decode_launch_args.hpp
// static_asserts that they agree).
constexpr int kCounterBadBlockIds = 0;
constexpr int kCounterNegativeSeqLens = 1;
constexpr int kCounterLongSeqLens = 2;
constexpr int kCounterNonfiniteInputs = 4;
constexpr int kCounterBadStartLocs = 5;

// ---------------------------------------------------------------- partition kernel layout
// One warpgroup (4 warps) per CTA: the wgmma M dimension is the 64 tokens of a tile.
constexpr int kThreads = 128;
constexpr int kTileTokens = 64;                            // tokens per tile (the softmax step)
constexpr int kTilesPerGroup = kTileGroupTokens / kTileTokens;  // 4

// A stage of the shared-memory ring holds one tile: 64 slots of 272 bytes, exactly as in the
// cache (the copy engine copies whole rows). 272 = 17 x 16, so every row and every 16-byte
// piece of it is 16-byte aligned, and 8 consecutive rows fall on 8 different 4-bank groups.
constexpr int kRowBytes = kSlotContent;
constexpr int kStageBytes = kTileTokens * kRowBytes;  // 17408

// N of the wgmmas: the query rows of a KV head, padded to 8 or 16.
UQ_SM90_HOST_DEVICE constexpr int q_rows(int qg) { return qg <= 8 ? 8 : 16; }

// Several query tokens per sequence (spec ultraquant.md §5.9, decode_queries.cuh): the QL x QG
// query rows of a sequence's KV head share each tile as the N of its wgmmas, row r = j QG + g
// (query token j, query head h QG + g), padded to a multiple of 8 and at least 16 (a plan of one
// query token at QG 6 or 8 takes the 16-row instance rather than an instance of its own); the
// launcher refuses plans whose max_query_len x QG exceeds kQueriesMaxRows (5 tokens at QG 6, 4 at
// QG 8, 2 at QG 16), which then run generic.
constexpr int kQueriesMaxRows = 32;
UQ_SM90_HOST_DEVICE constexpr int queries_n(int rows) { return rows <= 16 ? 16 : (rows + 7) / 8 * 8; }

// Commit groups of a tile's P.V wgmmas (decode_kernel.cuh): two for N = 8 (a group's V
// operands, 64 registers for all four k-steps, stay live until it completes; waiting for the
// first half before building the second frees 32 of them, which the persistent loop needs),
// one for N = 16 (there the split measured slower):
// docs/perf-log/2026-12-01-sm90-persistent-decode.md.
// The multi-token instances of N = 24 and 32 split too (their accumulators alone are 48 and 64
// registers; not measured).
UQ_SM90_HOST_DEVICE constexpr int decode_pv_split_n(int n) { return n == 16 ? 1 : 2; }
UQ_SM90_HOST_DEVICE constexpr int decode_pv_split(int qg) { return decode_pv_split_n(q_rows(qg)); }

// QK scale groups per commit group: all 8 in the one-token kernels; in the multi-token ones 4
// up to N = 24 and 2 at N = 32, so that the groups' fp32 results (batch x N / 2 registers) fit
// beside the P.V accumulators without spilling (ptxas -v). The scores are summed in group order
// either way (the same arithmetic).
UQ_SM90_HOST_DEVICE constexpr int decode_qk_batch(int n, bool queries) { return !queries ? 8 : n <= 24 ? 4 : 2; }

// Whether the tile loop holds its per-lane constants (offsets, selectors, token rows) in
// registers (ptx::keep_live) instead of letting ptxas recompute them from threadIdx.x at every
// use: only where the instance has the registers for them, N = 8 (145 of 168 registers, 160
// with them; 50.3 -> 46.7 instructions per token) and N = 24 (244 of 255; 75.6 -> 69.5), both
// faster on the H200. At N = 16 (168 with spills either way) the spills grew and the loop got
// slower; N = 32 (255 with spills) was not measured (docs/perf-log/2026-12-06-sm90-lane-constants.md).
UQ_SM90_HOST_DEVICE constexpr bool decode_keeps_lane_constants(int n) { return n == 8 || n == 24; }

// CTAs per SM of every partition-kernel instance (its launch bounds: 12 warps, <= 168
// registers) and its ring depth (4 stages: 3 tiles in flight while one is computed). (Caches
// with several KV heads or padded slots once took a 4-CTA, 128-register, 3-stage instance
// whose 16 warps hid the latency of 64 single-slot copies per tile; one tensor-map copy per
// block run replaced those copies, and 3 CTAs are faster then:
// docs/perf-log/2026-12-02-sm90-tensor-map-reducer.md.)
constexpr int kDecodeCtasPerSm = 3;
constexpr int kDecodeStages = 4;
// The multi-token instances: 3 CTAs per SM up to N = 16 (the one-token QG 16 instance's
// registers and shared memory), 2 above (their shared memory, ~80 KB, fits 2 per SM, and 2 give
// ptxas 255 registers for the wider accumulators).
UQ_SM90_HOST_DEVICE constexpr int decode_queries_ctas_per_sm(int n) { return n <= 16 ? kDecodeCtasPerSm : 2; }

// Shared memory of the partition kernel, in this order (every offset a multiple of 16):
//  ring     kDecodeStages x kStageBytes
//  q        N x 256 bytes: q8 as the QK wgmmas' B operand, K-major core matrices of 8 query
//           rows x 16 bytes: group g, half kh (dims 8t + 2j + kh at byte 4t + j), row block rb
//           at ((2g + kh) * N/8 + rb) * 128
//  p        64 x N bf16: P^T as the P.V wgmmas' B operand, same core-matrix layout with the
//           64 tokens as K (k-step s of 16 tokens, half kh, row block rb at ((2s + kh) * N/8 + rb) * 128)
//  red      4 x N floats: per query row, the tile maximum of each warp ([row][warp])
//  redl     4 x N floats: per query row, each warp's l ([row][warp])
//  meta     stages x 8 bytes (rounded up to 16): per stage, the 64-bit mask of the tile's present tokens
//  bars     stages x 8 bytes (rounded up to 16): the stages' mbarriers
//  qbad     N bytes rounded up to 16: per query row, 1 when its q holds a non-finite value
//  sync     32 bytes: (synchronous loads) the tile's first token and its 4 block ids
struct DecodeSmem {
  int ring, q, p, red, redl, meta, bars, qbad, sync, total;
};
UQ_SM90_HOST_DEVICE constexpr DecodeSmem decode_smem_layout_n(int n) {
  const int stages = kDecodeStages;
  DecodeSmem s{};
  s.ring = 0;
  s.q = s.ring + stages * kStageBytes;
  s.p = s.q + n * kHeadDim;
  s.red = s.p + kTileTokens * n * 2;
  s.redl = s.red + 4 * n * 4;
  s.meta = s.redl + 4 * n * 4;
  s.bars = s.meta + (stages * 8 + 15) / 16 * 16;  // (rounded up to keep every offset 16-aligned)
  s.qbad = s.bars + (stages * 8 + 15) / 16 * 16;
  s.sync = s.qbad + (n < 16 ? 16 : (n + 15) / 16 * 16);
  s.total = s.sync + 32;
  return s;
}
UQ_SM90_HOST_DEVICE constexpr DecodeSmem decode_smem_layout(int qg) { return decode_smem_layout_n(q_rows(qg)); }
UQ_SM90_HOST_DEVICE constexpr int decode_smem_bytes(int qg) { return decode_smem_layout(qg).total; }

// Flags of DecodeKernelArgs::flags.
constexpr std::uint32_t kQRotated = 1u;      // q holds WHT(q): no in-kernel rotation
constexpr std::uint32_t kBulkLoads = 2u;     // every slot is 16-byte aligned: copy-engine loads
constexpr std::uint32_t kWordLoads = 4u;     // (synchronous loads) every slot is 4-byte aligned
constexpr std::uint32_t kDenseRows = 8u;     // one KV head, 272-byte slots: a block's rows are contiguous
constexpr std::uint32_t kWriteOut = 16u;     // P = 1: the partition kernel writes out (and lse)
constexpr std::uint32_t kOutVector = 32u;    // out rows are dense and 8-byte aligned (P = 1)
constexpr std::uint32_t kQVector = 64u;      // q rows are dense and 16-byte aligned
// (copy-engine loads, no kDenseRows) one tensor-map copy per sub-block of a tile: its rows land
// 128-byte aligned in the ring when decode_sub_rows(block_size) is a multiple of 8 (always, for
// the block sizes 16..256 the cache checks allow)
constexpr std::uint32_t kTensorRows = 128u;

// Rows of a tile's sub-block: the tile's tokens of one block (a tile of 64 tokens spans
// 64 / block_size blocks, or lies in one).
UQ_SM90_HOST_DEVICE constexpr int decode_sub_rows(int block_size) { return block_size < kTileTokens ? block_size : kTileTokens; }

// Copy kinds, one kernel instance each (decode_kernel.cuh, decode_tile.cuh): synchronous loads
// by the whole CTA (slots not 16-byte aligned, or a tensor map the driver refused), one
// copy-engine copy per contiguous run of rows (kDenseRows), one tensor-map copy per sub-block
// (kTensorRows).
constexpr int kCopySync = 0;
constexpr int kCopyRuns = 1;
constexpr int kCopyBoxes = 2;
UQ_SM90_HOST_DEVICE constexpr int decode_copy_kind(std::uint32_t flags) {
  return !(flags & kBulkLoads) ? kCopySync : (flags & kDenseRows) ? kCopyRuns : (flags & kTensorRows) ? kCopyBoxes : kCopySync;
}

// Block i of the grid (num_seqs * num_kv_heads * ctas_per_bh blocks) is CTA r = i / (num_seqs *
// num_kv_heads) of (b, h) with i % (num_seqs * num_kv_heads) = b * num_kv_heads + h; it computes
// the partitions p = r, r + ctas_per_bh, ... < P of (b, h) at the table's full length
// (decode_grid.hpp chooses ctas_per_bh; a shorter sequence's partitions with tokens go to fewer
// of its CTAs, decode_tile.cuh). Partition p writes the QG partial rows ((b * num_kv_heads + h) * P + p) * QG + r
// of partial_out (bf16, 256 per row), partial_l and partial_m (or, with kWriteOut, out and lse).
// The launch description (uq/core/decode_launch.hpp) is the base: the kernel reads its fields
// (pointers, element strides, extents; block_stride made valid for a single block, lse only with
// kWriteOut) and this struct adds only what sm90 derives from them.
struct DecodeKernelArgs : uq::impl::DecodePartitionsLaunch {
  std::int64_t pos_stride;   // bytes between positions = num_kv_heads * slot_bytes
  std::int32_t block_shift;  // log2(block_size) (a power of two)
  std::int32_t ctas_per_bh;  // CTAs per (sequence, KV head), 1..P
  float score_scale;         // softmax scale x 2^6 (the K operand holds FP4 x 2^-6) x log2(e)
  std::uint32_t flags;
};

// The multi-token partition kernel's arguments (spec ultraquant.md §5.9, DecodeQueriesLaunch):
// the one-token kernel's, with rows of query tokens where those have sequences (q, out and lse
// rows; partial rows [T][num_kv_heads][P][QG], their l and m at partial_lm_index with bh = t x
// num_kv_heads + h, so that the reducer reads them as T one-token rows), and where a sequence's
// query tokens are.
struct DecodeQueriesKernelArgs : DecodeKernelArgs {
  const std::int32_t* query_start_loc;  // [num_seqs + 1]; nullptr: the uniform form
  std::int64_t query_start_loc_stride;
  std::int32_t query_len;         // the uniform form's tokens per sequence
  std::int32_t max_query_len;     // a longer range is malformed (spec §5.9)
  std::int32_t num_query_tokens;  // T
};

// ---------------------------------------------------------------- the workspace
// Partial output rows: [sequence, KV head][partition][query row] x 256 bf16 (uq/decode.hpp).
// Their l and m on this path: [sequence, KV head][query row][partition], so that the partitions
// of one query row, which the reducer reads together, are contiguous (with [partition][query
// row] the reducer's 8 blocks per row each touched every 32-byte sector of the KV head's l and m
// for the 1 or 2 values of its row in each: 6 x the bytes at QG 6,
// docs/perf-log/2026-12-04-sm90-reducer-layout.md).
UQ_SM90_HOST_DEVICE constexpr std::int64_t partial_lm_index(std::int64_t bh, int row, int p, int partitions, int qg) {
  return (bh * qg + row) * partitions + p;
}

// ---------------------------------------------------------------- the reducer
constexpr int kReduceThreads = 256;
constexpr int kReduceChunk = 32;                        // dims per block
constexpr int kReduceChunks = kHeadDim / kReduceChunk;  // 8
constexpr int kReduceDimLanes = kReduceChunk / 8;       // 4 threads x 8 dims (16-byte loads)
constexpr int kReduceGroups = kReduceThreads / kReduceDimLanes;  // 64 partition groups
constexpr int kReduceBatch = 8;  // partitions per thread per pass (loaded before any is used)
// Query rows (num_seqs x num_q_heads) from which the reducer runs one block per row instead of
// kReduceChunks blocks of 32 dims (reduce_kernel.cuh; the same bits either way): about two
// blocks per SM of an H100/H200 (132 SMs), so the GPU stays filled.
constexpr std::int64_t kReduceWholeRowMinRows = 256;
// Query rows from which, with up to kReduceWarpRowMaxPartitions partitions, each row is reduced
// by one warp instead of one block (its l, w and m in 4 KB of shared memory for 512): about 16
// warps per SM of an H200, where a warp's row is latency-bound by its own loads (faster for an
// engine's 256 x 24 rows of short sequences, slower for the 384 rows of 64 x 131k, so the
// block kernel below it; docs/perf-log/2026-12-02-sm90-tensor-map-reducer.md).
constexpr std::int64_t kReduceWarpRowMinRows = 2048;
constexpr int kReduceWarpRowMaxPartitions = 512;

// The reducer reads its launch description as it is (uq/core/decode_launch.hpp).
using ReduceKernelArgs = uq::impl::DecodeReduceLaunch;

}  // namespace uq::sm90
