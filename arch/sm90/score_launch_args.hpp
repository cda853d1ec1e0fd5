// Host side of the sm90 scorer's launcher: checks a launch description and turns it into the
// kernel's argument struct (plain C++, so that the checks are testable without a GPU).
#pragma once

#include "sm90/launch_score.hpp"
#include "sm90/score_args.hpp"
#include "uq/error.hpp"

#include <cstdint>
#include <limits>
#include <string>

namespace uq::sm90 {

static_assert(scorer::kCounterBadBlockIds == static_cast<int>(uq::Counter::bad_block_ids) &&
                  scorer::kCounterNegativeSeqLens == static_cast<int>(uq::Counter::negative_seq_lens) &&
                  scorer::kCounterLongSeqLens == static_cast<int>(uq::Counter::long_seq_lens),
              "score_args.hpp counter indices must match uq::Counter");

// CTAs of the scorer's 1-D grid (0: nothing to launch).
inline std::int64_t score_grid_blocks(const ScoreLaunch& l) {
  return static_cast<std::int64_t>(l.num_reqs > 0 ? l.num_reqs : 0) * score_spans_per_req(l.max_blocks, l.knobs);
}

inline ScoreKernelArgs make_score_kernel_args(const ScoreLaunch& l) {
  constexpr const char* fn = "uq::sm90::launch_score";
  auto require = [&](bool ok, const char* arg, const std::string& expected, const std::string& got) {
    if (!ok) throw uq::Error(fn, arg, expected, got);
  };
  auto str = [](std::int64_t v) { return std::to_string(v); };
  require(l.num_reqs >= 0, "num_reqs", ">= 0", str(l.num_reqs));
  require(l.heads == 1 || l.heads == 2 || l.heads == 4, "heads", "1, 2 or 4", str(l.heads));
  require(l.query_len >= 1, "query_len", ">= 1", str(l.query_len));
  require(static_cast<std::int64_t>(l.heads) * l.query_len <= scorer::kMaxColumns, "query_len",
          "heads * query_len <= 32 (heads = " + str(l.heads) + ")", str(l.query_len));
  require(l.max_blocks >= 0, "max_blocks", ">= 0", str(l.max_blocks));
  require(l.init_blocks >= 0, "init_blocks", ">= 0", str(l.init_blocks));
  require(l.local_blocks >= 0, "local_blocks", ">= 0", str(l.local_blocks));
  require(l.num_blocks >= 0, "num_blocks", ">= 0", str(l.num_blocks));
  require(l.knobs.span >= 1, "knobs.span", ">= 1", str(l.knobs.span));
  require(score_grid_blocks(l) <= std::numeric_limits<std::int32_t>::max(), "num_reqs * ceil(max_blocks / span)",
          "<= 2^31 - 1", str(score_grid_blocks(l)));
  require(l.q_stride_row >= 0 && l.q_stride_head >= 0 && l.q_stride_dim >= 0, "q strides", "non-negative",
          str(l.q_stride_row) + ", " + str(l.q_stride_head) + ", " + str(l.q_stride_dim));
  require(l.scores_stride_head >= 0 && l.scores_stride_row >= 0 && l.scores_stride_block >= 0, "scores strides",
          "non-negative",
          str(l.scores_stride_head) + ", " + str(l.scores_stride_row) + ", " + str(l.scores_stride_block));
  require(l.table_stride_req >= 0 && l.table_stride_block >= 0, "block_tables strides", "non-negative",
          str(l.table_stride_req) + ", " + str(l.table_stride_block));
  require(l.seq_lens_stride >= 0, "seq_lens stride", ">= 0", str(l.seq_lens_stride));
  require(reinterpret_cast<std::uintptr_t>(l.dequant_table) % 4 == 0, "dequant_table", "a 4-byte aligned table",
          "address % 4 = " + str(static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(l.dequant_table) % 4)));
  const bool work = score_grid_blocks(l) > 0;
  require(!work || (l.scores && l.q && l.block_tables && l.seq_lens && l.dequant_table && l.counters), "pointers",
          "non-null scores, q, block_tables, seq_lens, dequant_table and counters", "a null pointer");

  ScoreKernelArgs a{};
  a.scores = l.scores;
  a.s_head = l.scores_stride_head;
  a.s_row = l.scores_stride_row;
  a.s_block = l.scores_stride_block;
  a.counters = l.counters;
  a.q = l.q;
  a.q_row = l.q_stride_row;
  a.q_head = l.q_stride_head;
  a.q_dim = l.q_stride_dim;
  a.cache = l.index_cache;
  a.num_blocks = l.index_cache ? l.num_blocks : 0;  // no cache: every needed block id is bad
  a.table = l.dequant_table;
  a.block_tables = l.block_tables;
  a.t_req = l.table_stride_req;
  a.t_block = l.table_stride_block;
  a.seq_lens = l.seq_lens;
  a.l_stride = l.seq_lens_stride;
  a.query_len = l.query_len;
  a.heads = l.heads;
  a.max_blocks = l.max_blocks;
  a.init_blocks = l.init_blocks;
  a.local_blocks = l.local_blocks;
  a.span = l.knobs.span;
  a.spans_per_req = static_cast<int>(score_spans_per_req(l.max_blocks, l.knobs));
  return a;
}

// Check and launch in one (tests, benchmarks; the dispatch keeps the arguments it checked).
inline void launch_score(const ScoreLaunch& l) { launch_score(l, make_score_kernel_args(l)); }

}  // namespace uq::sm90
