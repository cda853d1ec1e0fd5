// The launch plan of the gfx950 kernels for one shape, as the library would choose it, printed
// as one JSON object for perf/gfx950_model.py (the performance model). It calls the
// library's own rules (uq::choose_partitions, the launchers' grids, choose_score_knobs), so the
// model never restates them. (The scorer's part is its own translation unit: its launch header
// and the decoder's both define a kQVectorLoads in uq::gfx950.)
//
//   gfx950_plan decode <num_seqs> <seq_len> <qg> <num_kv_heads> <block_size> [partitions | gfx950]
//                      (default: the spec's choice, uq::choose_partitions; a number forces P;
//                      gfx950: the gfx950 path's rule, arch/gfx950/partition_rule.hpp, on 256 CUs)
//   gfx950_plan queries <num_seqs> <seq_len> <qg> <num_kv_heads> <block_size> <query_len>
//                      several query tokens a sequence (spec §5.9, the uniform form): the decode
//                      plan by the gfx950 rule (P and TGPP do not depend on query_len), and whether
//                      the gfx950 multi-token launcher takes it ("tuned") or why not ("refusal",
//                      its uq::Error: the dispatch then runs the generic kernels)
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
               "       gfx950_plan queries <num_seqs> <seq_len> <qg> <num_kv_heads> <block_size> <query_len>\n"
               "       gfx950_plan score <num_reqs> <max_blocks> <query_len> <heads> <compute_units>\n");
  return 2;
}

long long arg(char** argv, int i) { return std::atoll(argv[i]); }

// The partition choice of a shape: the spec's (a forced P when `forced` > 0), or the gfx950 rule's.
uq::PartitionChoice choose(int num_seqs, long long max_blocks, int kv_heads, int block_size, bool rule, int forced) {
  uq::PartitionChoice c = uq::choose_partitions(num_seqs, max_blocks, block_size, forced);
  if (rule) {
    constexpr int kMi355xCus = 256;  // the model's device (perf/gfx950/hardware.py)
    // capped at the spec's P, as DecodePlan does (its workspace is sized by the spec's choice)
    const uq::gfx950::PartitionRuleChoice g = uq::gfx950::gfx950_partition_rule(
        num_seqs, kv_heads, max_blocks, block_size, kMi355xCus, uq::gfx950::kDecodeWorkgroupsPerCu, c.partitions);
    c.partitions = g.partitions;
    c.tile_groups_per_part = g.tgpp;
  }
  return c;
}

// The JSON object's text (escaped for a JSON string: the error messages hold no control characters).
std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "\"";
}

int decode(int argc, char** argv, int query_len) {
  const int num_seqs = static_cast<int>(arg(argv, 2));
  const long long seq_len = arg(argv, 3);
  const int qg = static_cast<int>(arg(argv, 4)), kv_heads = static_cast<int>(arg(argv, 5));
  const int block_size = static_cast<int>(arg(argv, 6));
  // The block table is as wide as the sequence needs (the plan sizes for its width).
  const long long max_blocks = (seq_len + block_size - 1) / block_size;
  const bool queries = query_len > 0;
  const bool rule = queries || (argc > 7 && std::string(argv[7]) == "gfx950");
  const int forced = argc > 7 && !rule ? static_cast<int>(arg(argv, 7)) : 0;  // a what-if P (0: the library's choice)
  const uq::PartitionChoice c = choose(num_seqs, max_blocks, kv_heads, block_size, rule, forced);
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
  // Several query tokens: the launcher's own checks decide (a launch as a dense q, cache and
  // table of this shape would give it), and the reducer has one row per query token.
  std::string queries_fields;
  if (queries) {
    uq::gfx950::DecodeQueriesLaunch l;
    static_cast<uq::gfx950::DecodePartitionsLaunch&>(l) = p;
    l.block_size = block_size;
    l.slot_bytes = static_cast<int>(uq::gfx950::kSlotContent);
    l.max_blocks_per_seq = static_cast<int>(max_blocks);
    l.num_blocks = num_seqs * max_blocks;
    l.block_stride = static_cast<long long>(block_size) * kv_heads * l.slot_bytes;
    l.q_stride_head = uq::gfx950::kHeadDim;
    l.q_stride_seq = static_cast<long long>(kv_heads) * qg * uq::gfx950::kHeadDim;
    l.query_len = query_len;
    l.max_query_len = query_len;
    l.num_query_tokens = num_seqs * query_len;
    std::string refusal;
    try {
      uq::gfx950::make_decode_queries_kernel_args(l);
    } catch (const uq::Error& e) {
      refusal = e.what();
    }
    r.num_seqs = num_seqs * query_len;
    queries_fields = ", \"query_len\": " + std::to_string(query_len) + ", \"tuned\": " +
                     (refusal.empty() ? "true" : "false") + ", \"refusal\": " + json_string(refusal);
  }
  const uq::gfx950::Grid3 g = uq::gfx950::decode_partitions_grid(p);
  const uq::gfx950::Grid3 gr = uq::gfx950::decode_reduce_grid(r);
  std::printf(
      "{\"partitions\": %d, \"tgpp\": %d, \"max_blocks_per_seq\": %lld, \"grid\": [%u, %u, %u], "
      "\"reduce_grid\": [%u, %u, %u], \"tile_tokens\": %u, \"tile_group_tokens\": %u, \"slot_bytes\": %u, "
      "\"head_dim\": %u, \"reduce_chunk\": %u, \"reduce_slots\": %u%s}\n",
      c.partitions, c.tile_groups_per_part, max_blocks, g.x, g.y, g.z, gr.x, gr.y, gr.z, uq::gfx950::kTileTokens,
      uq::gfx950::kTileGroupTokens, uq::gfx950::kSlotContent, uq::gfx950::kHeadDim, uq::gfx950::kReduceChunk,
      uq::gfx950::kReduceSlots, queries_fields.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if ((argc == 7 || argc == 8) && std::string(argv[1]) == "decode") return decode(argc, argv, 0);
  if (argc == 8 && std::string(argv[1]) == "queries") return decode(7, argv, static_cast<int>(arg(argv, 7)));
  if (argc == 7 && std::string(argv[1]) == "score") return plan_score(argv);
  return usage();
}
