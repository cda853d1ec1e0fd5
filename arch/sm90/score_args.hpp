// What the sm90 NVFP4 index scorer kernel receives, and its shared-memory layout. The host
// fills ScoreKernelArgs from a launch description (score_checks.hpp); the kernel only reads it.
#pragma once

#include "sm90/score_knobs.hpp"

#include <cstdint>

namespace uq::sm90 {

namespace scorer {
// The format (spec nvfp4-index.md §1-§2).
constexpr int kDim = 128;
constexpr int kBlockTokens = 128;
constexpr int kCodeBytesPerToken = 64;
constexpr int kPageCodes = kBlockTokens * kCodeBytesPerToken;  // 8192: codes first
constexpr int kPageBytes = kPageCodes + kBlockTokens * 8;     // 9216: then 8 scale bytes per token
constexpr int kTableBytes = 256 * 8;                           // 8 magnitude bytes per scale byte
constexpr int kMaxColumns = 32;                                // H * QL
constexpr int kColumnsPerTile = kColumnsPerTileForKnobs;        // MMA n

// Shared memory: the table, then per warp a ring of kStages pages (each in its global layout).
constexpr int kStageBytes = kPageBytes;
constexpr int kWarpRingBytes = kStages * kStageBytes;
constexpr int kSmemBytes = kTableBytes + kWarps * kWarpRingBytes;  // 112640

// Status counter indices (uq::Counter in src/uq/error.hpp; score_checks.hpp static_asserts).
constexpr int kCounterBadBlockIds = 0;
constexpr int kCounterNegativeSeqLens = 1;
constexpr int kCounterLongSeqLens = 2;
}  // namespace scorer

struct ScoreKernelArgs {
  float* scores;
  std::int64_t s_head, s_row, s_block;
  unsigned long long* counters;
  const std::uint8_t* q;
  std::int64_t q_row, q_head, q_dim;
  const std::uint8_t* cache;
  std::int64_t num_blocks;
  const std::uint8_t* table;
  const std::int32_t* block_tables;
  std::int64_t t_req, t_block;
  const std::int32_t* seq_lens;
  std::int64_t l_stride;
  int query_len, heads, max_blocks, init_blocks, local_blocks;
  int span;           // blocks per CTA (a multiple of kWarps)
  int spans_per_req;  // CTAs per request
};

}  // namespace uq::sm90
