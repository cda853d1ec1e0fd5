// One page of the gfx950 NVFP4 index scorer (score_kernel.hpp): its tiles dequantised and
// multiplied with the query columns of every column group holding its requests, each
// column's maximum over the page's tokens, and the stored scores.
#pragma once

#include "gfx950/isa.hpp"
#include "gfx950/score_args.hpp"
#include "gfx950/score_context.hpp"
#include "gfx950/score_dequant.hpp"

namespace uq::gfx950 {
namespace score_detail {

// The page is scored for the column groups holding its requests, one pass per group
// (usually one), each dequantising tile t right before its MFMAs, so that only one tile's
// fragment (8 dwords) is live rather than the page's 64. The first pass takes the page's
// loads from registers and loads tile t of the next page into the registers tile t frees.
// A further pass (requests of several column groups share the page) reads each tile again,
// from the caches, right before it is needed.
struct NextPage {
  buffer_rsrc rsrc;  // 0 bytes when there is no next page
};

// The first pass's tiles: the page's loads, replaced by the next page's on the way.
struct StreamedTiles {
  PageTiles* tiles;
  const NextPage* next;
  std::uint32_t lane;  // the lane id, passed through a cross-lane move (score_position)
  UQ_DEVICE i32x8 fragment(int t, const Context& c) const {
    const i32x8 frag = dequant_tile(tiles->tile[t], c.table_lds, lane);
    tiles->tile[t] = load_tile(next->rsrc, t, lane);
    return frag;
  }
};
// A further pass's tiles: read again one at a time.
struct ReloadedTiles {
  buffer_rsrc page;
  std::uint32_t lane;  // as above
  UQ_DEVICE i32x8 fragment(int t, const Context& c) const {
    return dequant_tile(load_tile(page, t, lane), c.table_lds, lane);
  }
};

// Per column group g: the maximum over the page's tokens of the column's dots, only tokens
// 16 t + e < lim[g] of this lane counted (lim = 128 when the row sees the whole block), in
// every lane of the column. (A compile-time "unmasked" variant would save the compares, but
// clang then hoists the dequantisation of all 8 tiles, common to both variants, above the
// branch: 96 more live registers.)
template <int NG, class Tiles>
UQ_DEVICE inline void page_maxima(const Context& c, const Tiles& tiles, const i32x8 (&qf)[NG],
                                  const std::int32_t (&lim)[NG], float (&run)[NG]) {
  const f32x4 zero = {0.0f, 0.0f, 0.0f, 0.0f};
  f32x4 acc[NG];
  UQ_GFX950_SCORE_UNROLL
  for (int g = 0; g < NG; ++g) {
    run[g] = neg_inf();
    acc[g] = zero;
  }
  // Tile t's MFMAs are issued before tile t - 1's results are folded (latency hiding); the
  // scheduling barriers keep each tile's loads and dequantisation in its own step.
  UQ_GFX950_SCORE_UNROLL
  for (int t = 0; t <= kTiles; ++t) {
    f32x4 fresh[NG];
    if (t < kTiles) {
      const i32x8 frag = tiles.fragment(t, c);
      UQ_GFX950_SCORE_UNROLL
      for (int g = 0; g < NG; ++g) fresh[g] = mfma_f32_16x16x128_f8f6f4<kFp8, kFp8>(frag, qf[g], zero);
    }
    if (t > 0) {
      UQ_GFX950_SCORE_UNROLL
      for (int g = 0; g < NG; ++g) {
        // (the tile's offset subtracted from the limit, not added to e: constants 16 (t - 1) + e
        // above 64 are no inline operands, and clang kept 15 of them in SGPRs)
        const std::int32_t lim_t = lim[g] - 16 * (t - 1);
        UQ_GFX950_SCORE_UNROLL
        for (int e = 0; e < 4; ++e) {
          // element e of lane (col, kl): token 16 (t - 1) + 4 kl + e of column col
          const bool keep = e < lim_t;
          run[g] = max_ignoring_nan(run[g], keep ? acc[g][e] : neg_inf());
        }
      }
    }
    if (t < kTiles) {
      UQ_GFX950_SCORE_UNROLL
      for (int g = 0; g < NG; ++g) acc[g] = fresh[g];
    }
    sched_barrier<0>();
  }
  UQ_GFX950_SCORE_UNROLL
  for (int g = 0; g < NG; ++g) {
    run[g] = max_ignoring_nan(run[g], shfl_xor<16>(run[g]));
    run[g] = max_ignoring_nan(run[g], shfl_xor<32>(run[g]));
  }
}

// Scores of the column groups first_cg .. first_cg + NG - 1 against the page in `tiles`,
// stored for the columns whose request holds the page (`holders`, bit = request within the
// chunk).
template <int R, bool Buffered, int NG, class Tiles>
UQ_DEVICE inline void score_groups(const Context& c, const Tiles& tiles, std::uint32_t first_cg, std::uint64_t holders,
                                   bool masked, std::int32_t b, std::int32_t jpos) {
  const ScoreKernelArgs& a = *c.a;
  i32x8 qf[NG];
  std::int32_t lim[NG];
  UQ_GFX950_SCORE_UNROLL
  for (int g = 0; g < NG; ++g) {
    const std::uint32_t i = (first_cg + static_cast<std::uint32_t>(g)) * 16u + c.col;
    qf[g] = q_operand(c.q_lds, i, c.kl);
    const std::int32_t len = lds_load<std::int32_t>(c.lengths_lds + 4u * (i / R));
    const std::int32_t r = static_cast<std::int32_t>((i % R) >> a.heads_log2);
    // tokens 128 b + 4 kl + (16 t + e) visible to row r: 16 t + e < lim
    lim[g] = len - a.query_len + r + 1 - b * kBlockTokens - 4 * static_cast<std::int32_t>(c.kl);
  }
  float mx[NG];
  if (!masked) {
    UQ_GFX950_SCORE_UNROLL
    for (int g = 0; g < NG; ++g) lim[g] = kBlockTokens;
  }
  page_maxima<NG>(c, tiles, qf, lim, mx);
  UQ_GFX950_SCORE_UNROLL
  for (int g = 0; g < NG; ++g) {
    const std::uint32_t i = (first_cg + static_cast<std::uint32_t>(g)) * 16u + c.col;
    const std::uint32_t req = i / R, j = i % R;
    const std::int32_t r = static_cast<std::int32_t>(j >> a.heads_log2);
    if (c.kl == 0 && ((holders >> req) & 1u) != 0 && r < a.query_len) {
      const std::int32_t len = lds_load<std::int32_t>(c.lengths_lds + 4u * req);
      const float v = block_value(mx[g], len, a.query_len, r, b, a.init_blocks, a.local_blocks);
      const std::uint32_t head = j & ((1u << a.heads_log2) - 1u);
      const std::uint32_t row = (static_cast<std::uint32_t>(c.req0) + req) * static_cast<std::uint32_t>(a.query_len) +
                                static_cast<std::uint32_t>(r);
      put<Buffered>(c, i, jpos, v, score_offset(a, head, row, b));
    }
  }
}

// The column groups of `left` (a subset of the page's requests): the first group's first
// column group and the requests it covers.
template <int R>
UQ_DEVICE inline std::uint64_t group_of(std::uint64_t left, std::uint32_t& first_cg) {
  using Col = Columns<R>;
  const std::uint32_t lead = static_cast<std::uint32_t>(__builtin_ctzll(left));
  if constexpr (Col::kGroupsPerRequest == 1) {
    const std::uint32_t cg = lead / Col::kRequestsPerGroup;
    first_cg = cg;
    return ((1ull << Col::kRequestsPerGroup) - 1ull) << (cg * Col::kRequestsPerGroup);
  } else {
    first_cg = lead * Col::kGroupsPerRequest;
    return 1ull << lead;
  }
}

// Every column group holding requests of `holders` (the page's requests) against the page.
template <int R, bool Buffered>
UQ_DEVICE inline void score_page(const Context& c, PageTiles& tiles, const buffer_rsrc& page, const NextPage& next,
                                 std::uint32_t lane, std::uint64_t holders, std::uint64_t mask_needed, std::int32_t b,
                                 std::int32_t jpos) {
  constexpr int NG = Columns<R>::kGroupsPerRequest;
  std::uint32_t cg = 0;
  std::uint64_t bits = group_of<R>(holders, cg);
  score_groups<R, Buffered, NG>(c, StreamedTiles{&tiles, &next, lane}, cg, holders,
                                (mask_needed & holders & bits) != 0, b, jpos);
  for (std::uint64_t left = holders & ~bits; left != 0; left &= ~bits) {
    bits = group_of<R>(left, cg);
    score_groups<R, Buffered, NG>(c, ReloadedTiles{page, shfl(c.lane, c.lane)}, cg, holders,
                                  (mask_needed & holders & bits) != 0, b, jpos);
  }
}

}  // namespace score_detail
}  // namespace uq::gfx950
