// The gfx950 NVFP4 index scorer (spec nvfp4-index.md §4, §6; design in arch/gfx950/README.md,
// "The NVFP4 index scorer"). A workgroup of 4 waves scores one chunk of requests (one lane
// per request, at most 64) at the positions (logical blocks) of its split:
//
//   prologue  the chunk's Q rows into LDS in the keys' dim order (score_dequant.hpp), the
//             dequantisation table into LDS, each lane's request length (negative -> 0, past
//             the block table -> clamped; both counted once per request, by split 0)
//   units     the workgroup walks units of `unit` consecutive positions: units split,
//             split + splits, ... shared by its 4 waves, or (per_wave) units of each wave's
//             own. At each position b every lane decides from the lengths alone whether its
//             request needs block b's page (some row's score is the computed maximum); a
//             block that only needs sentinels (or whose id is bad: counted, its tokens
//             absent) is stored without loading anything. The needed pages are deduplicated
//             with ballots and dealt round-robin to the waves, so a page held by several
//             requests is loaded by one wave; each wave walks its pages with the next page's
//             loads issued into the registers that dequantising the current one frees.
//   per page  8 tiles of 16 tokens: A = the tile's E4M3 keys (dequantised through the table
//             with v_perm_b32), B = 16 query columns from LDS, D = the unscaled FP8 MFMA
//             16x16x128; each column's maximum over the page's tokens (causal mask only in
//             the blocks a row does not see whole), across the 4 lane groups by two xor
//             shuffles, then the sentinels; stored for every request holding the page.
//   buffered  (template, shared positions only) the unit's scores go to an LDS row buffer
//             and are stored as pieces of whole rows after a barrier.
//
// Status counting follows the generic scorer exactly: bad block ids once per (request, block)
// whose page is needed, by the one wave that owns the position (summed, one atomic per wave
// at the end); lengths once per request. The kernel is a plain function, built for gfx950 by
// score.hip and for the CPU emulator by score_emulated.hpp. Every cross-lane operation is
// reached by all 64 lanes of a wave: the loops around them run on wave-uniform values (ballot
// results, kernel arguments).
#pragma once

#include "gfx950/isa.hpp"
#include "gfx950/score_args.hpp"
#include "gfx950/score_context.hpp"
#include "gfx950/score_dequant.hpp"
#include "gfx950/score_page.hpp"

