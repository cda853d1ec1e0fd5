// Generic Kokkos split-K decode (spec ultraquant.md §5): the partition kernel.
//
// One team per (sequence, KV head, partition). Partition p walks tile-groups p, p+P,
// p+2P, ... (at most TGPP), each as 16 tiles of 16 tokens in order. Per tile the team
// loads the 16 slots into scratch (16-byte loads when aligned), scores all QG query
// rows against them, updates the online softmax and accumulates P.V into a QG x 256
// fp32 accumulator in scratch. The numerics are the spec's: fp32 scores scaled after
// the dot, natural exp, P rounded to bf16 for P.V only, l from the unrounded p, and a
// bf16 partial output bf16(acc * fl32(1/l)) with its l and m.
#pragma once

#include "uq/error.hpp"
#include "uq/impl/math.hpp"
#include "uq/impl/status_counters.hpp"
#include "uq/partitions.hpp"
#include "uq/types.hpp"
#include "uq/ultraquant.hpp"
#include "uq/wht.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace uq {
namespace impl {

// Where a team's partial results go: [num_seqs][num_kv_heads][P][QG] rows.
template <class MemSpace>
struct DecodePartials {
  Kokkos::View<bf16*, MemSpace> out;  // rows x 256
  Kokkos::View<float*, MemSpace> l;   // rows
  Kokkos::View<float*, MemSpace> m;   // rows (natural-log units; -inf when empty)
};

// The cache as the kernels address it: raw bytes, 64-bit offsets.
struct CacheAddressing {
  const std::uint8_t* base = nullptr;
  std::int64_t num_blocks = 0;
  std::int64_t block_stride = 0;  // bytes between blocks
  std::int64_t pos_stride = 0;    // bytes between positions (num_kv_heads * slot_bytes)
  int slot_bytes = 0;
  int block_size = 0;
  int load_bytes = 4;  // 16 when every slot start is 16-byte aligned, 4 otherwise, 1 if unaligned
};

template <class CacheView>
CacheAddressing cache_addressing(const CacheView& cache) {
  CacheAddressing a;
  a.base = reinterpret_cast<const std::uint8_t*>(cache.data());
  a.num_blocks = static_cast<std::int64_t>(cache.extent(0));
  a.block_size = static_cast<int>(cache.extent(1));
  a.slot_bytes = static_cast<int>(cache.extent(3));
  a.pos_stride = static_cast<std::int64_t>(cache.extent(2)) * a.slot_bytes;
  a.block_stride = a.num_blocks > 1 ? static_cast<std::int64_t>(cache.stride(0)) : a.pos_stride * a.block_size;
  const std::uintptr_t addr = reinterpret_cast<std::uintptr_t>(a.base);
  auto aligned = [&](int n) {
    return addr % n == 0 && a.slot_bytes % n == 0 && a.pos_stride % n == 0 && a.block_stride % n == 0;
  };
  a.load_bytes = aligned(16) ? 16 : aligned(4) ? 4 : 1;
  return a;
}

struct alignas(16) Bytes16 {
  std::uint32_t w[4];
};

template <class ExecSpace, class QView, class TableView, class LenView, class CountView>
struct DecodePartitionsGeneric {
  using policy = Kokkos::TeamPolicy<ExecSpace>;
  using member = typename policy::member_type;
  using MemSpace = typename ExecSpace::memory_space;

  static constexpr int kTile = kTileTokens;                     // 16 tokens
  static constexpr int kTileBytes = kTile * ultraquant::kSlotContent;  // 4352

  QView q;
  CacheAddressing cache;
  TableView block_tables;
  LenView seq_lens;
  DecodePartials<MemSpace> partials;
  CountView counts;
  int max_blocks_per_seq = 0;
  int num_kv_heads = 0;
  int qg = 0;
  int partitions = 0;
  int tgpp = 0;
  float scale = 0.0f;
  bool q_rotated = false;

  static int scratch_bytes(int qg) {
    return kTileBytes + 16 +                      // slot tile (+ alignment slack)
           2 * qg * kHeadDim * int(sizeof(float)) +  // q8, acc
           qg * kTile * int(sizeof(float)) +         // scores, then p
           3 * qg * int(sizeof(float));              // m, l, alpha
  }

  // Sequence length as the kernel uses it (spec §6), counted once per sequence.
  KOKKOS_INLINE_FUNCTION std::int64_t clamped_len(int b, bool counting) const {
    std::int64_t L = static_cast<std::int64_t>(seq_lens(b));
    const std::int64_t cap = static_cast<std::int64_t>(max_blocks_per_seq) * cache.block_size;
    if (L < 0) {
      if (counting) count(counts, Counter::negative_seq_lens);
      L = 0;
    } else if (L > cap) {
      if (counting) count(counts, Counter::long_seq_lens);
      L = cap;
    }
    return L;
  }

