// Generic Kokkos top-k block selection (spec nvfp4-index.md §5). One team per
// (head, query row). Each candidate block b < nb(row) becomes one 64-bit key,
// (order-preserving bits of its score) << 32 | (2^32 - 1 - b), so that a larger key
// means a higher score, equal scores putting the smaller block first. Pass j then
// takes the largest key below the key of pass j - 1 (a team max-reduction), which is
// exactly the j-th entry of the spec's order; k passes of nb keys, no scratch. NaN
// scores count as -inf and -0 as +0 (so they tie). Passes that find nothing write -1.
#pragma once

#include "uq/error.hpp"
#include "uq/impl/score_rows.hpp"
#include "uq/impl/status_counters.hpp"
#include "uq/impl/team_policy.hpp"
#include "uq/nvfp4.hpp"
#include "uq/types.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace uq {
namespace impl {

// Unsigned bits that order like the float (NaN treated as -inf, -0 as +0); never 0,
// so that a key of 0 can mean "no candidate".
KOKKOS_INLINE_FUNCTION std::uint32_t score_order_bits(float x) {
  if (codec::is_nan(x)) x = -codec::infinity();
  if (x == 0.0f) x = 0.0f;
  const std::uint32_t u = codec::float_bits(x);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

KOKKOS_INLINE_FUNCTION std::uint64_t selection_key(float score, std::int64_t block) {
  return (static_cast<std::uint64_t>(score_order_bits(score)) << 32) |
         (0xffffffffull - static_cast<std::uint64_t>(block));
}

template <class ExecSpace, class ScoreView, class LenView, class OutView, class CountView>
struct SelectBlocksGeneric {
  using policy = TeamPolicyFor<ExecSpace>;
  using member = typename policy::member_type;

  ScoreView scores;
  LenView seq_lens;
  OutView out;
  CountView counts;
  int query_len = 1;
  std::int64_t rows = 0;  // num_reqs * query_len
  std::int64_t max_blocks = 0;  // the scorer's block-table width (<= S = scores.extent(2))
  int k = 0;

  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    const std::int64_t h = team.league_rank() / rows;
    const std::int64_t row = team.league_rank() % rows;
    const std::int64_t req = row / query_len;
    const int r = static_cast<int>(row % query_len);

    const RequestLength len = request_length_in_table(seq_lens(req), max_blocks);
    if (h == 0 && r == 0 && (len.negative || len.too_long)) {
      Kokkos::single(Kokkos::PerTeam(team), [&]() {
        count(counts, len.negative ? Counter::negative_seq_lens : Counter::long_seq_lens);
      });
    }
    const std::int64_t nb = blocks_for_tokens(visible_tokens(len.tokens, query_len, r));

    std::uint64_t bound = ~0ull;  // keys already taken are >= bound
    for (int j = 0; j < k; ++j) {
      std::uint64_t best = 0;
      if (bound != 0) {
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, nb),
            [&](std::int64_t b, std::uint64_t& m) {
              const std::uint64_t key = selection_key(scores(h, row, b), b);
              if (key < bound && key > m) m = key;
            },
            Kokkos::Max<std::uint64_t>(best));
      }
      Kokkos::single(Kokkos::PerTeam(team), [&]() {
        out(h, row, j) = best == 0 ? -1 : static_cast<std::int32_t>(0xffffffffull - (best & 0xffffffffull));
      });
      bound = best;
    }
  }

  void launch(const ExecSpace& exec, std::int64_t heads) const {
    const std::int64_t league = heads * rows;
    if (league == 0) return;
    static_assert(fits_kernel_argument<std::decay_t<decltype(*this)>>, "the functor must travel as a kernel argument");
    Kokkos::parallel_for("uq::select_blocks", policy(exec, static_cast<int>(league), Kokkos::AUTO), *this);
  }
};

}  // namespace impl
}  // namespace uq
