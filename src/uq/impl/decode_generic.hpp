// Generic Kokkos split-K decode (spec ultraquant.md §5): the partition kernel.
//
// One team per (sequence, KV head, partition). Partition p walks tile-groups p, p+P,
// p+2P, ... (at most TGPP), 256 tokens each. On a GPU (process_chunk) a team loads a chunk
// of several 16-token tiles at a time into scratch (16-byte loads when aligned: many bytes
// in flight per team), scores every token against all QG query rows (each K code decoded
// once, through a 16-entry table, and reused for every row; a warp's threads take
// consecutive tokens, so the q8 reads are broadcasts), runs the online softmax tile by tile
// in token order, and accumulates P.V on all threads: each owns a few dimensions for one
// set of tokens, decodes each V code once and keeps its rows in registers for the chunk.
// Host backends (process_tile_host) run one thread per team over contiguous-dimension loops.
//
// Numerics are the spec's: fp32 scores scaled after the dot, natural exp, P rounded to
// bf16 for P.V only, l from the unrounded p, softmax state updated per 16-token tile,
// and a bf16 partial output bf16(acc * fl32(1/l)) with its l and m. Within those rules the
// paths group the fp32 sums differently (the spec leaves the order free): the GPU path scales
// each tile's bf16 p by the later tiles' alphas of its chunk and acc once per chunk, and adds
// its token sets' accumulators at the end; the host path adds tokens in order.
//
// Revision 2 (the rules beside DecodePartitionsLaunch in decode_launch.hpp): a partition
// without tokens writes only l = 0, m = -inf (partition 0 first reads q, to find non-finite
// rows); a partition whose rows saw no token writes no partial row; a non-finite query row
// gives l = m = NaN and no partial row, counted once by partition 0; with `direct` (P = 1)
// the team writes out (and lse) itself instead of partial rows.
//
// Revision 3 (spec §5.9, DecodeQueriesLaunch): a sequence with n_b query tokens is still one
// team per (sequence, KV head, partition); it loads each chunk (or, on hosts, decodes each
// token's K and V) once and runs the one-token arithmetic above once per query token on it — a
// row block of QG rows that sees the tokens below visible_tokens(L, n_b, j), taking exactly the
// steps a one-token decode of that length takes. So a row gives the bits of that one-token
// decode (with n_b = 1: of the one-token decode itself), and the KV bytes are read once for all
// n_b x QG rows. Row blocks past the first keep their state in level-1 scratch.
#pragma once

#include "uq/core/sequence_rules.hpp"
#include "uq/error.hpp"
#include "uq/impl/e4m3_rounding.hpp"
#include "uq/impl/host_simd.hpp"
#include "uq/impl/math.hpp"
#include "uq/impl/status_counters.hpp"
#include "uq/impl/team_policy.hpp"
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

// UQ_GENERIC_DECODE_TEAM_PATH_ON_HOST=1 runs the GPU (team) path of the partition kernel on
// host backends too, one thread per team: a way to check that path's arithmetic with the host
// test suites on a machine without a GPU (it is slow there; no build sets it by default).
#ifndef UQ_GENERIC_DECODE_TEAM_PATH_ON_HOST
#define UQ_GENERIC_DECODE_TEAM_PATH_ON_HOST 0
#endif

template <int QG, class ExecSpace, class QView, class TableView, class LenView, class CountView, class OutView,
          class LseView,
          class StartView = Kokkos::View<const std::int32_t*, Kokkos::LayoutStride, typename ExecSpace::memory_space>>
struct DecodePartitionsGeneric {
  // 256 threads, at least 4 teams per multiprocessor: the kernel is issue-bound, so
  // occupancy (warps to hide latency) matters more than a few registers.
  using policy = TeamPolicyFor<ExecSpace, Kokkos::LaunchBounds<256, 4>>;
  using member = typename policy::member_type;
  using MemSpace = typename ExecSpace::memory_space;

  // Host backends (one thread per team) take process_tile_host, GPUs process_chunk.
  static constexpr bool kHostLoops = runs_on_host<ExecSpace>() && !UQ_GENERIC_DECODE_TEAM_PATH_ON_HOST;
  static constexpr int kTile = kTileTokens;  // 16 tokens: the softmax step
  // Tokens per load step, the largest whose scratch fits the default 48 KiB (QG 16 also
  // keeps 4 teams per multiprocessor with it).
  static constexpr int kChunk = QG <= 6 ? 64 : QG <= 8 ? 32 : 16;
  static constexpr int kTilesPerChunk = kChunk / kTile;
  static constexpr int kSlot = ultraquant::kSlotContent;  // 272 bytes used of each slot
  static constexpr int kGroups = kHeadDim / ultraquant::kGroup;  // 8 scale groups per K or V row
  // QK: a token's 8 groups over kSplits threads, kSplits * kChunk = 256 work items (QG 16: 64,
  // 4 splits: with 8 the partial sums would leave QG 16's scratch 16 bytes over the 48 KiB a
  // block may hold, and the launch fails without an error in Kokkos' release builds).
  static constexpr int kSplits = QG > 8 ? 4 : (kHeadDim / kChunk < kGroups ? kHeadDim / kChunk : kGroups);
  static constexpr int kGroupsPerSplit = kGroups / kSplits;
  // P.V: a thread owns kPvDims consecutive dimensions of every row for the tokens of one of
  // kPvSets token sets (token t of a tile goes to set t % kPvSets): all 256 threads busy, each
  // V code decoded once, and every set keeps its own fp32 acc (summed in set order at the end).
  static constexpr int kPvDims = QG <= 8 ? 2 : 1;
  static constexpr int kPvThreads = kHeadDim / kPvDims;  // threads that cover one token
  static constexpr int kPvSets = kHeadDim / kPvThreads;  // (team size 256 on GPUs)
  static constexpr int kRowsPad = (QG + 3) / 4 * 4;      // p of a token: kRowsPad floats (float4 loads)

