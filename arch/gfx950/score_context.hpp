// Shared pieces of the gfx950 NVFP4 index scorer (score_kernel.hpp, score_page.hpp): the
// column layout of a chunk, what a lane knows about its workgroup, and the rules that turn a
// block's computed maximum into its stored score.
#pragma once

#include "gfx950/isa.hpp"
#include "gfx950/score_args.hpp"
#include "uq/core/nvfp4_rules.hpp"

// Full unrolling of constant-trip loops (the tile and column-group arrays stay in registers).
#define UQ_GFX950_SCORE_UNROLL _Pragma("GCC unroll 16")

namespace uq::gfx950 {
namespace score_detail {

using namespace scorer;

template <int R>
struct Columns {
  static_assert(R == 1 || R == 2 || R == 4 || R == 8 || R == 16 || R == 32, "R: 1 .. 32, a power of two");
  static constexpr int kRequestsPerGroup = R < 16 ? 16 / R : 1;  // a 16-column MFMA group holds these
  static constexpr int kGroupsPerRequest = R > 16 ? R / 16 : 1;  // ... or a request spans these
  static constexpr int kRows = chunk_max(R) * R;                  // Q rows in LDS
};

// Everything a lane knows about its workgroup, its chunk and its own request.
struct Context {
  const ScoreKernelArgs* a;
  std::uint32_t tx, lane, wave, col, kl;
  std::int32_t req0, nr;   // the chunk's first request and its number of requests
  std::int32_t len, nb;    // this lane's request: clamped length and its blocks (0 past nr)
  bool per_wave;
  std::uint32_t q_lds, table_lds, lengths_lds, rows_lds;
  buffer_rsrc scores, tables;
};

UQ_DEVICE inline float neg_inf() { return -__builtin_inff(); }

// The NaN-ignoring maximum of the spec's decisions: a NaN dot never replaces the running
// maximum (a block whose visible dots are all NaN stays -inf).
UQ_DEVICE inline float max_ignoring_nan(float run, float x) { return x > run ? x : run; }

// Stored score of block b for query row r of a request of clamped length L (spec §4, the
// core's rules in 32-bit arithmetic): -inf past the row's visible blocks, then init (wins over
// local), local, else raw.
UQ_DEVICE inline float block_value(float raw, std::int32_t L, std::int32_t QL, std::int32_t r, std::int32_t b,
                                   std::int32_t init, std::int32_t local) {
  using namespace uq::impl;
  const std::int32_t nb = blocks_for_tokens_of<std::int32_t>(visible_tokens_of<std::int32_t>(L, QL, r));
  switch (block_kind_of<std::int32_t>(b, nb, init, local)) {
    case BlockKind::Invisible: return neg_inf();
    case BlockKind::Init: return kInitScore;
    case BlockKind::Local: return kLocalScore;
    default: return raw;
  }
}

// Score v of row i of the chunk (request i / R, column i % R) at unit position jpos: to the
// scores array (element offset `at`), or to the LDS row buffer.
template <bool Buffered>
UQ_DEVICE inline void put(const Context& c, std::uint32_t i, std::int32_t jpos, float v, std::uint32_t at) {
  if constexpr (Buffered)
    lds_store(c.rows_lds + 4u * (i * kRowBufferStride + static_cast<std::uint32_t>(jpos)), bit_cast<std::uint32_t>(v));
  else
    buffer_store_b32(bit_cast<std::uint32_t>(v), c.scores, 4u * at);
}

UQ_DEVICE inline std::uint32_t score_offset(const ScoreKernelArgs& a, std::uint32_t head, std::uint32_t row,
                                            std::int32_t b) {
  return head * a.scores_stride_head + row * a.scores_stride_row + static_cast<std::uint32_t>(b) * a.scores_stride_block;
}

}  // namespace score_detail
}  // namespace uq::gfx950
