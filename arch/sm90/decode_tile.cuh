// The partition kernel's view of its work (spec ultraquant.md §5 map, §6 length rules) and its
// loads: warp 0 reads the block table (32 entries per load, a batch ahead), decides which of a
// tile's 64 tokens are present, publishes that as the stage's mask and copies the present
// tokens' slots into the stage, either with the copy engine (cp.async.bulk: a block's run of
// rows, or a tensor-map box of one KV head's rows; completing on the stage's mbarrier) or, for
// caches whose slots are not 16-byte aligned, with plain loads by the whole CTA.
#pragma once

#include "sm90/decode_args.hpp"
#include "sm90/ptx.cuh"
#include "uq/core/sequence_rules.hpp"

#include <cstdint>

namespace uq::sm90 {
namespace decode_detail {

// Partition (b, h, p) covers tile-groups p, p + P, ... (at most TGPP) of sequence b, each split
// into 4 tiles of 64 tokens; only tiles that start below L are visited. The partitions that
// hold tokens are exactly p < min(P, ceil(L / 256)) (tile-group p is partition p's first).
struct Partition {
  int b, h, p;
  std::int64_t row0;  // first partial row
  int L;              // sequence length, clamped (token indices fit in 32 bits: seq_lens are int32)
  int n_tiles;        // tiles of this partition with T0 < L
};

// What the CTAs of one (sequence, KV head) share: its length, read once.
struct SeqView {
  int b, h;
  unsigned bh;   // b * num_kv_heads + h
  int L;         // clamped length
  int filled;    // partitions that hold tokens: min(P, ceil(L / 256))
  int workers;   // CTAs r < workers of (b, h) take its filled partitions (CTA r: r, r + workers, ...)
};

// Partitions with tokens each CTA of a short sequence takes at least: R (= ctas_per_bh) is
// chosen for the longest length the table holds (decode_grid.hpp), which spreads a short
// sequence's few partitions over as many CTAs, each paying the ramp (length -> table -> copies)
// for a tile or two. A sequence that fills a fraction f of the table's partitions gets
// max(ceil(f R), ceil(filled / kMinFilledPerCta)) CTAs (at most R): R at full length, as the
// grid model planned, and 1..R CTAs of >= 8 partitions below it (an engine's plan with ragged
// short lengths: docs/perf-log/2026-12-01-engine-plan-reducer-rows.md). The other CTAs write empty
// partitions only.
constexpr int kMinFilledPerCta = 8;

// 32-bit arithmetic throughout (a 64-bit division by a run-time value is a long subroutine).
// `counts`: this CTA counts the sequence's bad lengths (one CTA per sequence must).
__device__ __forceinline__ SeqView locate_seq(const DecodeKernelArgs& a, unsigned bh, bool counts) {
  SeqView s;
  const unsigned hk = static_cast<unsigned>(a.num_kv_heads);
  s.bh = bh;
  s.b = static_cast<int>(bh / hk);
  s.h = static_cast<int>(bh - static_cast<unsigned>(s.b) * hk);
  const uq::impl::RequestLength len = uq::impl::request_length(
      a.seq_lens[s.b * a.seq_lens_stride], static_cast<std::int64_t>(a.max_blocks_per_seq) * a.block_size);
  counts = counts && threadIdx.x == 0 && s.h == 0;
  if (counts && len.negative) atomicAdd(&a.counters[kCounterNegativeSeqLens], 1ull);
  if (counts && len.too_long) atomicAdd(&a.counters[kCounterLongSeqLens], 1ull);
  s.L = static_cast<int>(len.tokens);
  const int total_tg = static_cast<int>(uq::impl::decode_tile_groups(static_cast<unsigned>(s.L)));
  s.filled = total_tg < a.partitions ? total_tg : a.partitions;
  const std::uint64_t table_tg = uq::impl::decode_tile_groups<std::uint64_t>(
      static_cast<std::uint64_t>(a.max_blocks_per_seq) * static_cast<std::uint64_t>(a.block_size));
  // filled at the table's length (>= filled)
  const int full = table_tg < static_cast<std::uint64_t>(a.partitions) ? static_cast<int>(table_tg) : a.partitions;
  const int R = a.ctas_per_bh;
  const int by_fraction = full > 0 ? static_cast<int>((static_cast<long long>(R) * s.filled + full - 1) / full) : 1;
  const int by_minimum = (s.filled + kMinFilledPerCta - 1) / kMinFilledPerCta;
  const int w = by_fraction > by_minimum ? by_fraction : by_minimum;
  s.workers = w < 1 ? 1 : (w > R ? R : w);
  return s;
}

// Where l and m of query row `row` of partition w go (decode_args.hpp, partial_lm_index).
__device__ __forceinline__ std::int64_t partition_lm_index(const DecodeKernelArgs& a, const Partition& w, int row, int qg) {
  return partial_lm_index(static_cast<std::int64_t>(w.b) * a.num_kv_heads + w.h, row, w.p, a.partitions, qg);
}

// Partition p of the sequence view s (no memory access).
__device__ __forceinline__ Partition partition_of(const DecodeKernelArgs& a, const SeqView& s, int p, int qg) {
  Partition w;
  w.b = s.b;
  w.h = s.h;
  w.p = p;
  w.L = s.L;
  w.row0 = (static_cast<std::int64_t>(s.bh) * static_cast<unsigned>(a.partitions) + p) * qg;
  const unsigned total_tg = uq::impl::decode_tile_groups(static_cast<unsigned>(s.L));
  const int trip = static_cast<int>(uq::impl::partition_trip<unsigned>(
      static_cast<unsigned>(p), static_cast<unsigned>(a.partitions), static_cast<unsigned>(a.tgpp), total_tg));
  w.n_tiles = 0;
  if (trip > 0) {
    const int last_tg = p + (trip - 1) * a.partitions;
    const int rest = s.L - last_tg * kTileGroupTokens;  // > 0
    const int last_tiles = (rest + kTileTokens - 1) >> 6;
    w.n_tiles = (trip - 1) * kTilesPerGroup + (last_tiles < kTilesPerGroup ? last_tiles : kTilesPerGroup);
  }
  return w;
}

__device__ __forceinline__ int tile_start(const Partition& w, const DecodeKernelArgs& a, int i) {
  return (w.p + (i >> 2) * a.partitions) * kTileGroupTokens + (i & 3) * kTileTokens;
}

// Block-table entries of the tiles' "units" (unit u = sub-block j of tile i, u = i * nbpt + j,
// nbpt = 64 / block_size blocks per tile for block sizes below 64, else 1), 32 units per warp
// register: `cur` holds units [base, base + 32), `next` the 32 after them, loaded a batch early
// so that a tile's issue never waits for the table. An entry is -1 for a unit that is not
// needed (past L or past the partition).
struct TableCache {
  int cur, next;
  int base;
};

__device__ __forceinline__ int load_unit(const DecodeKernelArgs& a, const Partition& w, int nbpt, int sub, int u) {
  const int i = nbpt == 1 ? u : (nbpt == 2 ? u >> 1 : u >> 2), j = u - i * nbpt;  // nbpt: 1, 2 or 4
  if (i >= w.n_tiles) return -1;
  const int t = tile_start(w, a, i) + j * sub;
  if (t >= w.L) return -1;
  return a.block_tables[w.b * a.table_stride_seq + static_cast<std::int64_t>(t >> a.block_shift) * a.table_stride_block];
}

__device__ __forceinline__ void table_init(TableCache& c, const DecodeKernelArgs& a, const Partition& w, int nbpt, int sub,
                                           int lane) {
  c.base = 0;
  c.cur = load_unit(a, w, nbpt, sub, lane);
  c.next = load_unit(a, w, nbpt, sub, 32 + lane);
}

// Entry of unit u (warp-uniform, non-decreasing from call to call).
__device__ __forceinline__ int table_get(TableCache& c, const DecodeKernelArgs& a, const Partition& w, int nbpt, int sub,
                                         int u, int lane) {
  if (u >= c.base + 32) {  // warp-uniform
    c.base += 32;
    c.cur = c.next;
    c.next = load_unit(a, w, nbpt, sub, c.base + 32 + lane);
  }
  return __shfl_sync(0xffffffffu, c.cur, u - c.base);
}

// Warp 0: the present-token mask of tile i and its block ids (lane j < nbpt holds sub-block j's
// id, -1 when absent); counts bad block ids (once per (sequence, logical block), in KV head 0,
// by the tile holding the block's first token: every needed block is seen exactly there).
struct TileInfo {
  std::uint64_t mask;
  int id;    // lane j < nbpt: physical block of sub-block j (-1: absent or not needed)
  int T0;    // first token
  int ntok;  // tokens below L (1..64)
};

__device__ __forceinline__ TileInfo tile_info(TableCache& c, const DecodeKernelArgs& a, const Partition& w, int nbpt, int sub,
                                              int i, int lane) {
  TileInfo ti;
  ti.T0 = tile_start(w, a, i);
  const int left = w.L - ti.T0;
  ti.ntok = left < kTileTokens ? left : kTileTokens;
  int id = -1;
  for (int j = 0; j < nbpt; ++j) {
    const int e = table_get(c, a, w, nbpt, sub, i * nbpt + j, lane);
    if (lane == j) id = e;
  }
  // lane j < nbpt: validity of sub-block j (needed: its first token < L)
  const bool needed = lane < nbpt && lane * sub < ti.ntok;
  const bool good = needed && id >= 0 && static_cast<std::int64_t>(id) < a.num_blocks;
  if (needed && !good) {
    if (w.h == 0 && ((ti.T0 + lane * sub) & (a.block_size - 1)) == 0)
      atomicAdd(&a.counters[kCounterBadBlockIds], 1ull);
  }
  ti.id = good ? id : -1;
  const unsigned good_bits = __ballot_sync(0xffffffffu, good);  // bit j: sub-block j present
  // token k present: k < ntok and its sub-block k / sub present
  const int sub_shift = sub == 64 ? 6 : a.block_shift;  // sub = min(block_size, 64)
  auto present = [&](int k) { return k < ti.ntok && ((good_bits >> (k >> sub_shift)) & 1u); };
  const unsigned lo = __ballot_sync(0xffffffffu, present(lane));
  const unsigned hi = __ballot_sync(0xffffffffu, present(lane + 32));
  ti.mask = static_cast<std::uint64_t>(lo) | (static_cast<std::uint64_t>(hi) << 32);
  return ti;
}

// Slot of token T (in physical block id) for KV head h.
__device__ __forceinline__ const std::uint8_t* slot_address(const DecodeKernelArgs& a, const Partition& w, int id, int T) {
  return a.cache + id * a.block_stride + (T & (a.block_size - 1)) * a.pos_stride + static_cast<std::int64_t>(w.h) * a.slot_bytes;
}

// Warp 0, copy-engine paths: publishes tile i's mask in meta[stage], announces its bytes on the
// stage's mbarrier and starts the copies: kCopyRuns, one per sub-block run of contiguous rows;
// kCopyBoxes, one tensor-map copy per present sub-block (`slots`: the cache as [block][position]
// [KV head][34 x 8 bytes], decode.cu), always whole boxes of `sub` rows (the rows past L of the
// last one lie in its block and are masked).
template <int kCopy>
__device__ __forceinline__ void issue_tile(TableCache& c, const DecodeKernelArgs& a, const Partition& w, int nbpt, int sub,
                                           int i, std::uint32_t stage_addr, std::uint32_t meta_addr, std::uint32_t bar,
                                           std::uint64_t policy, const void* slots, int lane) {
  static_assert(kCopy == kCopyRuns || kCopy == kCopyBoxes, "copy-engine kinds only");
  const TileInfo ti = tile_info(c, a, w, nbpt, sub, i, lane);
  std::uint32_t rows;
  if constexpr (kCopy == kCopyBoxes) rows = static_cast<std::uint32_t>(__popc(__ballot_sync(0xffffffffu, ti.id >= 0)) * sub);
  else rows = static_cast<std::uint32_t>(__popcll(ti.mask));
  if (lane == 0) {
    asm volatile("st.shared.u64 [%0], %1;\n" ::"r"(meta_addr), "l"(ti.mask) : "memory");
    ptx::mbarrier_arrive_expect_tx(bar, rows * kRowBytes);
  }
  __syncwarp();
  if (ti.id >= 0) {  // lane j < nbpt: sub-block j, rows j * sub ..
    const int k0 = lane * sub;
    if constexpr (kCopy == kCopyBoxes) {
      ptx::tensor_copy_4d_g2s(stage_addr + k0 * kRowBytes, slots, 0, w.h, (ti.T0 + k0) & (a.block_size - 1), ti.id, bar,
                              policy);
    } else {  // rows k0 .. min(k0 + sub, ntok) - 1
      const int k1 = k0 + sub < ti.ntok ? k0 + sub : ti.ntok;
      ptx::bulk_copy_g2s(stage_addr + k0 * kRowBytes, slot_address(a, w, ti.id, ti.T0 + k0),
                         static_cast<std::uint32_t>(k1 - k0) * kRowBytes, bar, policy);
    }
  }
}

// Synchronous path (kCopySync): warp 0 computes the mask and ids and publishes
// them (meta[stage], ids[4]); after a barrier the whole CTA copies the present rows with 4-byte
// (kWordLoads) or 1-byte loads; the caller then synchronises again.
__device__ __forceinline__ void publish_tile_sync(TableCache& c, const DecodeKernelArgs& a, const Partition& w, int nbpt,
                                                  int sub, int i, std::uint64_t* meta, int* t0, int* ids,
                                                  int lane) {
  const TileInfo ti = tile_info(c, a, w, nbpt, sub, i, lane);
  if (lane == 0) {
    *meta = ti.mask;
    *t0 = ti.T0;
  }
  if (lane < 4) ids[lane] = ti.id;
}

__device__ __forceinline__ void copy_tile_sync(const DecodeKernelArgs& a, const Partition& w, int sub, std::uint64_t mask,
                                               int T0, const int* ids, unsigned char* stage) {
  if (a.flags & kWordLoads) {
    for (int f = threadIdx.x; f < kTileTokens * (kRowBytes / 4); f += kThreads) {
      const int k = f / (kRowBytes / 4), e = f - k * (kRowBytes / 4);
      if ((mask >> k) & 1u)
        reinterpret_cast<std::uint32_t*>(stage + k * kRowBytes)[e] =
            reinterpret_cast<const std::uint32_t*>(slot_address(a, w, ids[k / sub], T0 + k))[e];
    }
  } else {
    for (int f = threadIdx.x; f < kTileTokens * kRowBytes; f += kThreads) {
      const int k = f / kRowBytes, e = f - k * kRowBytes;
      if ((mask >> k) & 1u) stage[k * kRowBytes + e] = slot_address(a, w, ids[k / sub], T0 + k)[e];
    }
  }
}

}  // namespace decode_detail
}  // namespace uq::sm90