  // Scratch layout (bytes): the slot chunk first (16-byte aligned), then float arrays.
  static constexpr int kTileBytesOff = 0;
  static constexpr int kTileBytes = kChunk * kSlot;
  static constexpr int kAccOff = kTileBytes;                                   // float [kPvSets][QG][256]
  static constexpr int kPartOff = kAccOff + kPvSets * QG * kHeadDim * 4;       // float [kSplits][QG][kChunk]
  static constexpr int kPOff = kPartOff + kSplits * QG * kChunk * 4;          // float [kChunk][kRowsPad]
  static constexpr int kAlphaOff = kPOff + kChunk * kRowsPad * 4;             // float [QG][kTilesPerChunk]
  static constexpr int kBetaOff = kAlphaOff + QG * kTilesPerChunk * 4;        // float [QG][kTilesPerChunk]
  static constexpr int kMrunOff = kBetaOff + QG * kTilesPerChunk * 4;         // float [QG][kTilesPerChunk]
  static constexpr int kStateOff = kMrunOff + QG * kTilesPerChunk * 4;        // float m[QG], l[QG], a[QG]
  static constexpr int kLutOff = kStateOff + 3 * QG * 4;                      // float [16]: fp4_times(code, 1)
  static constexpr int kQ8Off = (kLutOff + 16 * 4 + 15) / 16 * 16;            // float [QG][256] (E4M3 values)
  static constexpr int kTilesPerGroup = kTileGroupTokens / kTile;             // 16
  static constexpr int kTileInfoOff = kQ8Off + QG * kHeadDim * 4;             // int64 [kTilesPerGroup][2]
  static constexpr int kScratchBytes = kTileInfoOff + kTilesPerGroup * 16 + 16;
  // Kokkos' CUDA backend takes 8 * (team size + 2) bytes of the block's 48 KiB before the team's
  // scratch (its team-reduction space), and its kernels hold 48 bytes of static shared memory
  // (ptxas -v of this kernel, Kokkos 3.4); a block over 48 KiB is not launched, and Kokkos'
  // release builds do not check the launch. 512 bytes of margin for other Kokkos versions.
  static constexpr int kBackendReserveBytes = 8 * (kHeadDim + 2) + 48 + 512;
  static_assert(kScratchBytes + kBackendReserveBytes <= 48 * 1024, "decode scratch must fit the default 48 KiB");
  static_assert(kPvSets * kPvThreads == kHeadDim && kTile % kPvSets == 0, "P.V sets tile a tile");
  static_assert(kPOff % 16 == 0, "p is read as 16-byte vectors");
  // Host backends only, in level-1 scratch: kHostStep decoded tokens and the code-pair
  // table of process_tile_host.
  static constexpr int kHostStep = 4;                               // tokens per step
  static constexpr int kHostKvOff = 0;                              // float [kHostStep][256]
  static constexpr int kHostPairsOff = kHostStep * kHeadDim * 4;    // float [256][2]
  static constexpr int kHostScratchBytes = kHostPairsOff + 256 * 2 * 4;
  static_assert(kTile % kHostStep == 0, "host steps tile a tile");
  static_assert(kSplits >= 2, "the softmax keeps scores and unrounded p in splits 0 and 1 of part");
  static_assert(kChunk * kRowsPad >= QG * kTile && kSplits * kChunk >= kTile, "host tiles fit pw and part");
  static_assert(kQ8Off % 16 == 0, "q8 is read as 16-byte vectors");
  static_assert(QG <= 31, "non-finite rows are a bit mask in an int");
  // Several query tokens per sequence (spec §5.9): the team runs its one-token arithmetic once
  // per query token (a row block of QG rows) over each chunk it loads, so a KV tile is read once
  // for all n_b x QG rows. Row block 0 keeps its state in the level-0 arrays above, blocks
  // 1 .. max_query_len - 1 in level-1 scratch (global memory on GPUs), kBlockFloats each: acc,
  // q8, m and l, and the host path's scores and p of a tile.
  static constexpr int kBlockAccOff = 0;                                 // [kPvSets][QG][256]
  static constexpr int kBlockQ8Off = kPvSets * QG * kHeadDim;            // [QG][256]
  static constexpr int kBlockMOff = kBlockQ8Off + QG * kHeadDim;         // [QG]
  static constexpr int kBlockLOff = kBlockMOff + QG;                     // [QG]
  static constexpr int kBlockScOff = kBlockMOff + (2 * QG + 3) / 4 * 4;  // [QG][16] (host path)
  static constexpr int kBlockPwOff = kBlockScOff + QG * kTile;           // [QG][16] (host path)
  static constexpr int kBlockFloats = kBlockPwOff + QG * kTile;
  static_assert(kBlockQ8Off % 4 == 0 && kBlockFloats % 4 == 0, "q8 and every block start 16-byte aligned");
  static KOKKOS_INLINE_FUNCTION constexpr std::int64_t extra_scratch_bytes(int max_query_len) {
    return max_query_len > 1 ? static_cast<std::int64_t>(max_query_len - 1) * kBlockFloats * 4 : 0;
  }

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
  // Several query tokens per sequence (spec §5.9): sequence b's query tokens are the rows
  // query_start_loc(b) .. query_start_loc(b + 1) - 1 of q, out and lse (a malformed range is
  // skipped, counted), or, without query_start_loc (data() == nullptr), rows
  // b * query_len .. b * query_len + query_len - 1. The one-token decode is query_len = 1.
  StartView query_start_loc;
  int query_len = 1;
  int max_query_len = 1;              // the largest n_b: row blocks of level-1 scratch
  std::int64_t num_query_tokens = 0;  // T, the bound of the ranges
  int num_seqs = 0;

