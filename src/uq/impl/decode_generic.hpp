// Generic Kokkos split-K decode (spec ultraquant.md §5): the partition kernel.
//
// One team per (sequence, KV head, partition). Partition p walks tile-groups p, p+P,
// p+2P, ... (at most TGPP), 256 tokens each. A team loads a chunk of several 16-token
// tiles at a time into scratch (16-byte loads when aligned: many bytes in flight per
// team), scores every token against all QG query rows (each K code decoded once and
// reused for every row; a warp's threads take consecutive tokens, so the q8 reads are
// broadcasts), runs the online softmax tile by tile in token order, and accumulates
// P.V with one thread per head dimension.
//
// Numerics are the spec's: fp32 scores scaled after the dot, natural exp, P rounded to
// bf16 for P.V only, l from the unrounded p, softmax state updated per 16-token tile,
// and a bf16 partial output bf16(acc * fl32(1/l)) with its l and m.
//
// Revision 2 (the rules beside DecodePartitionsLaunch in decode_launch.hpp): a partition
// without tokens writes only l = 0, m = -inf (partition 0 first reads q, to find non-finite
// rows); a partition whose rows saw no token writes no partial row; a non-finite query row
// gives l = m = NaN and no partial row, counted once by partition 0; with `direct` (P = 1)
// the team writes out (and lse) itself instead of partial rows.
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
  int load_bytes = 4;  // 16 when every slot start is 16-byte aligned, 4 when 4-byte aligned, else 1
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

struct alignas(16) Floats4 {
  float v[4];
};

// Team size for the generic kernels: one thread per head dimension on GPUs; host
// backends give each team one thread and parallelise over the league.
// (Host and device: the kernel body branches on it with if constexpr.)
template <class ExecSpace>
KOKKOS_INLINE_FUNCTION constexpr bool runs_on_host() {
  return Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename ExecSpace::memory_space>::accessible;
}

// bf16 of a NaN or an infinity: the exponent field is all ones (spec §6).
KOKKOS_INLINE_FUNCTION bool bf16_nonfinite(bf16 x) { return (x.bits & 0x7F80u) == 0x7F80u; }

template <int QG, class ExecSpace, class QView, class TableView, class LenView, class CountView, class OutView,
          class LseView>
struct DecodePartitionsGeneric {
  // 256 threads, at least 4 teams per multiprocessor: the kernel is issue-bound, so
  // occupancy (warps to hide latency) matters more than a few registers.
  using policy = Kokkos::TeamPolicy<ExecSpace, Kokkos::LaunchBounds<256, 4>>;
  using member = typename policy::member_type;
  using MemSpace = typename ExecSpace::memory_space;

  static constexpr int kTile = kTileTokens;                 // 16 tokens: the softmax step
  static constexpr int kChunk = QG == 16 ? 16 : 64;         // tokens per load step (scratch-bound)
  static constexpr int kTilesPerChunk = kChunk / kTile;
  static constexpr int kSlot = ultraquant::kSlotContent;    // 272 bytes used of each slot
  static constexpr int kSplits = 4;                         // QK: a token's 8 groups over 4 threads

  // Scratch layout (bytes): the slot chunk first (16-byte aligned), then float arrays.
  static constexpr int kTileBytesOff = 0;
  static constexpr int kTileBytes = kChunk * kSlot;
  static constexpr int kAccOff = kTileBytes;                                  // float [QG][256]
  static constexpr int kPartOff = kAccOff + QG * kHeadDim * 4;                // float [kSplits][QG][kChunk]
  static constexpr int kPOff = kPartOff + kSplits * QG * kChunk * 4;         // float [QG][kChunk]
  static constexpr int kAlphaOff = kPOff + QG * kChunk * 4;                  // float [QG][kTilesPerChunk]
  static constexpr int kMrunOff = kAlphaOff + QG * kTilesPerChunk * 4;       // float [QG][kTilesPerChunk]
  static constexpr int kStateOff = kMrunOff + QG * kTilesPerChunk * 4;       // float m[QG], l[QG]
  static constexpr int kQ8Off = kStateOff + 2 * QG * 4;                      // float [QG][256] (E4M3 values)
  static constexpr int kTileInfoOff = kQ8Off + QG * kHeadDim * 4;            // int64 [kTilesPerChunk][2]
  static constexpr int kScratchBytes = kTileInfoOff + kTilesPerChunk * 16 + 16;
  static_assert(kScratchBytes <= 48 * 1024, "decode scratch must fit the default 48 KiB");
  // Host backends only, in level-1 scratch: kHostStep decoded tokens and the code-pair
  // table of process_tile_host.
  static constexpr int kHostStep = 4;                               // tokens per step
  static constexpr int kHostKvOff = 0;                              // float [kHostStep][256]
  static constexpr int kHostPairsOff = kHostStep * kHeadDim * 4;    // float [256][2]
  static constexpr int kHostScratchBytes = kHostPairsOff + 256 * 2 * 4;
  static_assert(kTile % kHostStep == 0, "host steps tile a tile");
  static_assert(kSplits >= 2, "the softmax keeps scores and unrounded p in splits 0 and 1 of part");
  static_assert(kQ8Off % 16 == 0, "q8 is read as 16-byte vectors");
  static_assert(QG <= 31, "non-finite rows are a bit mask in an int");