namespace uq::gfx950 {
namespace score_detail {

struct QLdsTag {};
struct TableLdsTag {};
struct LengthsLdsTag {};
struct RowBufferLdsTag {};

// ---------------------------------------------------------------- prologue
// Loads 16 bytes of q row `row`, head `head`, dims 16 c8 .. 16 c8 + 15, or zeros when !ok (a
// masked offset: no branch, so that every chunk's loads can be in flight together).
UQ_DEVICE inline u32x4 load_q_chunk(const ScoreKernelArgs& a, const buffer_rsrc& q, bool ok, std::uint32_t row,
                                    std::uint32_t head, std::uint32_t c8) {
  const std::uint32_t base = row * a.q_stride_row + head * a.q_stride_head;
  if (a.flags & kQVectorLoads) return buffer_load_b128(q, ok ? base + 16u * c8 : kMaskedOffset);
  u32x4 v = {0u, 0u, 0u, 0u};
  UQ_GFX950_SCORE_UNROLL
  for (std::uint32_t e = 0; e < 16; ++e) {
    const std::uint32_t byte = buffer_load_b8(q, ok ? base + (16u * c8 + e) * a.q_stride_dim : kMaskedOffset);
    v[e >> 2] |= byte << (8u * (e & 3u));
  }
  return v;
}

// The chunk's Q rows (zeros for padding columns and for requests past the chunk, up to a
// whole 16-row MFMA group) in key order, the table, and the lanes' lengths, staged in two
// steps: stage_loads issues every global load of the prologue (the thread's at most 8 Q
// chunks and its table piece) before anything waits, so that they share one memory round
// trip with the lengths' load rather than taking one each (performance model,
// docs/perf-log/2026-12-01-gfx950-model.md);
// stage_stores writes them to LDS.
template <int R>
struct StageLoads {
  static constexpr int kSteps = (Columns<R>::kRows * 8 + kThreads - 1) / kThreads;
  u32x4 q[kSteps];
  u32x2 table;
};

template <int R>
UQ_DEVICE inline std::int32_t staged_q_chunks(const Context& c) {
  const std::int32_t rows_needed = ((c.nr * R + 15) / 16) * 16;
  return 8 * (rows_needed < Columns<R>::kRows ? rows_needed : Columns<R>::kRows);
}

template <int R>
UQ_DEVICE inline StageLoads<R> stage_loads(const Context& c) {
  const ScoreKernelArgs& a = *c.a;
  StageLoads<R> s;
  const buffer_rsrc table = make_buffer_rsrc(a.table, kTableBytes);
  static_assert(kTableBytes == 8 * kThreads, "one 8-byte piece of the table per thread");
  s.table = buffer_load_b64(table, 8u * c.tx);
  const buffer_rsrc q = make_buffer_rsrc(a.q, a.q_bytes);
  const std::int32_t chunks = staged_q_chunks<R>(c);
  const std::uint32_t h_mask = (1u << a.heads_log2) - 1u;
  UQ_GFX950_SCORE_UNROLL
  for (int k = 0; k < StageLoads<R>::kSteps; ++k) {
    const std::int32_t u = static_cast<std::int32_t>(c.tx) + k * kThreads;
    const std::uint32_t i = static_cast<std::uint32_t>(u) >> 3, c8 = static_cast<std::uint32_t>(u) & 7u;
    const std::uint32_t rr = i / R, j = i % R;
    const std::uint32_t r = j >> a.heads_log2, head = j & h_mask;
    const bool ok = u < chunks && static_cast<std::int32_t>(rr) < c.nr && static_cast<std::int32_t>(r) < a.query_len;
    s.q[k] = load_q_chunk(a, q, ok, (static_cast<std::uint32_t>(c.req0) + rr) * static_cast<std::uint32_t>(a.query_len) + r,
                          head, c8);
  }
  return s;
}

template <int R>
UQ_DEVICE inline void stage_stores(const Context& c, const StageLoads<R>& s) {
  const std::int32_t chunks = staged_q_chunks<R>(c);
  UQ_GFX950_SCORE_UNROLL
  for (int k = 0; k < StageLoads<R>::kSteps; ++k) {
    const std::int32_t u = static_cast<std::int32_t>(c.tx) + k * kThreads;
    if (u < chunks) {
      const std::uint32_t i = static_cast<std::uint32_t>(u) >> 3, c8 = static_cast<std::uint32_t>(u) & 7u;
      lds_store(q_chunk_address(c.q_lds, i, c8), key_order16(s.q[k]));
    }
  }
  lds_store(c.table_lds + 8u * c.tx, s.table);
  if (c.wave == 0) lds_store(c.lengths_lds + 4u * c.lane, c.len);
}

// ---------------------------------------------------------------- one position
// The sentinel-only block b of this lane's request (or a needed block whose id is bad: its
// tokens are absent, raw = -inf): every column of the request, from the lengths alone.
template <int R, bool Buffered>
UQ_DEVICE inline void store_sentinels(const Context& c, std::int32_t b, std::int32_t jpos) {
  const ScoreKernelArgs& a = *c.a;
  const std::int32_t columns = a.query_len << a.heads_log2;
  for (std::int32_t j = 0; j < columns; ++j) {
    const std::int32_t r = j >> a.heads_log2;
    const std::uint32_t head = static_cast<std::uint32_t>(j) & ((1u << a.heads_log2) - 1u);
    const float v = block_value(neg_inf(), c.len, a.query_len, r, b, a.init_blocks, a.local_blocks);
    const std::uint32_t row = static_cast<std::uint32_t>((c.req0 + static_cast<std::int32_t>(c.lane)) * a.query_len + r);
    put<Buffered>(c, c.lane * R + static_cast<std::uint32_t>(j), jpos, v, score_offset(a, head, row, b));
  }
}

// Whether this lane's request needs block b's page: some row's score is its computed maximum,
// i.e. b is neither init nor local for the last row (which sees the most blocks).
UQ_DEVICE inline bool page_needed(const Context& c, std::int32_t b) {
  return b < c.nb && b >= c.a->init_blocks && b < c.nb - c.a->local_blocks;
}

// The block-table entry of this lane's request at position b (0 when not needed). The
// position loop loads it one position ahead, so its latency is hidden behind the previous
// position's pages instead of opening every position (performance model,
// docs/perf-log/2026-12-01-gfx950-model.md).
UQ_DEVICE inline std::int32_t load_table_entry(const Context& c, std::int32_t b) {
  const ScoreKernelArgs& a = *c.a;
  const std::uint32_t entry = static_cast<std::uint32_t>(c.req0 + static_cast<std::int32_t>(c.lane)) * a.table_stride_req +
                              static_cast<std::uint32_t>(b) * a.table_stride_block;
  return static_cast<std::int32_t>(buffer_load_b32(c.tables, page_needed(c, b) ? 4u * entry : kMaskedOffset));
}

// Position b (unit position jpos, the it-th position this wave walks), whose table entry `id`
// (load_table_entry) the caller has loaded. Returns the entry of position `next_b`, loaded here
// as soon as `id` is dead, so that the load writes the register `id` came in (a load into
// another register would need a copy at the loop's end, and the copy a wait for the load).
// Adds the bad block ids this wave is responsible for to bad_ids (the kernel counts them
// once, at its end).
template <int R, bool Buffered>
UQ_DEVICE inline std::int32_t score_position(const Context& c, std::int32_t b, std::int32_t jpos, std::int32_t it,
                                             std::int32_t id, std::int32_t next_b, std::uint32_t& bad_ids) {
  const ScoreKernelArgs& a = *c.a;
  const bool in = b < c.nb;
  const bool need = page_needed(c, b);
  const bool bad = need && (id < 0 || id >= a.page_limit);
  const bool ok = need && !bad;
  const std::int32_t page = ok ? id : -1;
  const std::int32_t ahead = load_table_entry(c, next_b);

  // The wave that owns this position's sentinels and counts (all 4 waves see the same lanes
  // in shared mode).
  if (c.per_wave || c.wave == 0) {
    bad_ids += static_cast<std::uint32_t>(__builtin_popcountll(ballot(bad)));
    if (in && !ok) store_sentinels<R, Buffered>(c, b, jpos);
  }

  std::uint64_t pending = ballot(ok);
  // Requests whose first row does not see all of block b: their columns need the mask.
  const std::uint64_t mask_needed = ballot(ok && b * kBlockTokens + (kBlockTokens - 1) > c.len - a.query_len);
  // Distinct pages, dealt round-robin to the waves (rotated by position); `mine` holds the
  // first lane of each page this wave scores.
  std::uint64_t mine = 0;
  std::int32_t k = it;
  while (pending != 0) {
    const std::uint32_t lead = static_cast<std::uint32_t>(__builtin_ctzll(pending));
    const std::int32_t p = readlane(page, lead);
    pending &= ~ballot(page == p);
    if (c.per_wave || static_cast<std::uint32_t>(k % kWaves) == c.wave) mine |= 1ull << lead;
    ++k;
  }
  if (mine == 0) return ahead;

  // The tiles' offsets use the lane id passed through a cross-lane move, which the compiler
  // cannot hoist out of the loops: they are then computed next to their loads, where
  // instruction selection folds each tile's constant into the loads' offset field (hoisted,
  // the 16 offsets would hold 16 VGPRs for the whole kernel).
  PageTiles tiles;
  {
    const std::uint32_t lane = shfl(c.lane, c.lane);
    const std::int32_t first = readlane(page, static_cast<std::uint32_t>(__builtin_ctzll(mine)));
    const buffer_rsrc r = page_rsrc(a, first);
    // Tile by tile, as the page loop reloads them: the loop's s_waitcnt then needs only the
    // tile at hand (vmcnt(14)); scheduled freely, the 8 code loads went first and the loop
    // waited for 5 tiles at its top (performance model, docs/perf-log/2026-12-01-gfx950-model.md).
    UQ_GFX950_SCORE_UNROLL
    for (int t = 0; t < kTiles; ++t) {
      tiles.tile[t] = load_tile(r, t, lane);
      sched_barrier<0>();
    }
  }
  while (mine != 0) {
    const std::uint32_t lead = static_cast<std::uint32_t>(__builtin_ctzll(mine));
    const std::int32_t p = readlane(page, lead);
    const std::uint64_t holders = ballot(page == p);
    mine &= mine - 1;
    const bool more = mine != 0;
    const NextPage next{page_rsrc(a, readlane(page, more ? static_cast<std::uint32_t>(__builtin_ctzll(mine)) : lead), more)};
    score_page<R, Buffered>(c, tiles, page_rsrc(a, p), next, shfl(c.lane, c.lane), holders, mask_needed, b, jpos);
  }
  return ahead;
}

// The buffered unit starting at position ub: each thread stores 4 consecutive positions of a
// row of the chunk, for the request's blocks only.
template <int R>
UQ_DEVICE inline void flush_unit(const Context& c, std::int32_t ub) {
  const ScoreKernelArgs& a = *c.a;
  constexpr std::int32_t kPieces = kUnitMax / 4;
  const std::int32_t items = c.nr * R * kPieces;
  // The thread id through a cross-lane move the compiler cannot hoist out of the unit loop:
  // the loop's per-lane tests then stay here instead of holding lane masks in SGPRs for the
  // whole kernel.
  const std::int32_t tx = static_cast<std::int32_t>(shfl(c.tx, c.lane));
  for (std::int32_t item = tx; item < items; item += kThreads) {
    const std::uint32_t i = static_cast<std::uint32_t>(item / kPieces);
    const std::int32_t piece = item % kPieces;
    const std::uint32_t rr = i / R, j = i % R;
    const std::int32_t r = static_cast<std::int32_t>(j >> a.heads_log2);
    if (r >= a.query_len) continue;
    const std::uint32_t head = j & ((1u << a.heads_log2) - 1u);
    const std::int32_t len = lds_load<std::int32_t>(c.lengths_lds + 4u * rr);
    const std::int32_t nb = uq::impl::blocks_for_tokens_of<std::int32_t>(len);
    const std::uint32_t row = (static_cast<std::uint32_t>(c.req0) + rr) * static_cast<std::uint32_t>(a.query_len) +
                              static_cast<std::uint32_t>(r);
    for (std::int32_t e = 0; e < 4; ++e) {
      const std::int32_t jpos = 4 * piece + e;
      if (jpos < a.unit && ub + jpos < nb) {
        const std::uint32_t v = lds_load<std::uint32_t>(c.rows_lds + 4u * (i * kRowBufferStride + static_cast<std::uint32_t>(jpos)));
        buffer_store_b32(v, c.scores, 4u * score_offset(a, head, row, ub + jpos));
      }
    }
  }
}

}  // namespace score_detail

// R: H * QL rounded up to a power of two; Buffered: the row buffer in LDS (shared positions
// only).
template <int R, bool Buffered>
UQ_DEVICE inline void score_kernel(const scorer::ScoreKernelArgs& a) {
  using namespace score_detail;
  Context c;
  c.a = &a;
  c.tx = thread_id();
  c.lane = lane_id();
  c.wave = wave_id();
  c.col = c.lane & 15u;
  c.kl = c.lane >> 4;
  const std::int32_t pid = static_cast<std::int32_t>(workgroup_id_x());
  const std::int32_t split = pid / a.chunks;
  c.req0 = (pid % a.chunks) * a.chunk;
  c.nr = a.num_reqs - c.req0 < a.chunk ? a.num_reqs - c.req0 : a.chunk;
  c.per_wave = !Buffered && a.per_wave != 0;  // the launcher never pairs a row buffer with per-wave units
  c.q_lds = lds_allocate<q_lds_bytes(R), QLdsTag>();
  c.table_lds = lds_allocate<kTableBytes, TableLdsTag>();
  c.lengths_lds = lds_allocate<kLengthsLdsBytes, LengthsLdsTag>();
  c.rows_lds = 0;
  if constexpr (Buffered) c.rows_lds = lds_allocate<row_buffer_lds_bytes(R), RowBufferLdsTag>();
  c.scores = make_buffer_rsrc(a.scores, a.scores_bytes);
  c.tables = make_buffer_rsrc(a.block_tables, a.tables_bytes);

  // This lane's request: its length, masked (< 0 -> 0) and clamped to the block table.
  const bool has_req = static_cast<std::int32_t>(c.lane) < c.nr;
  const buffer_rsrc lens = make_buffer_rsrc(a.seq_lens, a.seq_lens_bytes);
  const std::int32_t raw = static_cast<std::int32_t>(buffer_load_b32(
      lens, has_req ? 4u * static_cast<std::uint32_t>(c.req0 + static_cast<std::int32_t>(c.lane)) * a.seq_lens_stride
                    : kMaskedOffset));
  const StageLoads<R> staged = stage_loads<R>(c);  // in flight with the length
  const std::int32_t cap = a.max_blocks * kBlockTokens;
  const uq::impl::RequestLengthOf<std::int32_t> length = uq::impl::request_length_of<std::int32_t>(raw, cap);
  c.len = length.tokens;
  c.nb = uq::impl::blocks_for_tokens_of<std::int32_t>(c.len);
  // The counters' address, used here and at the very end, is kept in VGPRs (moved there by a
  // cross-lane copy): the SGPRs are the scarcer resource across the position loop.
  const std::uint64_t counters_bits = reinterpret_cast<std::uintptr_t>(a.counters);
  unsigned long long* const counters = reinterpret_cast<unsigned long long*>(static_cast<std::uintptr_t>(
      static_cast<std::uint64_t>(shfl(static_cast<std::uint32_t>(counters_bits), c.lane)) |
      (static_cast<std::uint64_t>(shfl(static_cast<std::uint32_t>(counters_bits >> 32), c.lane)) << 32)));
  if (split == 0 && c.wave == 0) {
    const std::uint64_t negative = ballot(has_req && length.negative), too_long = ballot(has_req && length.too_long);
    if (c.lane == 0 && negative != 0)
      atomic_add_u64(counters + kCounterNegativeSeqLens, static_cast<unsigned long long>(__builtin_popcountll(negative)));
    if (c.lane == 0 && too_long != 0)
      atomic_add_u64(counters + kCounterLongSeqLens, static_cast<unsigned long long>(__builtin_popcountll(too_long)));
  }

  stage_stores<R>(c, staged);
  barrier();

  const std::int32_t slots = c.per_wave ? kWaves : 1;
  const std::int32_t first_unit = c.per_wave ? split * kWaves + static_cast<std::int32_t>(c.wave) : split;
  const std::int32_t unit_step = a.splits * slots;
  std::int32_t it = 0;
  std::uint32_t bad_ids = 0;  // wave-uniform
  // The table entry of the position about to be scored, loaded one position ahead. The
  // position after b is the unit's next or, at the unit's end, the next unit's first; a unit
  // ends early only when no lane's request reaches b, and then no later unit runs either, so
  // the entry loaded ahead is always the one needed.
  const std::int32_t unit_stride = unit_step * a.unit;
  std::int32_t id = load_table_entry(c, first_unit * a.unit);
  for (std::int32_t ub = first_unit * a.unit; ballot(ub < c.nb) != 0; ub += unit_stride) {
    std::int32_t b = ub;
    for (std::int32_t jpos = 0; jpos < a.unit && ballot(b < c.nb) != 0; ++jpos, ++b, ++it) {
      const std::int32_t next = jpos + 1 < a.unit ? b + 1 : ub + unit_stride;
      id = score_position<R, Buffered>(c, b, jpos, it, id, next, bad_ids);
    }
    if constexpr (Buffered) {
      barrier();
      flush_unit<R>(c, ub);
      barrier();
    }
  }
  if (bad_ids != 0 && c.lane == 0) atomic_add_u64(counters + kCounterBadBlockIds, bad_ids);
}

}  // namespace uq::gfx950