  // Sequence length as the kernel uses it (spec §6), counted once per sequence.
  KOKKOS_INLINE_FUNCTION std::int64_t clamped_len(int b, bool counting) const {
    const RequestLength r = request_length(static_cast<std::int64_t>(seq_lens(b)),
                                           static_cast<std::int64_t>(max_blocks_per_seq) * cache.block_size);
    if (counting && r.negative) count(counts, Counter::negative_seq_lens);
    if (counting && r.too_long) count(counts, Counter::long_seq_lens);
    return r.tokens;
  }

  // Bit r set: query row r of KV head h of query token `row` (the sequence, with one query token
  // per sequence) holds a NaN or an infinity. Reads q only.
  KOKKOS_INLINE_FUNCTION int nonfinite_rows(const member& team, std::int64_t row, int h) const {
    int mask = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(team, QG * kHeadDim),
        [&](int i, int& m) {
          if (bf16_nonfinite(q(row, h * QG + i / kHeadDim, i % kHeadDim))) m |= 1 << (i / kHeadDim);
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
  KOKKOS_INLINE_FUNCTION void write_results(const member& team, std::int64_t b, int h, std::int64_t row0, int bad,
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

  // The query tokens of sequence b (spec §5.9), packed as first_row * 256 + n (n <= 16): one per
  // sequence for the one-token decode (row b), query_len of them in the uniform form, else the
  // sequence's query_start_loc range; -1 for a malformed range (counted once when `counting`).
  KOKKOS_INLINE_FUNCTION std::int64_t query_rows(int b, bool counting) const {
    if (query_start_loc.data() == nullptr) return static_cast<std::int64_t>(b) * query_len * 256 + query_len;
    const std::int64_t s = query_start_loc(b), e = query_start_loc(b + 1);
    if (malformed_start_range<std::int64_t>(s, e, b, num_seqs, num_query_tokens, max_query_len)) {
      if (counting) count(counts, Counter::bad_start_locs);
      return -1;
    }
    return s * 256 + (e - s);
  }

  // Where row block j keeps its state: block 0 in level-0 scratch (the one-token kernel's
  // arrays), blocks 1 .. in level-1 scratch (`extra`, kBlockFloats each).
  struct RowBlock {
    float* acc;
    float* q8;
    float* m;
    float* l;
    float* sc;  // host path: a tile's scores [QG][16]
    float* pw;  // host path: a tile's bf16 p [QG][16]
  };

  static KOKKOS_INLINE_FUNCTION RowBlock extra_block(float* extra, int j) {
    float* x = extra + static_cast<std::int64_t>(j - 1) * kBlockFloats;
    return RowBlock{x + kBlockAccOff, x + kBlockQ8Off, x + kBlockMOff, x + kBlockLOff, x + kBlockScOff, x + kBlockPwOff};
  }

  // Row block `blk` of the query-token row `row`: q8 = e4m3(WHT(fp32(q))) (or e4m3(fp32(q)) when
  // pre-rotated), via acc as fp32 space (a non-finite row computes with q8 = 0: its results are
  // NaN, written at the end), acc = 0, m = -inf, l = 0. Returns the block's non-finite rows
  // (counted by partition 0).
  KOKKOS_INLINE_FUNCTION int prepare_block(const member& team, std::int64_t row, int h, int p, const RowBlock& blk) const {
    int bad = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(team, QG * kHeadDim),
        [&](int i, int& mask) {
          const bf16 x = q(row, h * QG + i / kHeadDim, i % kHeadDim);
          if (bf16_nonfinite(x)) mask |= 1 << (i / kHeadDim);
          blk.acc[i] = codec::bf16_to_float(x);
        },
        Kokkos::BOr<int>(bad));
    count_nonfinite(team, p, bad);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, QG), [&](int r) {
      blk.m[r] = -codec::infinity();
      blk.l[r] = 0.0f;
    });
    team.team_barrier();
    if (!q_rotated) {
      if constexpr (kHostLoops) {  // one thread per team: the serial loops, not 8 team stages
        Kokkos::single(Kokkos::PerTeam(team), [&]() { wht256_rows(blk.acc, QG); });
        team.team_barrier();
      } else {
        wht256_team(team, blk.acc, QG);
      }
    }
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, kPvSets * QG * kHeadDim), [&](int i) {
      if (i < QG * kHeadDim) blk.q8[i] = (bad >> (i / kHeadDim)) & 1 ? 0.0f : round_e4m3_select(blk.acc[i]);
      blk.acc[i] = 0.0f;
    });
    team.team_barrier();
    return bad;
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    const int league = team.league_rank();
    const int p = league % partitions;
    const int h = (league / partitions) % num_kv_heads;
    const int b = league / (partitions * num_kv_heads);
    const bool counting = h == 0 && p == 0;  // per-sequence counts: by one team of the sequence

    // The sequence's query tokens: rows first .. first + n - 1 (the one-token decode: row b).
    std::int64_t rows = 0;
    if (query_start_loc.data() == nullptr) {
      rows = query_rows(b, false);
    } else {
      Kokkos::single(
          Kokkos::PerTeam(team), [&](std::int64_t& r) { r = query_rows(b, counting); }, rows);
    }
    if (rows < 0) return;  // a malformed range: nothing read or written (spec §5.9)
    const std::int64_t first = rows / 256;
    const int n = static_cast<int>(rows % 256);

    std::int64_t L = 0;
    Kokkos::single(
        Kokkos::PerTeam(team), [&](std::int64_t& len) { len = clamped_len(b, counting); }, L);
    if (n == 0) return;
    const int trip = static_cast<int>(partition_trip<std::int64_t>(p, partitions, tgpp, decode_tile_groups(L)));
    // Query token j sees the first vis(j) tokens (vis(n - 1) = L), and this partition holds some
    // of them when p < its tile-groups.
    const auto vis = [&](int j) { return visible_tokens<std::int64_t>(L, n, j); };
    const auto row0_of = [&](int j) {
      return (((first + j) * num_kv_heads + h) * partitions + p) * static_cast<std::int64_t>(QG);
    };
    if (trip == 0) {  // no token: l = 0, m = -inf only (partition 0 also looks at q, spec §6)
      for (int j = 0; j < n; ++j) {
        const int bad = p == 0 ? nonfinite_rows(team, first + j, h) : 0;
        count_nonfinite(team, p, bad);
        write_results(team, first + j, h, row0_of(j), bad, nullptr, nullptr, nullptr);
      }
      return;
    }

    char* base = static_cast<char*>(team.team_shmem().get_shmem_aligned(int(kScratchBytes), 16));
    auto* tile = reinterpret_cast<std::uint8_t*>(base + kTileBytesOff);
    float* acc = reinterpret_cast<float*>(base + kAccOff);
    float* part = reinterpret_cast<float*>(base + kPartOff);
    float* pw = reinterpret_cast<float*>(base + kPOff);
    float* alpha = reinterpret_cast<float*>(base + kAlphaOff);
    float* beta = reinterpret_cast<float*>(base + kBetaOff);
    float* mrun = reinterpret_cast<float*>(base + kMrunOff);
    float* m = reinterpret_cast<float*>(base + kStateOff);
    float* l = m + QG;
    float* chunk_alpha = l + QG;
    float* lut = reinterpret_cast<float*>(base + kLutOff);
    float* q8 = reinterpret_cast<float*>(base + kQ8Off);
    auto* tile_info = reinterpret_cast<std::int64_t*>(base + kTileInfoOff);  // [j][0] = first slot offset or -1, [j][1] = valid tokens
    // Row blocks 1 .. max_query_len - 1 (several query tokens only): level-1 scratch.
    float* extra = max_query_len > 1 ? static_cast<float*>(team.team_scratch(1).get_shmem_aligned(
                                           int(extra_scratch_bytes(max_query_len)), 16))
                                     : nullptr;
    const RowBlock block0{acc, q8, m, l, part, pw};
    const auto block = [&](int j) { return j == 0 ? block0 : extra_block(extra, j); };

    // The FP4 table of the team path (16 codes: conflict-free lookups) and p's padding rows.
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, 16), [&](int c) { lut[c] = ultraquant::fp4_times(c, 1.0f); });
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, kChunk * kRowsPad), [&](int i) { pw[i] = 0.0f; });
    int bad[kMaxDecodeQueryLen];
    for (int j = 0; j < n; ++j) bad[j] = prepare_block(team, first + j, h, p, block(j));

    if constexpr (kHostLoops) {
      char* host = static_cast<char*>(team.team_scratch(1).get_shmem_aligned(int(kHostScratchBytes), 16));
      float* kv = reinterpret_cast<float*>(host + kHostKvOff);
      float* pairs = reinterpret_cast<float*>(host + kHostPairsOff);
      Kokkos::single(Kokkos::PerTeam(team), [&]() {
        RowBlock blocks[kMaxDecodeQueryLen];
        std::int64_t limits[kMaxDecodeQueryLen];
        for (int j = 0; j < n; ++j) {
          blocks[j] = block(j);
          limits[j] = vis(j);
        }
        for (unsigned c = 0; c < 256; ++c) {
          pairs[2 * c] = ultraquant::fp4_times(c & 15u, 1.0f);
          pairs[2 * c + 1] = ultraquant::fp4_times(c >> 4, 1.0f);
        }
        for (int it = 0; it < trip; ++it) {
          const std::int64_t tg = p + static_cast<std::int64_t>(it) * partitions;
          for (int j = 0; j < kTileGroupTokens / kTile; ++j) {
            const std::int64_t T0 = tg * kTileGroupTokens + j * kTile;
            if (T0 >= L) break;  // later tiles change nothing (p = 0, alpha = 1)
            process_tile_host(b, h, T0, L, blocks, limits, n, kv, pairs);
          }
        }
      });
      team.team_barrier();
    } else {
      for (int it = 0; it < trip; ++it) {
        const std::int64_t tg = p + static_cast<std::int64_t>(it) * partitions;
        locate_tiles(team, b, h, tg * kTileGroupTokens, L, tile_info);
        for (int c = 0; c < kTileGroupTokens / kChunk; ++c) {
          const std::int64_t T0c = tg * kTileGroupTokens + c * kChunk;
          if (T0c >= L) break;  // later tiles change nothing (p = 0, alpha = 1)
          const std::int64_t* info = tile_info + 2 * c * kTilesPerChunk;
          load_chunk(team, tile, info);  // once for every query token's rows
          for (int j = 0; j < n; ++j) {
            const std::int64_t limit = vis(j);
            if (T0c >= limit) continue;  // as a one-token decode of length vis(j) would stop here
            const RowBlock blk = block(j);
            process_chunk(team, tile, blk.acc, part, pw, alpha, beta, mrun, blk.m, blk.l, chunk_alpha, blk.q8, lut,
                          info, T0c, limit);
          }
        }
      }
      if (kPvSets > 1) {  // the sets' accumulators, added in set order
        for (int j = 0; j < n; ++j) {
          float* a = block(j).acc;
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, QG * kHeadDim), [&](int i) {
            float x = a[i];
            for (int st = 1; st < kPvSets; ++st) x += a[st * QG * kHeadDim + i];
            a[i] = x;
          });
        }
        team.team_barrier();
      }
    }

    // ---- epilogue: bf16(acc * fl32(1/l)), l, m (or out and lse). A partition that holds no
    // token of row block j leaves it at acc = 0, l = 0, m = -inf, and reads its q only as
    // partition 0 (the state a one-token decode of length vis(j) writes there).
    for (int j = 0; j < n; ++j) {
      const RowBlock blk = block(j);
      const bool holds = p < decode_tile_groups(vis(j));
      write_results(team, first + j, h, row0_of(j), p == 0 || holds ? bad[j] : 0, blk.acc, blk.m, blk.l);
    }
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

  // Rows r0 .. r0 + RB - 1 of q8 dotted with one decoded token x (256 floats), all RB dots
  // in the same pass over x: RB vector accumulators of host_simd::kWidth lanes (d mod the
  // width) as independent chains, x loaded once (one dot at a time was one chain of
  // dependent multiply-adds, latency-bound); the lanes summed as a fixed tree at the end.
  template <int RB>
  static KOKKOS_INLINE_FUNCTION void dot256_rows_host(const float* x, const float* q8, float* out) {
    using namespace host_simd;
    Vec s[RB];
    for (int r = 0; r < RB; ++r) s[r] = splat(0.0f);
    for (int d = 0; d < kHeadDim; d += kWidth) {
      const Vec xv = load(x + d);
      for (int r = 0; r < RB; ++r) s[r] += xv * load(q8 + r * kHeadDim + d);
    }
    for (int r = 0; r < RB; ++r) out[r] = sum_lanes(s[r]);
  }

  // Rows in blocks of kHostDotRows: 6 or 8 accumulators and x fit the 16 vector registers.
  static constexpr int kHostDotRows = QG % 8 == 0 ? 8 : QG;
  static_assert(QG % kHostDotRows == 0, "row blocks tile the rows");

  // acc rows r0 .. r0 + RB - 1 += their p (pw rows, stride kTile) times kHostStep decoded V
  // rows: per dimension the tokens are added in order, as one token at a time would, and
  // each V vector is loaded once for the RB rows.
  template <int RB>
  static KOKKOS_INLINE_FUNCTION void pv_rows_host(const float* p, const float* kv, float* acc) {
    using namespace host_simd;
    Vec pv[RB][kHostStep];
    for (int r = 0; r < RB; ++r)
      for (int u = 0; u < kHostStep; ++u) pv[r][u] = splat(p[r * kTile + u]);
    for (int d = 0; d < kHeadDim; d += kWidth) {
      Vec x[RB];
      for (int r = 0; r < RB; ++r) x[r] = load(acc + r * kHeadDim + d);
      for (int u = 0; u < kHostStep; ++u) {
        const Vec v = load(kv + u * kHeadDim + d);
        for (int r = 0; r < RB; ++r) x[r] += pv[r][u] * v;
      }
      for (int r = 0; r < RB; ++r) store(acc + r * kHeadDim + d, x[r]);
    }
  }
  static constexpr int kHostPvRows = 2;  // 2 x kHostStep p vectors + 2 acc + 1 V: 11 of 16 vector registers
  static_assert(QG % kHostPvRows == 0, "row blocks tile the rows");

  // Host backends (one thread per team): one tile starting at token T0 (< L), read straight
  // from the cache, with the loops ordered for a CPU: K and V decoded once per token into
  // 256 floats, kHostStep tokens at a time, and used for every row of every query token; each
  // row's dots and P.V updates run over contiguous dimensions in independent lanes (vector loops
  // for the CPU compilers; the dots' fp32 summation order is free, spec §5; P.V adds the tokens
  // in order). The softmax steps are process_chunk's, per tile (a block's sc, pw: [QG][16]).
  // Row block j (query token j of n) sees the tokens below limits[j] (L for the one-token
  // decode) and takes exactly the steps a one-token decode of that length would.
  KOKKOS_INLINE_FUNCTION void process_tile_host(int b, int h, std::int64_t T0, std::int64_t L, const RowBlock* blocks,
                                                const std::int64_t* limits, int n, float* kv,
                                                const float* pairs) const {
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
    int block_valid[kMaxDecodeQueryLen];  // the tile's tokens of each row block (<= valid)
    for (int j = 0; j < n; ++j) {
      const std::int64_t room = limits[j] - T0;
      block_valid[j] = static_cast<int>(room <= 0 ? 0 : min_i64(valid, room));
    }
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
      for (int j = 0; j < n; ++j)
        for (int u = 0; u < S && t0 + u < block_valid[j]; ++u)
          for (int r0 = 0; r0 < QG; r0 += kHostDotRows) {
            float dots[kHostDotRows];
            dot256_rows_host<kHostDotRows>(kv + u * kHeadDim, blocks[j].q8 + r0 * kHeadDim, dots);
            for (int r = 0; r < kHostDotRows; ++r) blocks[j].sc[(r0 + r) * kTile + t0 + u] = dots[r] * scale;
          }
    }
    for (int j = 0; j < n; ++j) {
      const int bv = block_valid[j];
      if (bv == 0) continue;  // no token of this tile for these rows (a one-token decode of
                              // their length ends before it)
      const RowBlock& blk = blocks[j];
      for (int r = 0; r < QG; ++r) {
        float tile_max = -codec::infinity();
        for (int t = 0; t < bv; ++t) tile_max = max_f32(tile_max, blk.sc[r * kTile + t]);
        const float m_new = max_f32(blk.m[r], tile_max);
        const float alpha = blk.m[r] == -codec::infinity() ? 1.0f : exp_f32(blk.m[r] - m_new);
        float sum = 0.0f;
        for (int t = 0; t < kTile; ++t) {
          const float p = t >= bv || m_new == -codec::infinity() ? 0.0f : exp_f32(blk.sc[r * kTile + t] - m_new);
          sum += p;                                      // l takes the unrounded p ...
          blk.pw[r * kTile + t] = codec::round_bf16(p);  // ... P.V the bf16-rounded one (0 past valid)
        }
        blk.m[r] = m_new;
        blk.l[r] = blk.l[r] * alpha + sum;
        float* a = blk.acc + r * kHeadDim;
        for (int d = 0; d < kHeadDim; ++d) a[d] *= alpha;
      }
    }
    for (int t0 = 0; t0 < valid; t0 += S) {
      decode_step(t0, ultraquant::kVCodes, ultraquant::kVScales);
      for (int j = 0; j < n; ++j) {
        if (t0 >= block_valid[j]) continue;
        const RowBlock& blk = blocks[j];
        const int nt = block_valid[j] - t0 < S ? block_valid[j] - t0 : S;
        if (nt == S) {
          for (int r0 = 0; r0 < QG; r0 += kHostPvRows)
            pv_rows_host<kHostPvRows>(blk.pw + r0 * kTile + t0, kv, blk.acc + r0 * kHeadDim);
        } else {
          for (int r = 0; r < QG; ++r) {
            const float* pr = blk.pw + r * kTile + t0;
            float* a = blk.acc + r * kHeadDim;
            for (int u = 0; u < nt; ++u)
              for (int d = 0; d < kHeadDim; ++d) a[d] += pr[u] * kv[u * kHeadDim + d];
          }
        }
      }
    }
  }

  // Where each tile of the tile-group starting at token T0g is (tiles never cross a block:
  // block_size is a multiple of 16): tile_info[2j] = its first slot's offset or -1,
  // tile_info[2j + 1] = its valid tokens (0 when absent or past L). Bad block ids make the
  // tile absent and are counted once, by the tile at the block's start, in the team of KV
  // head 0. One pass per tile-group: the block-table reads of all its tiles in flight at once.
  KOKKOS_INLINE_FUNCTION void locate_tiles(const member& team, int b, int h, std::int64_t T0g, std::int64_t L,
                                           std::int64_t* tile_info) const {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, kTilesPerGroup), [&](int j) {
      const std::int64_t T0 = T0g + j * kTile;
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
  }

  // Copies the valid slots of the chunk's tiles (kSlot bytes each, pos_stride apart) into
  // scratch, all tiles in one range: every thread has several independent loads in flight.
  KOKKOS_INLINE_FUNCTION void load_chunk(const member& team, std::uint8_t* dst, const std::int64_t* tile_info) const {
    const auto src = [&](int t) { return cache.base + tile_info[2 * (t / kTile)] + (t % kTile) * cache.pos_stride; };
    const auto present = [&](int t) { return t % kTile < tile_info[2 * (t / kTile) + 1]; };
    if (cache.load_bytes == 16) {
      constexpr int per_slot = kSlot / 16;  // 17
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, kChunk * per_slot), [&](int i) {
        const int t = i / per_slot, u = i % per_slot;
        if (present(t)) reinterpret_cast<Bytes16*>(dst + t * kSlot)[u] = reinterpret_cast<const Bytes16*>(src(t))[u];
      });
    } else if (cache.load_bytes == 4) {
      constexpr int per_slot = kSlot / 4;  // 68
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, kChunk * per_slot), [&](int i) {
        const int t = i / per_slot, u = i % per_slot;
        if (present(t))
          reinterpret_cast<std::uint32_t*>(dst + t * kSlot)[u] = reinterpret_cast<const std::uint32_t*>(src(t))[u];
      });
    } else {
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, kChunk * kSlot), [&](int i) {
        const int t = i / kSlot, u = i % kSlot;
        if (present(t)) dst[t * kSlot + u] = src(t)[u];
      });
    }
    team.team_barrier();
  }

  // One chunk of kTilesPerChunk tiles starting at token T0c (tile_info: theirs, from
  // locate_tiles; their slots loaded into `tile` by load_chunk), on the team (GPUs), for the
  // QG rows of one query token that sees the tokens below `limit` (L for the one-token decode):
  // a tile's tokens at or past the limit are not the rows' (as in a decode of length limit).
  KOKKOS_INLINE_FUNCTION void process_chunk(const member& team, const std::uint8_t* tile, float* acc, float* part,
                                            float* pw, float* alpha, float* beta, float* mrun, float* m, float* l,
                                            float* chunk_alpha, const float* q8, const float* lut,
                                            const std::int64_t* tile_info, std::int64_t T0c, std::int64_t limit) const {
    int tile_valid[kTilesPerChunk];  // each tile's tokens for these rows
    for (int j = 0; j < kTilesPerChunk; ++j) {
      const std::int64_t room = limit - (T0c + j * kTile);
      tile_valid[j] = static_cast<int>(room <= 0 ? 0 : min_i64(tile_info[2 * j + 1], room));
    }

    // QK: thread (split s, token t) scores groups s*kGroupsPerSplit.. of token t for every
    // row. Each K code is decoded once, through the 16-code table, and used for every row;
    // the group's half scale multiplies the group's sum (exact: a power of two, so the sum is
    // the one of the scaled elements); q8 is read 4 floats at a time, the same address for
    // the whole warp (consecutive threads take consecutive tokens).
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, kSplits * kChunk), [&](int i) {
      const int s = i / kChunk, t = i % kChunk;
      float sum[QG];
      for (int r = 0; r < QG; ++r) sum[r] = 0.0f;
      if (t % kTile < tile_valid[t / kTile]) {
        const std::uint8_t* slot = tile + t * kSlot;
        for (int g = s * kGroupsPerSplit; g < (s + 1) * kGroupsPerSplit; ++g) {
          const std::uint8_t sb = slot[ultraquant::kKScales + g];
          if (sb == 0) continue;  // zero group
          const auto* words = reinterpret_cast<const std::uint32_t*>(slot + ultraquant::kKCodes + g * 16);
          // Rows innermost: QG independent FMA chains instead of one (latency hiding).
          float inner[QG];
          for (int r = 0; r < QG; ++r) inner[r] = 0.0f;
          for (int w = 0; w < 4; ++w) {
            const std::uint32_t codes = words[w];
            for (int hw = 0; hw < 2; ++hw) {
              const std::uint32_t c4 = codes >> (16 * hw);
              const float k0 = lut[c4 & 15u], k1 = lut[(c4 >> 4) & 15u], k2 = lut[(c4 >> 8) & 15u],
                          k3 = lut[(c4 >> 12) & 15u];
              for (int r = 0; r < QG; ++r) {
                const Floats4 q4 =
                    reinterpret_cast<const Floats4*>(q8 + r * kHeadDim + g * ultraquant::kGroup)[2 * w + hw];
                inner[r] += k0 * q4.v[0];
                inner[r] += k1 * q4.v[1];
                inner[r] += k2 * q4.v[2];
                inner[r] += k3 * q4.v[3];
              }
            }
          }
          const float hs = ultraquant::half_scale(sb);
          for (int r = 0; r < QG; ++r) sum[r] += inner[r] * hs;
        }
      }
      for (int r = 0; r < QG; ++r) part[(s * QG + r) * kChunk + t] = sum[r];
    });
    team.team_barrier();

    // Online softmax, tile by tile in token order, in four steps so that the exps and
    // sums run on many threads; only the running max and l are serial (per row, one
    // value per tile). s overwrites split 0 of part, the unrounded p split 1.
    float* sc = part;                // [QG][kChunk] scores
    float* pu = part + QG * kChunk;  // [QG][kChunk] unrounded p
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, QG * kTilesPerChunk), [&](int i) {
      const int r = i / kTilesPerChunk, j = i % kTilesPerChunk;
      const int valid = tile_valid[j];
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
    // Per row: the running max after each tile, the tile's alpha, and beta_j = the product
    // of the later tiles' alphas in this chunk (P.V scales tile j's p by it instead of
    // scaling acc after every tile; acc takes the chunk's product once: a different fp32
    // grouping of the same products).
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, QG), [&](int r) {
      float mr = m[r];
      for (int j = 0; j < kTilesPerChunk; ++j) {
        const float m_new = max_f32(mr, mrun[r * kTilesPerChunk + j]);
        alpha[r * kTilesPerChunk + j] = mr == -codec::infinity() ? 1.0f : exp_f32(mr - m_new);
        mrun[r * kTilesPerChunk + j] = m_new;  // the max the tile's p are taken against
        mr = m_new;
      }
      m[r] = mr;
      float bj = 1.0f;
      for (int j = kTilesPerChunk - 1; j >= 0; --j) {
        beta[r * kTilesPerChunk + j] = bj;
        bj *= alpha[r * kTilesPerChunk + j];
      }
      chunk_alpha[r] = bj;
    });
    team.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, QG * kChunk), [&](int i) {
      const int r = i / kChunk, ct = i % kChunk;
      const float mj = mrun[r * kTilesPerChunk + ct / kTile];
      const float p = mj == -codec::infinity() ? 0.0f : exp_f32(sc[i] - mj);
      pu[i] = p;                                                                  // l takes the unrounded p ...
      pw[ct * kRowsPad + r] = codec::round_bf16(p) * beta[r * kTilesPerChunk + ct / kTile];  // ... P.V the bf16 one
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

    // P.V: thread (set st, dims c*kPvDims..) adds the tokens t % kPvSets == st of every tile
    // into its set's acc, held in registers for the chunk; each V code is decoded once through
    // the table, and a token's p (all rows) is read as float4s, the same address for a warp.
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, kPvSets * kPvThreads), [&](int i) {
      const int st = i / kPvThreads, c = i % kPvThreads;
      float* as = acc + st * QG * kHeadDim + c * kPvDims;
      float a[QG][kPvDims];
      for (int r = 0; r < QG; ++r)
        for (int e = 0; e < kPvDims; ++e) a[r][e] = as[r * kHeadDim + e] * chunk_alpha[r];
      const int scale_at = ultraquant::kVScales + (c * kPvDims) / ultraquant::kGroup;
      for (int j = 0; j < kTilesPerChunk; ++j) {
        const int valid = tile_valid[j];
        for (int t = st; t < valid; t += kPvSets) {
          const int ct = j * kTile + t;
          const std::uint8_t* slot = tile + ct * kSlot;
          const float hs = ultraquant::half_scale(slot[scale_at]);
          float v[kPvDims];
          if constexpr (kPvDims == 2) {
            const unsigned byte = slot[ultraquant::kVCodes + c];
            v[0] = lut[byte & 15u] * hs;
            v[1] = lut[byte >> 4] * hs;
          } else {
            const unsigned byte = slot[ultraquant::kVCodes + c / 2];
            v[0] = lut[(byte >> (4 * (c & 1))) & 15u] * hs;
          }
          const Floats4* p4 = reinterpret_cast<const Floats4*>(pw + ct * kRowsPad);
          for (int r4 = 0; r4 < kRowsPad / 4; ++r4) {
            const Floats4 pr = p4[r4];
            for (int u = 0; u < 4; ++u) {
              if (4 * r4 + u >= QG) break;
              for (int e = 0; e < kPvDims; ++e) a[4 * r4 + u][e] += pr.v[u] * v[e];
            }
          }
        }
      }
      for (int r = 0; r < QG; ++r)
        for (int e = 0; e < kPvDims; ++e) as[r * kHeadDim + e] = a[r][e];
    });
    team.team_barrier();
  }

  void launch(const ExecSpace& exec) const {
    // DecodePlan checks max_seqs * num_kv_heads * partitions <= 2^31 - 1.
    const int league = static_cast<int>(static_cast<std::int64_t>(num_seqs) * num_kv_heads * partitions);
    if (league == 0) return;
    policy pol = runs_on_host<ExecSpace>() ? policy(exec, league, 1) : policy(exec, league, kHeadDim);
    pol.set_scratch_size(0, Kokkos::PerTeam(kScratchBytes));
    // Level 1: the host path's tables and the row blocks past the first (two allocations of
    // 16-byte alignment: 16 bytes of slack each).
    const std::int64_t level1 = (kHostLoops ? kHostScratchBytes + 16 : 0) +
                                (max_query_len > 1 ? extra_scratch_bytes(max_query_len) + 16 : 0);
    if (level1 > 0) pol.set_scratch_size(1, Kokkos::PerTeam(static_cast<int>(level1)));
    static_assert(fits_kernel_argument<std::decay_t<decltype(*this)>>, "the functor must travel as a kernel argument");
    Kokkos::parallel_for(max_query_len > 1 ? "uq::decode::queries" : "uq::decode::partitions", pol, *this);
  }
};

}  // namespace impl
}  // namespace uq
