// The launch plan of the gfx950 kernels for one shape, as the library would choose it, printed
// as one JSON object for perf/gfx950_model.py (the performance model). It calls the
// library's own rules (uq::choose_partitions, the launchers' grids, choose_score_knobs), so the
// model never restates them. (The scorer's part is its own translation unit: its launch header
// and the decoder's both define a kQVectorLoads in uq::gfx950.)
//
//   gfx950_plan decode <num_seqs> <seq_len> <qg> <num_kv_heads> <block_size> [partitions | gfx950]
//                      (default: the spec's choice, uq::choose_partitions; a number forces P;
//                      gfx950: the gfx950 path's rule, arch/gfx950/partition_rule.hpp, on 256 CUs)
//   gfx950_plan score <num_reqs> <max_blocks> <query_len> <heads> <compute_units>
#include "gfx950/decode_launch_args.hpp"
#include "gfx950/partition_rule.hpp"
#include "uq/partitions.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

int plan_score(char** argv);  // gfx950_plan_score.cpp

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: gfx950_plan decode <num_seqs> <seq_len> <qg> <num_kv_heads> <block_size> [partitions | gfx950]\n"
               "       gfx950_plan score <num_reqs> <max_blocks> <query_len> <heads> <compute_units>\n");
  return 2;
}

long long arg(char** argv, int i) { return std::atoll(argv[i]); }

int decode(int argc, char** argv) {
  const int num_seqs = static_cast<int>(arg(argv, 2));
  const long long seq_len = arg(argv, 3);
  const int qg = static_cast<int>(arg(argv, 4)), kv_heads = static_cast<int>(arg(argv, 5));
  const int block_size = static_cast<int>(arg(argv, 6));
  // The block table is as wide as the sequence needs (the plan sizes for its width).
  const long long max_blocks = (seq_len + block_size - 1) / block_size;
  const bool rule = argc > 7 && std::string(argv[7]) == "gfx950";
  const int forced = argc > 7 && !rule ? static_cast<int>(arg(argv, 7)) : 0;  // a what-if P (0: the library's choice)
  uq::PartitionChoice c = uq::choose_partitions(num_seqs, max_blocks, block_size, forced);
  if (rule) {
    constexpr int kMi355xCus = 256;  // the model's device (perf/gfx950/hardware.py)
    // capped at the spec's P, as DecodePlan does (its workspace is sized by the spec's choice)
    const uq::gfx950::PartitionRuleChoice g = uq::gfx950::gfx950_partition_rule(
        num_seqs, kv_heads, max_blocks, block_size, kMi355xCus, uq::gfx950::kDecodeWorkgroupsPerCu, c.partitions);
    c.partitions = g.partitions;
    c.tile_groups_per_part = g.tgpp;
  }
  uq::gfx950::DecodePartitionsLaunch p;
  p.num_seqs = num_seqs;
  p.num_kv_heads = kv_heads;
  p.qg = qg;
  p.partitions = c.partitions;
  p.tgpp = c.tile_groups_per_part;
  uq::gfx950::DecodeReduceLaunch r;
  r.num_seqs = num_seqs;
  r.num_kv_heads = kv_heads;
  r.qg = qg;
  r.partitions = c.partitions;
  const uq::gfx950::Grid3 g = uq::gfx950::decode_partitions_grid(p);
  const uq::gfx950::Grid3 gr = uq::gfx950::decode_reduce_grid(r);
  std::printf(
      "{\"partitions\": %d, \"tgpp\": %d, \"max_blocks_per_seq\": %lld, \"grid\": [%u, %u, %u], "
      "\"reduce_grid\": [%u, %u, %u], \"tile_tokens\": %u, \"tile_group_tokens\": %u, \"slot_bytes\": %u, "
      "\"head_dim\": %u, \"reduce_chunk\": %u, \"reduce_slots\": %u}\n",
      c.partitions, c.tile_groups_per_part, max_blocks, g.x, g.y, g.z, gr.x, gr.y, gr.z, uq::gfx950::kTileTokens,
      uq::gfx950::kTileGroupTokens, uq::gfx950::kSlotContent, uq::gfx950::kHeadDim, uq::gfx950::kReduceChunk,
      uq::gfx950::kReduceSlots);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if ((argc == 7 || argc == 8) && std::string(argv[1]) == "decode") return decode(argc, argv);
  if (argc == 7 && std::string(argv[1]) == "score") return plan_score(argv);
  return usage();
}