  QView q;
  CacheAddressing cache;
  TableView block_tables;
  LenView seq_lens;
  DecodePartials<MemSpace> partials;
  CountView counts;
  int max_blocks_per_seq = 0;
  int num_kv_heads = 0;
  int partitions = 0;
  int tgpp = 0;
  float scale = 0.0f;
  bool q_rotated = false;
  // P = 1 without a reducer: out (and lse, when has_lse) instead of partial rows.
  bool direct = false;
  bool has_lse = false;
  OutView out;
  LseView lse;

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

  // Copies `tokens` slots (kSlot bytes each, pos_stride apart) into scratch.
  KOKKOS_INLINE_FUNCTION void load_tile(const member& team, std::uint8_t* dst, const std::uint8_t* first_slot,
                                        int tokens) const {
    if (cache.load_bytes == 16) {
      constexpr int per_slot = kSlot / 16;  // 17
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, tokens * per_slot), [&](int i) {
        const int t = i / per_slot, u = i % per_slot;
        reinterpret_cast<Bytes16*>(dst + t * kSlot)[u] =
            reinterpret_cast<const Bytes16*>(first_slot + t * cache.pos_stride)[u];
      });
    } else if (cache.load_bytes == 4) {
      constexpr int per_slot = kSlot / 4;  // 68
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, tokens * per_slot), [&](int i) {
        const int t = i / per_slot, u = i % per_slot;
        reinterpret_cast<std::uint32_t*>(dst + t * kSlot)[u] =
            reinterpret_cast<const std::uint32_t*>(first_slot + t * cache.pos_stride)[u];
      });
    } else {
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, tokens * kSlot), [&](int i) {
        const int t = i / kSlot, u = i % kSlot;
        dst[t * kSlot + u] = first_slot[t * cache.pos_stride + u];
      });
    }
  }

  // Bit r set: query row r of KV head h holds a NaN or an infinity. Reads q only.
  KOKKOS_INLINE_FUNCTION int nonfinite_rows(const member& team, int b, int h) const {
    int mask = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(team, QG * kHeadDim),
        [&](int i, int& m) {
          if (bf16_nonfinite(q(b, h * QG + i / kHeadDim, i % kHeadDim))) m |= 1 << (i / kHeadDim);
        },
        Kokkos::BOr<int>(mask));
    return mask;
  }

  // Partition 0 counts each non-finite row of (b, h) once (spec §6).
  KOKKOS_INLINE_FUNCTION void count_nonfinite(const member& team, int p, int bad) const {
    if (p != 0 || bad == 0) return;
    Kokkos::single(Kokkos::PerTeam(team), [&]() {
      int n = 0;
      for (int r = 0; r < QG; ++r) n += (bad >> r) & 1;
      count(counts, Counter::nonfinite_inputs, static_cast<unsigned long long>(n));
    });
  }

  // The team's results: with `direct`, the out rows (bf16(acc * fl32(1/l)), 0 when l = 0, NaN
  // for a non-finite row) and lse (m + log l, -inf when l = 0, NaN); otherwise l and m of every
  // row (NaN for a non-finite one) and the partial rows of those with l > 0. acc == nullptr:
  // the partition saw no token (acc = 0, l = 0, m = -inf).
  KOKKOS_INLINE_FUNCTION void write_results(const member& team, int b, int h, std::int64_t row0, int bad,
                                            const float* acc, const float* m, const float* l) const {
    const float nan = codec::quiet_nan();
    const auto row_l = [&](int r) { return acc ? l[r] : 0.0f; };
    const auto row_m = [&](int r) { return acc ? m[r] : -codec::infinity(); };
    if (direct) {
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, QG * kHeadDim), [&](int i) {
        const int r = i / kHeadDim;
        const float lr = row_l(r);
        const float inv = 1.0f / (lr > 0.0f ? lr : 1.0f);
        out(b, h * QG + r, i % kHeadDim) =
            (bad >> r) & 1 ? codec::float_to_bf16(nan) : codec::float_to_bf16(acc ? acc[i] * inv : 0.0f);
      });
      if (has_lse)
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, QG), [&](int r) {
          const float lr = row_l(r);
          lse(b, h * QG + r) = (bad >> r) & 1 ? nan : lr > 0.0f ? row_m(r) + log_f32(lr) : -codec::infinity();
        });
      return;
    }
    if (acc)
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, QG * kHeadDim), [&](int i) {
        const int r = i / kHeadDim;
        const float lr = l[r];
        if (lr > 0.0f && !((bad >> r) & 1)) partials.out(row0 * kHeadDim + i) = codec::float_to_bf16(acc[i] * (1.0f / lr));
      });
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, QG), [&](int r) {
      const bool nf = (bad >> r) & 1;
      partials.l(row0 + r) = nf ? nan : row_l(r);
      partials.m(row0 + r) = nf ? nan : row_m(r);
    });
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    const int league = team.league_rank();
    const int p = league % partitions;
    const int h = (league / partitions) % num_kv_heads;
    const int b = league / (partitions * num_kv_heads);
    const std::int64_t row0 = ((static_cast<std::int64_t>(b) * num_kv_heads + h) * partitions + p) * QG;

    std::int64_t L = 0;
    Kokkos::single(
        Kokkos::PerTeam(team), [&](std::int64_t& len) { len = clamped_len(b, h == 0 && p == 0); }, L);
    const std::int64_t total_tg = (L + kTileGroupTokens - 1) / kTileGroupTokens;
    const int trip =
        p >= total_tg ? 0 : static_cast<int>(min_i64(tgpp, (total_tg - p + partitions - 1) / partitions));
    if (trip == 0) {  // no token: l = 0, m = -inf only (partition 0 also looks at q, spec §6)
      const int bad = p == 0 ? nonfinite_rows(team, b, h) : 0;
      count_nonfinite(team, p, bad);
      write_results(team, b, h, row0, bad, nullptr, nullptr, nullptr);
      return;
    }

    char* base = static_cast<char*>(team.team_shmem().get_shmem_aligned(int(kScratchBytes), 16));
    auto* tile = reinterpret_cast<std::uint8_t*>(base + kTileBytesOff);
    float* acc = reinterpret_cast<float*>(base + kAccOff);
    float* part = reinterpret_cast<float*>(base + kPartOff);
    float* pw = reinterpret_cast<float*>(base + kPOff);
    float* alpha = reinterpret_cast<float*>(base + kAlphaOff);
    float* mrun = reinterpret_cast<float*>(base + kMrunOff);
    float* m = reinterpret_cast<float*>(base + kStateOff);
    float* l = m + QG;
    float* q8 = reinterpret_cast<float*>(base + kQ8Off);
    auto* tile_info = reinterpret_cast<std::int64_t*>(base + kTileInfoOff);  // [j][0] = first slot offset or -1, [j][1] = valid tokens

    // ---- q8 = e4m3(WHT(fp32(q))) (or e4m3(fp32(q)) when pre-rotated), via acc as fp32 space;
    // a non-finite row computes with q8 = 0 (its results are NaN, written at the end)
    int bad = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(team, QG * kHeadDim),
        [&](int i, int& mask) {
          const bf16 x = q(b, h * QG + i / kHeadDim, i % kHeadDim);
          if (bf16_nonfinite(x)) mask |= 1 << (i / kHeadDim);
          acc[i] = codec::bf16_to_float(x);
        },
        Kokkos::BOr<int>(bad));
    count_nonfinite(team, p, bad);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, QG), [&](int r) {
      m[r] = -codec::infinity();
      l[r] = 0.0f;
    });
    team.team_barrier();
    if (!q_rotated) wht256_team(team, acc, QG);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, QG * kHeadDim), [&](int i) {
      q8[i] = (bad >> (i / kHeadDim)) & 1 ? 0.0f : codec::round_e4m3(acc[i]);
      acc[i] = 0.0f;
    });
    team.team_barrier();

    if constexpr (runs_on_host<ExecSpace>()) {
      char* host = static_cast<char*>(team.team_scratch(1).get_shmem_aligned(int(kHostScratchBytes), 16));
      float* kv = reinterpret_cast<float*>(host + kHostKvOff);
      float* pairs = reinterpret_cast<float*>(host + kHostPairsOff);
      Kokkos::single(Kokkos::PerTeam(team), [&]() {
        for (unsigned c = 0; c < 256; ++c) {
          pairs[2 * c] = ultraquant::fp4_times(c & 15u, 1.0f);
          pairs[2 * c + 1] = ultraquant::fp4_times(c >> 4, 1.0f);
        }
        for (int it = 0; it < trip; ++it) {
          const std::int64_t tg = p + static_cast<std::int64_t>(it) * partitions;
          for (int j = 0; j < kTileGroupTokens / kTile; ++j) {
            const std::int64_t T0 = tg * kTileGroupTokens + j * kTile;
            if (T0 >= L) break;  // later tiles change nothing (p = 0, alpha = 1)
            process_tile_host(b, h, T0, L, acc, part, pw, m, l, q8, kv, pairs);
          }
        }
      });
      team.team_barrier();
    } else {
      for (int it = 0; it < trip; ++it) {
        const std::int64_t tg = p + static_cast<std::int64_t>(it) * partitions;
        for (int c = 0; c < kTileGroupTokens / kChunk; ++c) {
          const std::int64_t T0c = tg * kTileGroupTokens + c * kChunk;
          if (T0c >= L) break;  // later tiles change nothing (p = 0, alpha = 1)
          process_chunk(team, b, h, T0c, L, tile, acc, part, pw, alpha, mrun, m, l, q8, tile_info);
        }
      }
    }

    // ---- epilogue: bf16(acc * fl32(1/l)), l, m (or out and lse)
    write_results(team, b, h, row0, bad, acc, m, l);
  }

  // 256 elements of one token's K or V (codes: 128 bytes, two elements each, low nibble
  // first; scales: 8 bytes, one per 32 elements), through pairs[2 byte + n] = fp4_times(
  // nibble n of byte, 1): the same bits as fp4_times(code, half_scale) (exact scaling by a
  // power of two), with no branch on the sign, and the scaling a vector loop.
  static KOKKOS_INLINE_FUNCTION void decode_token_host(const std::uint8_t* codes, const std::uint8_t* scales,
                                                       float* out, const float* pairs) {
    struct alignas(8) Pair {
      float v[2];
    };
    for (int i = 0; i < kHeadDim / 2; ++i)  // one 8-byte copy per code byte
      reinterpret_cast<Pair*>(out)[i] = reinterpret_cast<const Pair*>(pairs)[codes[i]];
    for (int g = 0; g < kHeadDim / ultraquant::kGroup; ++g) {
      const float hs = ultraquant::half_scale(scales[g]);
      for (int e = 0; e < ultraquant::kGroup; ++e) out[g * ultraquant::kGroup + e] *= hs;
    }
  }

  // fp32 dot of 256 elements in 8 independent lanes (a vector loop for the CPU compilers).
  static KOKKOS_INLINE_FUNCTION float dot256_host(const float* x, const float* y) {
    float s[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    for (int d = 0; d < kHeadDim; d += 8)
      for (int u = 0; u < 8; ++u) s[u] += x[d + u] * y[d + u];
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
  }

  // Host backends (one thread per team): one tile starting at token T0 (< L), read straight
  // from the cache, with the loops ordered for a CPU: K and V decoded once per token into
  // 256 floats, kHostStep tokens at a time, and every row's dots and P.V updates over
  // contiguous dimensions in independent lanes (vector loops for the CPU compilers; the
  // dots' fp32 summation order is free, spec §5; P.V adds the tokens in order, as
  // process_chunk). The softmax steps are process_chunk's, per tile (sc, pw: [QG][16]).
  KOKKOS_INLINE_FUNCTION void process_tile_host(int b, int h, std::int64_t T0, std::int64_t L, float* acc,
                                                float* sc, float* pw, float* m, float* l, const float* q8,
                                                float* kv, const float* pairs) const {
    constexpr int S = kHostStep;
    const std::int64_t logical = T0 / cache.block_size;
    const std::int64_t physical = static_cast<std::int64_t>(block_tables(b, logical));
    if (physical < 0 || physical >= cache.num_blocks) {  // absent tile: alpha = 1, p = 0
      if (h == 0 && T0 % cache.block_size == 0) count(counts, Counter::bad_block_ids);
      return;
    }
    const std::uint8_t* first = cache.base + physical * cache.block_stride +
                                (T0 % cache.block_size) * cache.pos_stride +
                                static_cast<std::int64_t>(h) * cache.slot_bytes;
    const int valid = static_cast<int>(min_i64(kTile, L - T0));
    // Tokens past `valid` in the last step decode as zeros (no read) and are never used.
    auto decode_step = [&](int t0, int codes_off, int scales_off) {
      for (int u = 0; u < S; ++u) {
        float* out = kv + u * kHeadDim;
        if (t0 + u < valid) {
          const std::uint8_t* slot = first + (t0 + u) * cache.pos_stride;
          decode_token_host(slot + codes_off, slot + scales_off, out, pairs);
        } else {
          for (int d = 0; d < kHeadDim; ++d) out[d] = 0.0f;
        }
      }
    };
    for (int t0 = 0; t0 < valid; t0 += S) {
      decode_step(t0, ultraquant::kKCodes, ultraquant::kKScales);
      for (int u = 0; u < S && t0 + u < valid; ++u)
        for (int r = 0; r < QG; ++r)
          sc[r * kTile + t0 + u] = dot256_host(kv + u * kHeadDim, q8 + r * kHeadDim) * scale;
    }
    for (int r = 0; r < QG; ++r) {
      float tile_max = -codec::infinity();
      for (int t = 0; t < valid; ++t) tile_max = max_f32(tile_max, sc[r * kTile + t]);
      const float m_new = max_f32(m[r], tile_max);
      const float alpha = m[r] == -codec::infinity() ? 1.0f : exp_f32(m[r] - m_new);
      float sum = 0.0f;
      for (int t = 0; t < kTile; ++t) {
        const float p = t >= valid || m_new == -codec::infinity() ? 0.0f : exp_f32(sc[r * kTile + t] - m_new);
        sum += p;                                  // l takes the unrounded p ...
        pw[r * kTile + t] = codec::round_bf16(p);  // ... P.V the bf16-rounded one (0 past valid)
      }
      m[r] = m_new;
      l[r] = l[r] * alpha + sum;
      float* a = acc + r * kHeadDim;
      for (int d = 0; d < kHeadDim; ++d) a[d] *= alpha;
    }
    for (int t0 = 0; t0 < valid; t0 += S) {
      decode_step(t0, ultraquant::kVCodes, ultraquant::kVScales);
      const int n = valid - t0 < S ? valid - t0 : S;
      for (int r = 0; r < QG; ++r) {
        const float* pr = pw + r * kTile + t0;
        float* a = acc + r * kHeadDim;
        if (n == S) {
          for (int d = 0; d < kHeadDim; ++d) {
            float x = a[d];
            for (int u = 0; u < S; ++u) x += pr[u] * kv[u * kHeadDim + d];
            a[d] = x;
          }
        } else {
          for (int u = 0; u < n; ++u)
            for (int d = 0; d < kHeadDim; ++d) a[d] += pr[u] * kv[u * kHeadDim + d];
        }
      }
    }
  }

  // One chunk of kTilesPerChunk tiles starting at token T0c (< L).
  KOKKOS_INLINE_FUNCTION void process_chunk(const member& team, int b, int h, std::int64_t T0c, std::int64_t L,
                                            std::uint8_t* tile, float* acc, float* part, float* pw, float* alpha,
                                            float* mrun, float* m, float* l, const float* q8,
                                            std::int64_t* tile_info) const {
    // Where each tile's slots are (tiles never cross a block: block_size is a multiple
    // of 16); bad block ids make the tile absent and are counted once, by the tile at
    // the block's start, in the team of KV head 0.
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, kTilesPerChunk), [&](int j) {
      const std::int64_t T0 = T0c + j * kTile;
      std::int64_t first = -1, valid = 0;
      if (T0 < L) {
        const std::int64_t logical = T0 / cache.block_size;
        const std::int64_t physical = static_cast<std::int64_t>(block_tables(b, logical));
        if (physical >= 0 && physical < cache.num_blocks) {
          first = physical * cache.block_stride + (T0 % cache.block_size) * cache.pos_stride +
                  static_cast<std::int64_t>(h) * cache.slot_bytes;
          valid = min_i64(kTile, L - T0);
        } else if (h == 0 && T0 % cache.block_size == 0) {
          count(counts, Counter::bad_block_ids);
        }
      }
      tile_info[2 * j] = first;
      tile_info[2 * j + 1] = valid;
    });
    team.team_barrier();
    for (int j = 0; j < kTilesPerChunk; ++j)
      if (tile_info[2 * j + 1] > 0)
        load_tile(team, tile + j * kTile * kSlot, cache.base + tile_info[2 * j], static_cast<int>(tile_info[2 * j + 1]));
    team.team_barrier();

    // QK: thread (split s, token t) scores groups 2s, 2s+1 of token t for every row. Each
    // K element is decoded once (with its group scale folded in: exact, a power of two)
    // and used for every row; q8 is read 4 floats at a time, the same address for the
    // whole warp (consecutive threads take consecutive tokens).
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, kSplits * kChunk), [&](int i) {
      const int s = i / kChunk, t = i % kChunk;
      float sum[QG];
      for (int r = 0; r < QG; ++r) sum[r] = 0.0f;
      if (t % kTile < tile_info[2 * (t / kTile) + 1]) {
        const std::uint8_t* slot = tile + t * kSlot;
        for (int g = 2 * s; g < 2 * s + 2; ++g) {
          const std::uint8_t sb = slot[ultraquant::kKScales + g];
          if (sb == 0) continue;  // zero group
          const float hs = ultraquant::half_scale(sb);
          float k[ultraquant::kGroup];
          const auto* words = reinterpret_cast<const std::uint32_t*>(slot + ultraquant::kKCodes + g * 16);
          for (int w = 0; w < 4; ++w) {
            const std::uint32_t codes = words[w];
            for (int n = 0; n < 8; ++n) k[8 * w + n] = ultraquant::fp4_times(codes >> (4 * n), hs);
          }
          // Rows innermost: QG independent FMA chains instead of one (latency hiding).
          float inner[QG];
          for (int r = 0; r < QG; ++r) inner[r] = 0.0f;
          for (int e = 0; e < ultraquant::kGroup / 4; ++e)
            for (int r = 0; r < QG; ++r) {
              const Floats4 q4 = reinterpret_cast<const Floats4*>(q8 + r * kHeadDim + g * ultraquant::kGroup)[e];
              inner[r] += k[4 * e] * q4.v[0];
              inner[r] += k[4 * e + 1] * q4.v[1];
              inner[r] += k[4 * e + 2] * q4.v[2];
              inner[r] += k[4 * e + 3] * q4.v[3];
            }
          for (int r = 0; r < QG; ++r) sum[r] += inner[r];
        }
      }
      for (int r = 0; r < QG; ++r) part[(s * QG + r) * kChunk + t] = sum[r];
    });
    team.team_barrier();

    // Online softmax, tile by tile in token order, in four steps so that the exps and
    // sums run on many threads; only the running max and l are serial (per row, one
    // value per tile). s overwrites split 0 of part, the unrounded p split 1.
    float* sc = part;                  // [QG][kChunk] scores
    float* pu = part + QG * kChunk;    // [QG][kChunk] unrounded p
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, QG * kTilesPerChunk), [&](int i) {
      const int r = i / kTilesPerChunk, j = i % kTilesPerChunk;
      const int valid = static_cast<int>(tile_info[2 * j + 1]);
      float tile_max = -codec::infinity();
      for (int t = 0; t < kTile; ++t) {
        const int ct = j * kTile + t;
        float dot = 0.0f;
        for (int sp = 0; sp < kSplits; ++sp) dot += part[(sp * QG + r) * kChunk + ct];
        const float s = t < valid ? dot * scale : -codec::infinity();
        sc[r * kChunk + ct] = s;
        tile_max = max_f32(tile_max, s);
      }
      mrun[i] = tile_max;
    });
    team.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, QG), [&](int r) {
      float mr = m[r];
      for (int j = 0; j < kTilesPerChunk; ++j) {
        const float m_new = max_f32(mr, mrun[r * kTilesPerChunk + j]);
        alpha[r * kTilesPerChunk + j] = mr == -codec::infinity() ? 1.0f : exp_f32(mr - m_new);
        mrun[r * kTilesPerChunk + j] = m_new;  // the max the tile's p are taken against
        mr = m_new;
      }
      m[r] = mr;
    });
    team.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, QG * kChunk), [&](int i) {
      const int r = i / kChunk, ct = i % kChunk;
      const float mj = mrun[r * kTilesPerChunk + ct / kTile];
      const float p = mj == -codec::infinity() ? 0.0f : exp_f32(sc[i] - mj);
      pu[i] = p;                    // l takes the unrounded p ...
      pw[i] = codec::round_bf16(p);  // ... P.V the bf16-rounded one
    });
    team.team_barrier();
    // l = l * alpha + the tile's sum of p, tile by tile (no barrier: P.V does not read l).
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, QG), [&](int r) {
      float lr = l[r];
      for (int j = 0; j < kTilesPerChunk; ++j) {
        float sum = 0.0f;
        for (int t = 0; t < kTile; ++t) sum += pu[r * kChunk + j * kTile + t];
        lr = lr * alpha[r * kTilesPerChunk + j] + sum;
      }
      l[r] = lr;
    });

    // P.V: one thread per pair of dimensions (one code byte); acc rows in registers for
    // the chunk, each tile's p read once for both dimensions.
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, kHeadDim / 2), [&](int dp) {
      float a0[QG], a1[QG];
      for (int r = 0; r < QG; ++r) {
        a0[r] = acc[r * kHeadDim + 2 * dp];
        a1[r] = acc[r * kHeadDim + 2 * dp + 1];
      }
      for (int j = 0; j < kTilesPerChunk; ++j) {
        for (int r = 0; r < QG; ++r) {
          a0[r] *= alpha[r * kTilesPerChunk + j];
          a1[r] *= alpha[r * kTilesPerChunk + j];
        }
        const int valid = static_cast<int>(tile_info[2 * j + 1]);
        for (int t = 0; t < valid; ++t) {
          const std::uint8_t* slot = tile + (j * kTile + t) * kSlot;
          const unsigned byte = slot[ultraquant::kVCodes + dp];
          const float hs = ultraquant::half_scale(slot[ultraquant::kVScales + (2 * dp) / ultraquant::kGroup]);
          const float v0 = ultraquant::fp4_times(byte, hs), v1 = ultraquant::fp4_times(byte >> 4, hs);
          for (int r = 0; r < QG; ++r) {
            const float pr = pw[r * kChunk + j * kTile + t];
            a0[r] += pr * v0;
            a1[r] += pr * v1;
          }
        }
      }
      for (int r = 0; r < QG; ++r) {
        acc[r * kHeadDim + 2 * dp] = a0[r];
        acc[r * kHeadDim + 2 * dp + 1] = a1[r];
      }
    });
    team.team_barrier();
  }

  void launch(const ExecSpace& exec, int num_seqs) const {
    // DecodePlan checks max_seqs * num_kv_heads * partitions <= 2^31 - 1.
    const int league = static_cast<int>(static_cast<std::int64_t>(num_seqs) * num_kv_heads * partitions);
    if (league == 0) return;
    policy pol = runs_on_host<ExecSpace>() ? policy(exec, league, 1) : policy(exec, league, kHeadDim);
    pol.set_scratch_size(0, Kokkos::PerTeam(kScratchBytes));
    if (runs_on_host<ExecSpace>()) pol.set_scratch_size(1, Kokkos::PerTeam(kHostScratchBytes));
    Kokkos::parallel_for("uq::decode::partitions", pol, *this);
  }
};

}  // namespace impl
}  // namespace uq