  KOKKOS_INLINE_FUNCTION void load_tile(const member& team, std::uint8_t* tile, const std::uint8_t* first_slot,
                                        int nvalid) const {
    if (cache.load_bytes == 16) {
      constexpr int per_slot = ultraquant::kSlotContent / 16;  // 17
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, nvalid * per_slot), [&](int i) {
        const int t = i / per_slot, u = i % per_slot;
        const auto* src = reinterpret_cast<const Bytes16*>(first_slot + t * cache.pos_stride) + u;
        reinterpret_cast<Bytes16*>(tile + t * ultraquant::kSlotContent)[u] = *src;
      });
    } else if (cache.load_bytes == 4) {
      constexpr int per_slot = ultraquant::kSlotContent / 4;  // 68
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, nvalid * per_slot), [&](int i) {
        const int t = i / per_slot, u = i % per_slot;
        const auto* src = reinterpret_cast<const std::uint32_t*>(first_slot + t * cache.pos_stride) + u;
        reinterpret_cast<std::uint32_t*>(tile + t * ultraquant::kSlotContent)[u] = *src;
      });
    } else {
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, nvalid * ultraquant::kSlotContent), [&](int i) {
        const int t = i / ultraquant::kSlotContent, u = i % ultraquant::kSlotContent;
        tile[t * ultraquant::kSlotContent + u] = first_slot[t * cache.pos_stride + u];
      });
    }
  }

  // q8 . k̂ of one token (slot bytes in scratch), fp32: per group an inner sum of
  // FP4 x E4M3 products, scaled by the group's power of two.
  KOKKOS_INLINE_FUNCTION static float qk_dot(const float* q8, const std::uint8_t* slot) {
    float dot = 0.0f;
    for (int g = 0; g < ultraquant::kGroups; ++g) {
      const std::uint8_t sb = slot[ultraquant::kKScales + g];
      if (sb == 0) continue;  // zero group
      const std::uint8_t* codes = slot + ultraquant::kKCodes + g * (ultraquant::kGroup / 2);
      const float* qg = q8 + g * ultraquant::kGroup;
      float inner = 0.0f;
      for (int j = 0; j < ultraquant::kGroup / 2; ++j) {
        const unsigned byte = codes[j];
        inner += codec::e2m1_to_float(byte & 15u) * qg[2 * j];
        inner += codec::e2m1_to_float(byte >> 4) * qg[2 * j + 1];
      }
      dot += inner * codec::ue8m0_to_float(sb);
    }
    return dot;
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    const int league = team.league_rank();
    const int p = league % partitions;
    const int h = (league / partitions) % num_kv_heads;
    const int b = league / (partitions * num_kv_heads);
    const std::int64_t row0 = ((static_cast<std::int64_t>(b) * num_kv_heads + h) * partitions + p) * qg;

    std::int64_t L = 0;
    Kokkos::single(
        Kokkos::PerTeam(team), [&](std::int64_t& len) { len = clamped_len(b, h == 0 && p == 0); }, L);
    const std::int64_t total_tg = (L + kTileGroupTokens - 1) / kTileGroupTokens;
    const int trip = p >= total_tg ? 0
                                   : static_cast<int>(min_i64(
                                         tgpp, (total_tg - p + partitions - 1) / partitions));

    if (trip == 0) {  // empty partition: every row still written
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, qg * kHeadDim),
                           [&](int i) { partials.out(row0 * kHeadDim + i) = bf16{0}; });
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, qg), [&](int r) {
        partials.l(row0 + r) = 0.0f;
        partials.m(row0 + r) = -codec::infinity();
      });
      return;
    }

    // ---- scratch
    auto& shmem = team.team_shmem();
    auto* tile = static_cast<std::uint8_t*>(shmem.get_shmem_aligned(kTileBytes, 16));
    float* q8 = static_cast<float*>(shmem.get_shmem(qg * kHeadDim * sizeof(float)));
    float* acc = static_cast<float*>(shmem.get_shmem(qg * kHeadDim * sizeof(float)));
    float* sp = static_cast<float*>(shmem.get_shmem(qg * kTile * sizeof(float)));
    float* m = static_cast<float*>(shmem.get_shmem(qg * sizeof(float)));
    float* l = static_cast<float*>(shmem.get_shmem(qg * sizeof(float)));
    float* alpha = static_cast<float*>(shmem.get_shmem(qg * sizeof(float)));

    // ---- q8 = e4m3(WHT(fp32(q))) (or e4m3(fp32(q)) when pre-rotated)
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, qg * kHeadDim), [&](int i) {
      q8[i] = codec::bf16_to_float(q(b, h * qg + i / kHeadDim, i % kHeadDim));
      acc[i] = 0.0f;
    });
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, qg), [&](int r) {
      m[r] = -codec::infinity();
      l[r] = 0.0f;
    });
    team.team_barrier();
    if (!q_rotated) wht256_team(team, q8, qg);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, qg * kHeadDim),
                         [&](int i) { q8[i] = codec::round_e4m3(q8[i]); });
    team.team_barrier();

    for (int it = 0; it < trip; ++it) {
      const std::int64_t tg = p + static_cast<std::int64_t>(it) * partitions;
      for (int n = 0; n < kTileGroupTokens / kTile; ++n) {
        const std::int64_t T0 = tg * kTileGroupTokens + n * kTile;
        // Tiles wholly past the sequence change nothing (p = 0, alpha = 1): skip them.
        if (T0 >= L) break;
        const std::int64_t logical = T0 / cache.block_size;
        const std::int64_t physical = static_cast<std::int64_t>(block_tables(b, logical));
        const bool block_ok = physical >= 0 && physical < cache.num_blocks;
        const int nvalid = block_ok ? static_cast<int>(min_i64(kTile, L - T0)) : 0;
        if (!block_ok && h == 0 && T0 % cache.block_size == 0)
          Kokkos::single(Kokkos::PerTeam(team), [&]() { count(counts, Counter::bad_block_ids); });

        if (nvalid > 0) {
          const std::uint8_t* first = cache.base + physical * cache.block_stride +
                                      (T0 % cache.block_size) * cache.pos_stride +
                                      static_cast<std::int64_t>(h) * cache.slot_bytes;
          load_tile(team, tile, first, nvalid);
        }
        team.team_barrier();

        // scores s[r][t] (fp32, x scale after the dot); absent tokens -inf
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, qg * kTile), [&](int i) {
          const int r = i / kTile, t = i % kTile;
          sp[i] = t < nvalid ? qk_dot(q8 + r * kHeadDim, tile + t * ultraquant::kSlotContent) * scale
                             : -codec::infinity();
        });
        team.team_barrier();

        // online softmax per row; sp becomes bf16(p)
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, qg), [&](int r) {
          float* s = sp + r * kTile;
          float tile_max = s[0];
          for (int t = 1; t < kTile; ++t) tile_max = max_f32(tile_max, s[t]);
          const float m_old = m[r];
          const float m_new = max_f32(m_old, tile_max);
          const bool none = m_new == -codec::infinity();
          const float a = m_old == -codec::infinity() ? 1.0f : exp_f32(m_old - m_new);
          float sum = 0.0f;
          for (int t = 0; t < kTile; ++t) {
            const float pt = none ? 0.0f : exp_f32(s[t] - m_new);
            sum += pt;              // l takes the unrounded p ...
            s[t] = codec::round_bf16(pt);  // ... P.V the bf16-rounded one
          }
          l[r] = l[r] * a + sum;
          m[r] = m_new;
          alpha[r] = a;
        });
        team.team_barrier();

        // acc = acc * alpha + sum_t bf16(p_t) * v̂_t, one thread per dim d
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, kHeadDim), [&](int d) {
          for (int r = 0; r < qg; ++r) acc[r * kHeadDim + d] *= alpha[r];
          for (int t = 0; t < nvalid; ++t) {
            const std::uint8_t* slot = tile + t * ultraquant::kSlotContent;
            const unsigned byte = slot[ultraquant::kVCodes + d / 2];
            const float v = ultraquant::dequant((d & 1) ? byte >> 4 : byte & 15u,
                                                slot[ultraquant::kVScales + d / ultraquant::kGroup]);
            for (int r = 0; r < qg; ++r) acc[r * kHeadDim + d] += sp[r * kTile + t] * v;
          }
        });
        team.team_barrier();
      }
    }

    // ---- epilogue: bf16(acc * fl32(1/l)), l, m
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, qg * kHeadDim), [&](int i) {
      const float lr = l[i / kHeadDim];
      const float inv = 1.0f / (lr > 0.0f ? lr : 1.0f);
      partials.out(row0 * kHeadDim + i) = codec::float_to_bf16(acc[i] * inv);
    });
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, qg), [&](int r) {
      partials.l(row0 + r) = l[r];
      partials.m(row0 + r) = m[r];
    });
  }

  void launch(const ExecSpace& exec, int num_seqs) const {
    const int league = num_seqs * num_kv_heads * partitions;
    if (league == 0) return;
    policy pol(exec, league, Kokkos::AUTO);
    pol.set_scratch_size(0, Kokkos::PerTeam(scratch_bytes(qg)));
    Kokkos::parallel_for("uq::decode::partitions", pol, *this);
  }
};

}  // namespace impl
}  // namespace uq
