// What the sm90 NVFP4 index scorer kernel receives, and its shared-memory layout. The host
// fills ScoreKernelArgs from a launch description (score_launch_args.hpp); the kernel only reads it.
#pragma once

#include "sm90/score_knobs.hpp"
#include "uq/core/nvfp4_format.hpp"

#include <cstdint>

namespace uq::sm90 {

namespace scorer {
// The format (spec nvfp4-index.md §1-§2).
// From the Kokkos-free core (uq/core/nvfp4_format.hpp).
constexpr int kDim = uq::nvfp4::kHeadDim;
using uq::nvfp4::kBlockTokens;
using uq::nvfp4::kCodeBytesPerToken;
using uq::nvfp4::kPageCodes;  // 8192: codes first
using uq::nvfp4::kPageBytes;  // 9216: then 8 scale bytes per token
constexpr int kFormatTableBytes = 256 * 8;                     // uq::nvfp4 table: 8 magnitude bytes per scale byte
constexpr int kMaxColumns = 32;                                // H * QL
constexpr int kColumnsPerTile = kColumnsPerTileForKnobs;        // wgmma n per column tile

// Shared memory, in this order (every part 16-byte aligned):
//   rows     the derived table (score_convert.cuh): 256 scale bytes x kRowCopies copies x 8
//            bytes, copy c of row s at (4 s + c) x 8, lane t % 4 reading copy t % 4 so that
//            random rows collide in fewer banks;
//   query    the wgmma B operand: 8 k-steps x NT column tiles x 256 bytes (score_kernel.cuh);
//   ring     kStages pages, each in its global layout, filled by bulk copies;
//   reduce   two buffers (page parity) of 32 partial maxima x kReduceStride floats;
//   barriers one mbarrier per stage, then the block index each stage holds (relative to the
//            span) and, for the byte-copy variant, its page id.
constexpr int kRowCopies = 4;
constexpr int kRowsBytes = 256 * kRowCopies * 8;  // 8192
constexpr int kQueryStepBytes = 256;              // per k-step and column tile: 2 core matrices of 8 x 16 B
constexpr int kStageBytes = kPageBytes;
constexpr int kReduceStride = kMaxColumns + 1;  // floats per partial row (the +1 spreads the banks)
constexpr int kReduceBytes = 32 * kReduceStride * 4;
// (Variable templates, not functions: device code may use constexpr variables.)
template <int NT> constexpr int kQueryBytes = 8 * NT * kQueryStepBytes;
constexpr int kQueryOffset = kRowsBytes;
template <int NT> constexpr int kRingOffset = kQueryOffset + kQueryBytes<NT>;
template <int NT> constexpr int kReduceOffset = kRingOffset<NT> + kStages * kStageBytes;
template <int NT> constexpr int kBarrierOffset = kReduceOffset<NT> + 2 * kReduceBytes;
template <int NT> constexpr int kSmemBytes = kBarrierOffset<NT> + kStages * 8 + 2 * kStages * 4;
static_assert((kSmemBytes<4> + 1024) * kCtasPerSm <= 233472, "kCtasPerSm CTAs must fit an SM's shared memory");
// rows and query are static shared arrays of the kernel (their addresses are then constants
// of the code: no register holds them and the wgmma descriptors are immediates); the rest,
// from the ring on, is the dynamic shared memory the launch asks for.
template <int NT> constexpr int kStaticBytes = kRingOffset<NT>;
template <int NT> constexpr int kDynamicBytes = kSmemBytes<NT> - kStaticBytes<NT>;

// Status counter indices (uq::Counter in src/uq/error.hpp; score_launch_args.hpp static_asserts).
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
  int span;           // blocks per CTA (>= 1)
  int spans_per_req;  // CTAs per request
};

}  // namespace uq::sm90
