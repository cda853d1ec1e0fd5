// The previous sm90 scorer (commit 023c211: mma.sync, cp.async rings per warp), compiled
// from a copy of that commit's arch/sm90 (build_score_harness.sh extracts it) with the uq
// namespace renamed to uq_old, so that the harness can time it beside today's.
#include "harness_problem.hpp"
#include "sm90/score.cu"  // the old copy, first on the include path

namespace harness {

void old_score(const Problem& p) {
  uq::sm90::ScoreLaunch l;  // uq is uq_old here
  l.stream = p.stream;
  l.scores = p.scores;
  l.scores_stride_head = p.s_head;
  l.scores_stride_row = p.s_row;
  l.scores_stride_block = p.s_block;
  l.counters = p.counters;
  l.q = p.q;
  l.q_stride_row = p.q_row;
  l.q_stride_head = p.q_head;
  l.q_stride_dim = p.q_dim;
  l.index_cache = p.cache;
  l.num_blocks = p.num_blocks;
  l.dequant_table = p.table;
  l.block_tables = p.block_tables;
  l.table_stride_req = p.t_req;
  l.table_stride_block = p.t_block;
  l.seq_lens = p.seq_lens;
  l.num_reqs = p.num_reqs;
  l.query_len = p.query_len;
  l.heads = p.heads;
  l.max_blocks = p.max_blocks;
  l.init_blocks = p.init_blocks;
  l.local_blocks = p.local_blocks;
  l.knobs = uq::sm90::choose_score_knobs(p.num_reqs, p.max_blocks, p.query_len, p.heads, p.sm_count);
  uq::sm90::launch_score(l);
}

}  // namespace harness
