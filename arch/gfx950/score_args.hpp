// What the gfx950 NVFP4 index scorer receives (both builds: the gfx950 code object and the
// emulator) and the constants of its work decomposition. Plain C++ with no isa.hpp, so that
// the host side (knob choice, launch checks) can include it too. The host fills
// ScoreKernelArgs from a launch description (score_launch_args.hpp); the kernel only reads it.
#pragma once

#include "uq/core/nvfp4_format.hpp"

#include <cstdint>

namespace uq::gfx950 {
namespace scorer {

// ---------------------------------------------------------------- the format (spec nvfp4-index.md §2)
// From the Kokkos-free core (uq/core/nvfp4_format.hpp).
constexpr int kDim = uq::nvfp4::kHeadDim;  // index head dim
using uq::nvfp4::kBlockTokens;             // tokens per block = page
using uq::nvfp4::kPageCodes;               // code bytes of a page (token t's 64 at t * 64)
using uq::nvfp4::kPageBytes;               // then 8 scale bytes per token at 8192 + t * 8
constexpr int kTableBytes = 256 * 8;       // the dequantisation table: 8 magnitude bytes per scale byte
using uq::nvfp4::kInitScore;
using uq::nvfp4::kLocalScore;

// ---------------------------------------------------------------- the work decomposition
constexpr int kWaves = 4;                  // waves per workgroup
constexpr int kThreads = 64 * kWaves;      // 256 threads
constexpr int kTileTokens = 16;            // tokens per MFMA tile (the A operand's rows)
constexpr int kTiles = kBlockTokens / kTileTokens;  // 8 tiles per page
constexpr int kMaxChunk = 64;              // requests per chunk: one lane per request
constexpr int kMaxChunkRows = 256;         // Q rows (request x column) a chunk stages in LDS
constexpr int kMaxColumns = 32;            // H * QL
constexpr int kUnitMax = 16;               // positions a buffered unit gathers in LDS
constexpr int kRowBufferStride = kUnitMax + 1;  // dwords per buffered row (odd: fewer bank conflicts)

// Columns per request: H * QL rounded up to a power of two (1 .. 32). Column j of a request
// is query row j / H, head j % H; a 16-column MFMA group holds 16 / R requests (R <= 16) or
// a request spans R / 16 groups (R = 32).
constexpr int padded_columns(int columns) {
  int r = 1;
  while (r < columns) r *= 2;
  return r;
}
// The most requests one chunk may hold for R padded columns (Q rows <= kMaxChunkRows).
constexpr int chunk_max(int padded) {
  return kMaxChunkRows / padded < kMaxChunk ? kMaxChunkRows / padded : kMaxChunk;
}

// ---------------------------------------------------------------- LDS plan (bytes)
constexpr std::uint32_t q_lds_bytes(int padded) {
  return static_cast<std::uint32_t>(chunk_max(padded) * padded * kDim);
}
constexpr std::uint32_t kLengthsLdsBytes = 4u * kMaxChunk;
constexpr std::uint32_t row_buffer_lds_bytes(int padded) {
  return static_cast<std::uint32_t>(chunk_max(padded) * padded * kRowBufferStride * 4);
}
constexpr std::uint32_t score_lds_bytes(int padded, bool buffered) {
  return q_lds_bytes(padded) + kTableBytes + kLengthsLdsBytes + (buffered ? row_buffer_lds_bytes(padded) : 0u);
}

// A buffer offset no range contains (every num_records is kept below 2^31): loads read 0,
// stores are dropped, and no memory is touched.
constexpr std::uint32_t kMaskedOffset = 0x80000000u;

// Indices of the status counters (uq::Counter in src/uq/error.hpp; the host side checks
// that they agree).
constexpr int kCounterBadBlockIds = 0;
constexpr int kCounterNegativeSeqLens = 1;
constexpr int kCounterLongSeqLens = 2;

// Flags of ScoreKernelArgs::flags.
constexpr std::uint32_t kQVectorLoads = 1u;  // q rows are dim-contiguous with 4-byte aligned 16-byte chunks

// ---------------------------------------------------------------- kernel arguments
// Workgroup w of the 1-D grid (chunks * splits) scores chunk w % chunks (requests
// chunk * (w % chunks) .. + chunk - 1) at the positions of split w / chunks. Strides are in
// elements; every byte range is below 2^31 so that 32-bit offsets and kMaskedOffset work.
struct ScoreKernelArgs {
  float* scores;  // element (h, row, b) at h*scores_stride_head + row*scores_stride_row + b*scores_stride_block
  std::uint32_t scores_stride_head, scores_stride_row, scores_stride_block;
  std::uint32_t scores_bytes;
  unsigned long long* counters;  // uq::kNumCounters device counters

  const std::uint8_t* q;  // E4M3; element (row, h, d) at row*q_stride_row + h*q_stride_head + d*q_stride_dim
  std::uint32_t q_stride_row, q_stride_head, q_stride_dim;
  std::uint32_t q_bytes;

  const std::uint8_t* cache;  // [num_blocks][9216] (page offsets are 64-bit: caches exceed 4 GiB)
  std::int32_t page_limit;    // min(num_blocks, 2^31 - 1): valid ids are 0 .. page_limit - 1
  const std::uint8_t* table;  // the 2048-byte dequantisation table (uq/nvfp4.hpp)

  const std::int32_t* block_tables;  // entry (req, b) at req*table_stride_req + b*table_stride_block
  std::uint32_t table_stride_req, table_stride_block;
  std::uint32_t tables_bytes;
  const std::int32_t* seq_lens;  // entry req at req*seq_lens_stride
  std::uint32_t seq_lens_stride;
  std::uint32_t seq_lens_bytes;

  std::int32_t num_reqs;
  std::int32_t query_len;
  std::int32_t heads_log2;  // H = 1 << heads_log2
  std::int32_t max_blocks;  // block_tables' extent(1): lengths are clamped to max_blocks * 128
  std::int32_t init_blocks;
  std::int32_t local_blocks;

  // knobs (launch_score.hpp)
  std::int32_t chunk;     // requests per chunk
  std::int32_t chunks;    // ceil(num_reqs / chunk)
  std::int32_t splits;    // workgroups per chunk
  std::int32_t per_wave;  // 1: each wave walks its own units; 0: the 4 waves share each position
  std::int32_t unit;      // consecutive positions per unit
  std::uint32_t flags;    // kQVectorLoads
};

}  // namespace scorer
}  // namespace uq::gfx950
