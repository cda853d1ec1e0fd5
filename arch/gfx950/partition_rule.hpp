// The gfx950 path's partition choice (issue 43; spec ultraquant.md §5.7 lets a tuned path choose
// its default P): P and TGPP such that the partition kernel's grid fills whole rounds of the
// workgroups a CU holds, sized from the plan's shape only (the block table's width, never the
// live lengths), so a captured graph stays valid for every replay. Pure, constexpr, no Kokkos:
// DecodePlan calls it through the tuned-path seam, the performance model through gfx950_plan.
//
// Cost model: a plan's worst case is every sequence at the table's width, R = ceil(W / 256)
// tile-groups each, B * Hk of them. With TGPP = t, P = ceil(R / t) partitions hold them, the
// grid is B * Hk * P workgroups of t tile-groups, and it runs in ceil(B * Hk * P / slots)
// rounds (slots = compute units x resident workgroups a CU), each as long as its workgroups'
// t tile-groups. The rule takes the t of the fewest rounds x t (the tile-groups the busiest CU
// works through one after another); among equals the fewest partitions (fewer partial rows to
// write and reduce). So a small batch gets one tile-group a workgroup in a partial round (more
// workgroups only wait on the same memory), and a large one whole rounds: 16 x 131k at one KV
// head, 256 CUs x 8: P 128, TGPP 4, 2048 workgroups = one round of 8 a CU (the spec's default,
// P 256 / TGPP 2, is two rounds; its first full, P 512 four).
#pragma once

#include <cstdint>

namespace uq::gfx950 {

// Partition-kernel workgroups (one wave each) a CU holds: 2 waves a SIMD with up to 256 VGPRs
// (the budget of the ISA checks, tests/emu/CMakeLists.txt); the LDS (at most 12.8 KB a
// workgroup) would allow 12.
constexpr int kDecodeWorkgroupsPerCu = 8;

struct PartitionRuleChoice {
  int partitions = 2;  // P, 2 .. 4096 (P = 1 stays an override: spec §5.7)
  int tgpp = 1;        // tile-groups per partition; P * TGPP * 256 >= W
};

// max_seqs, num_kv_heads, max_blocks_per_seq, block_size: the plan's shape (DecodeShape);
// compute_units: the device's CU count (256 on MI355X); workgroups_per_cu: resident partition
// workgroups a CU (kDecodeWorkgroupsPerCu for the current kernels); max_partitions: the most P
// may be (the spec's bound, 4096; the plan passes the spec default's P for the shape, which sized
// its workspace: §5.7).
constexpr PartitionRuleChoice gfx950_partition_rule(std::int64_t max_seqs, std::int64_t num_kv_heads,
                                                    std::int64_t max_blocks_per_seq, std::int64_t block_size,
                                                    std::int64_t compute_units,
                                                    std::int64_t workgroups_per_cu = kDecodeWorkgroupsPerCu,
                                                    std::int64_t max_partitions = 4096) {
  const std::int64_t p_limit = max_partitions >= 2 ? max_partitions : 2;
  constexpr std::int64_t kGroupTokens = 256;     // a tile-group (§5.3)
  const std::int64_t width = max_blocks_per_seq * block_size;
  const std::int64_t groups = width > 0 ? (width + kGroupTokens - 1) / kGroupTokens : 1;
  const std::int64_t rows = (max_seqs > 0 ? max_seqs : 1) * (num_kv_heads > 0 ? num_kv_heads : 1);
  const std::int64_t slots = (compute_units > 0 ? compute_units : 1) * (workgroups_per_cu > 0 ? workgroups_per_cu : 1);
  PartitionRuleChoice best;
  std::int64_t best_cost = -1, best_p = 0;
  // t from the fewest tile-groups a partition may hold (P <= p_limit) up to all of them; the cost
  // only changes where P = ceil(groups / t) does, so stepping t to the next such point keeps
  // the loop short (at most ~2 sqrt(groups) steps).
  std::int64_t t = (groups + p_limit - 1) / p_limit;
  if (t < 1) t = 1;
  while (true) {
    std::int64_t p = (groups + t - 1) / t;
    if (p < 2) p = 2;
    const std::int64_t workgroups = rows * p;
    const std::int64_t rounds = (workgroups + slots - 1) / slots;
    const std::int64_t cost = rounds * t;
    if (best_cost < 0 || cost < best_cost || (cost == best_cost && p < best_p)) {
      best_cost = cost;
      best_p = p;
      best.partitions = static_cast<int>(p);
      best.tgpp = static_cast<int>(t);
    }
    if (p <= 2 || t >= groups) break;
    // the smallest t' > t with ceil(groups / t') < p
    const std::int64_t q = (groups + t - 1) / t - 1;  // the next partition count down
    t = (groups + q - 1) / q;
    if (t <= 0) break;
  }
  return best;
}

}  // namespace uq::gfx950
