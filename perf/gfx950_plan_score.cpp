// The scorer's part of gfx950_plan (see gfx950_plan.cpp): knobs, chunks and grid of one shape.
#include "gfx950/score_knobs.hpp"
#include "gfx950/score_launch_args.hpp"

#include <cstdio>
#include <cstdlib>

int plan_score(char** argv) {
  using namespace uq::gfx950;
  const int reqs = std::atoi(argv[2]), max_blocks = std::atoi(argv[3]);
  const int ql = std::atoi(argv[4]), heads = std::atoi(argv[5]);
  const int cus = std::atoi(argv[6]);
  const ScoreKnobs k = choose_score_knobs(reqs, max_blocks, ql, heads, cus);
  ScoreLaunch l;
  l.num_reqs = reqs;
  l.max_blocks = max_blocks;
  l.query_len = ql;
  l.heads = heads;
  l.knobs = k;
  const int padded = scorer::padded_columns(ql * heads);
  std::printf(
      "{\"chunk\": %d, \"chunks\": %d, \"splits\": %d, \"per_wave\": %s, \"unit\": %d, \"buffered\": %s, "
      "\"grid\": %u, \"padded_columns\": %d, \"waves_per_workgroup\": %d, \"page_bytes\": %d, \"block_tokens\": %d, "
      "\"tiles_per_page\": %d}\n",
      k.chunk, score_chunks(reqs, k), k.splits, k.per_wave ? "true" : "false", k.unit, k.buffered ? "true" : "false",
      score_grid(l), padded, scorer::kWaves, scorer::kPageBytes, scorer::kBlockTokens, scorer::kTiles);
  return 0;
}

