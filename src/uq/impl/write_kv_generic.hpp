// Generic Kokkos cache writer (spec ultraquant.md §4), laid out for the memory system.
//
// Work item: one (token, KV head): its K row (rotated) and its V row, 2 x 512 bytes of
// bf16 in, one 272-byte slot out. An item is handled by kLanes threads of a team
// ("lanes"; thread team_rank() = item * kLanes + lane), a team by kItems items; lane c
// owns the kSpan = 256 / kLanes contiguous elements kSpan*c.. of each row.
//
// GPU (kLanes = 16, kSpan = 16; 8 items, 128 threads a team), three phases separated by
// the team's two barriers, every thread busy in each:
//   1. The loads (issued during the previous batch), the slot's first and then two
//      16-byte loads of K and two of V per lane, all in flight before anything waits on
//      the slot (a branch on it first would hold the row loads back by a whole memory
//      latency). K: WHT stages 0-3 in registers (they pair elements 1, 2, 4, 8 apart,
//      all inside the lane's 16), the 16 values to team scratch. V: the lane's partial
//      maximum to scratch.
//   2. K: lane c reads column c (elements c + 16 i), WHT stages 4-7 in registers (they
//      pair i's 1, 2, 4, 8 apart), writes it back (the 1/16 is folded into the
//      quantisation) with the column's maximum of each group (a pair of i's). V: the
//      group's maximum from the partner lane's partial (lane ^ 1 holds the other half of
//      the group of 32), its scale byte, the lane's 16 codes stored as two 4-byte words,
//      the even lane also the scale byte.
//   3. K: the lane reads its row and its group's 16 column maxima, and quantises and
//      stores as V did.
// (A 32-lane layout with K and V on separate warps halved a lane's chain but added a
// third to the instructions per item, and was slower on the H200 from T = 4096 on and
// no faster below: docs/perf-log/2026-12-01-writers-second-pass.md.)
// Each butterfly sees the spec's inputs in the spec's stage order, so the rotated values
// are the spec's bits. Each code is one multiply (z = 2 y2, the group's 2^(1-e) and K's
// 1/16 folded into it where that is exact), a ceil and a load from the 128-byte code
// table of writer_codes.hpp, which the team's threads fill in phase 1 (one entry each).
// Scratch rows are padded to 20 floats (items to 336) so that none of the accesses
// conflict on a bank; a row's first padding float carries the V partial. A non-finite
// row is counted once: a per-item flag zeroed in phase 1, set with an atomic exchange
// in phase 2 by the lanes that see a non-finite value (V: its group; K: its column), the
// lane that finds it unset counting. Every lane computes, whatever its slot; only the
// stores and flags are conditional. The team's threads are its lanes (vector length 1),
// so every exchange is ordered by a documented team barrier, and a lane's registers are
// its own from phase to phase.
//
// Host (kLanes = 1, kSpan = 256): one item per index of a RangePolicy (no team to set
// up per call); one thread does the item with plain loops over the row (WHT two stages
// a pass, then the groups, the codes as integer counts: uq/impl/writer_codes.hpp), which
// vectorise; no scratch, no barrier.
//
// One launch per call: on a GPU a league of min(ceil(T * Hk / kItems), the teams the
// device holds) teams, each looping over batches of kItems items (batch league_rank,
// + league_size, ...) and loading the next batch's rows before the phases of this one;
// on a host one range of T * Hk items.
#pragma once

#include "uq/impl/math.hpp"
#include "uq/impl/status_counters.hpp"
#include "uq/impl/team_policy.hpp"
#include "uq/impl/writer_codes.hpp"
#include "uq/impl/writer_io.hpp"
#include "uq/types.hpp"
#include "uq/ultraquant.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace uq {
namespace impl {

// ------------------------------------------------------------------ per-row pieces
// In-place WHT stages on a lane's n values x[0..n): two consecutive stages at a time,
// the pairs kStride apart and then those 2 * kStride apart (local strides; stage s of
// the spec when the values are 2^s / kStride elements apart). Each group of four is
// loaded once for the two stages, which are exactly the spec's butterflies in the
// spec's order (the second stage's butterflies read the first stage's sums).
template <int n, int kStride>
KOKKOS_INLINE_FUNCTION void wht_local_stage_pair(float* x) {
  for (int base = 0; base < n; base += 4 * kStride)
    for (int t = 0; t < kStride; ++t) {
      float* p = x + base + t;
      const float a = p[0], b = p[kStride], c = p[2 * kStride], d = p[3 * kStride];
      const float s0 = a + b, d0 = a - b, s1 = c + d, d1 = c - d;  // stage log2(kStride)
      p[0] = s0 + s1;                                                // stage log2(kStride) + 1
      p[2 * kStride] = s0 - s1;
      p[kStride] = d0 + d1;
      p[3 * kStride] = d0 - d1;
    }
}

// Every local stage, strides 1, 2, .., n/2 in that order (n a power of 4: 16 or 256).
template <int n, int kStride = 1>
KOKKOS_INLINE_FUNCTION void wht_local(float* x) {
  static_assert(n == 16 || n == 256, "stage pairs need a power of 4");
  if constexpr (kStride < n) {
    wht_local_stage_pair<n, kStride>(x);
    wht_local<n, 4 * kStride>(x);
  }
}

// max |x| of n values on the bits, as a tree (short dependency chains): for
// non-negative floats integer order is float order, and infinities and NaNs lie above
// every finite value. (Signed: the bits are below 2^31, and SSE2 has a signed compare,
// no unsigned one.)
template <int n>
KOKKOS_INLINE_FUNCTION std::int32_t max_bits(const std::int32_t* bits) {
  std::int32_t m[n];
  for (int i = 0; i < n; ++i) m[i] = bits[i];
  for (int w = n / 2; w >= 1; w /= 2)
    for (int i = 0; i < w; ++i) m[i] = m[i + w] > m[i] ? m[i + w] : m[i];
  return m[0];
}

template <int n>
KOKKOS_INLINE_FUNCTION std::int32_t max_abs_bits(const float* x) {
  std::int32_t m[n];
  for (int i = 0; i < n; ++i) m[i] = static_cast<std::int32_t>(codec::float_bits(x[i]) & 0x7fffffffu);
  return max_bits<n>(m);
}

// A group of 32's quantisation parameters (spec §4 steps 2-7) from the bits of its
// absmax times `pre` (1, or 1/16 for unscaled WHT outputs: max(fl(|x| / 16)) is
// fl(max |x| / 16)): the scale byte, 2^(1-e) (0 for a zero group, whose codes are all
// 0), and whether the group was finite.
struct UqGroup {
  std::uint8_t byte;
  float twice_inv_scale;
  bool finite;
};

KOKKOS_INLINE_FUNCTION UqGroup uq_group_of_max(std::int32_t amax, float pre = 1.0f) {
  UqGroup q;
  q.finite = amax < 0x7f800000;
  q.byte = q.finite ? codes::uq_scale_byte(codec::bits_float(static_cast<std::uint32_t>(amax)) * pre) : std::uint8_t{0};
  // 2^(1-e) = 2^(128-b), b in 1..254: a normal float.
  q.twice_inv_scale = q.byte ? codec::pow2(128 - static_cast<int>(q.byte)) : 0.0f;
  return q;
}

// The group is given as two halves of 16 (a lane's own and its partner's on a GPU), so
// that no array is indexed by a lane-dependent offset (which would put it in memory).
KOKKOS_INLINE_FUNCTION UqGroup uq_group(const float* half0, const float* half1, float pre = 1.0f) {
  const std::int32_t a = max_abs_bits<ultraquant::kGroup / 2>(half0), b = max_abs_bits<ultraquant::kGroup / 2>(half1);
  return uq_group_of_max(a > b ? a : b, pre);
}

// Codes of 16 values x * pre as two words, element 2j in bits 3..0 of byte j (the GPU
// lanes' form: each code from the byte table of writer_codes.hpp, at z = 2 y2, with the
// group's 2^(1-e) and `pre` folded into one multiply where the scale allows). A zero
// group (scale byte 0) has all codes 0.
KOKKOS_INLINE_FUNCTION void uq_code_words16(const float* x, const UqGroup& q, float pre, const std::uint8_t* table,
                                            std::uint32_t* words) {
  words[0] = words[1] = 0;
  if (q.byte == 0) return;
  std::uint32_t c[16];
  if (codes::uq_fold_ok(q.byte)) {
    const float S = 2.0f * q.twice_inv_scale * pre;  // exact: a power of two <= 2^102
    for (int j = 0; j < 16; ++j) c[j] = codes::uq_code_from_table(table, x[j] * S);
  } else {  // e < -100: y2 = fl(x * pre) * 2^(1-e) first, as the spec writes it
    for (int j = 0; j < 16; ++j) c[j] = codes::uq_code_from_table(table, ((x[j] * pre) * q.twice_inv_scale) * 2.0f);
  }
  for (int w = 0; w < 2; ++w)  // disjoint nibbles: a sum, one shift-and-add each
    for (int j = 0; j < 8; ++j) words[w] += c[8 * w + j] << (4 * j);
}

template <int n>
KOKKOS_INLINE_FUNCTION void store_words(std::uint8_t* dst, const std::uint32_t* words, bool aligned_words) {
  for (int w = 0; w < n; ++w) {
    if (aligned_words) wio::store4(dst + 4 * w, words[w]);
    else wio::store_bytes(dst + 4 * w, words[w]);
  }
}

// The host path's row (token, head) as floats: for contiguous rows a plain loop (which
// the compiler vectorises), else element access through the view. (The GPU lanes load
// their spans in 16-byte chunks: WriteKvGeneric::load_rows.)
template <int n, class View>
KOKKOS_INLINE_FUNCTION void load_row(const View& view, bool chunked, std::int64_t token, int head, float* out) {
  if (chunked) {
    const bf16* row = &view(token, head, 0);
    for (int j = 0; j < n; ++j) out[j] = codec::bf16_to_float(row[j]);
  } else {
    for (int j = 0; j < n; ++j) out[j] = codec::bf16_to_float(view(token, head, j));
  }
}

// ------------------------------------------------------------------ the kernel
template <class ExecSpace>
inline constexpr int kv_writer_lanes = Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible ? 1 : 16;

// Lanes: 1 or 16 (the default for the execution space; tests run the 16-lane phases on
// the host through run_team_in_order).
template <class ExecSpace, class KView, class VView, class SlotView, class CacheView, class CountView,
          int Lanes = kv_writer_lanes<ExecSpace>>
struct WriteKvGeneric {
  static constexpr int kLanes = Lanes;
  static constexpr int kItems = kLanes == 1 ? 1 : 8;
  static constexpr int kTeam = kLanes * kItems;
  static constexpr int kSpan = ultraquant::kHeadDim / kLanes;
  static_assert(kLanes == 1 || kLanes == 16, "the phases below are written for 1 or 16 lanes");
  // Scratch (16 lanes): per item 16 rows of 16 floats padded to 20, the item padded to
  // 336 (a bank offset of 16 between the two items of a warp); then 2 flags per item;
  // then per item the K columns' maxima by group ([8 groups][16 lanes], as bits; the item
  // padded to 144 floats, again a bank offset of 16); then the code table
  // (codes::kCodeTable bytes), filled by the team in phase 1.
  static constexpr int kRowPitch = 20;
  static constexpr int kItemFloats = 16 * kRowPitch + 16;
  static constexpr int kGroupMaxOffset = kItems * (kItemFloats + 2);  // in floats
  static constexpr int kGroupMaxPitch = ultraquant::kGroups * 16 + 16;
  static constexpr int kTableOffset = (kGroupMaxOffset + kItems * kGroupMaxPitch) * int(sizeof(float));
  static constexpr int kScratchBytes = kLanes == 1 ? 0 : kTableOffset + codes::kCodeTable;
  static_assert(kLanes == 1 || (kGroupMaxOffset % 4 == 0 && kGroupMaxPitch % 4 == 0),
                "group maxima are read in 16-byte chunks");

  // Teams a compute unit keeps resident (the launch bound: at most 65536 / (kTeam * 7)
  // = 73 registers a thread, room for a batch's rows in flight beside the one at work).
  static constexpr int kTeamsPerUnit = 7;
  using policy = TeamPolicyFor<ExecSpace, Kokkos::LaunchBounds<kTeam, kTeamsPerUnit>>;
  using member = typename policy::member_type;
  // Hosts: one item per index of a range.
  using host_policy = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<int>>;

  KView k;
  VView v;
  SlotView slots;
  CacheView cache;
  CountView counts;
  int num_heads = 0;
  DivideBy by_heads;           // item / num_heads
  int num_items = 0;           // num_tokens * num_heads (< 2^31, checked by the caller)
  std::int64_t num_slots = 0;  // num_blocks * block_size
  int block_shift = 0;         // log2(block_size): block_size is a power of two
  bool chunked = false;        // k and v rows allow 16-byte loads
  bool aligned_words = false;  // slot starts are 4-byte aligned

  WriteKvGeneric() = default;
  // Everything from the (checked) arguments: geometry, and which access paths they allow.
  WriteKvGeneric(const KView& k_, const VView& v_, const SlotView& slots_, const CacheView& cache_,
                 const CountView& counts_)
      : k(k_), v(v_), slots(slots_), cache(cache_), counts(counts_) {
    num_heads = static_cast<int>(cache.extent(2));
    by_heads = DivideBy(num_heads > 0 ? num_heads : 1);
    num_items = static_cast<int>(static_cast<std::int64_t>(k.extent(0)) * num_heads);
    num_slots = static_cast<std::int64_t>(cache.extent(0)) * static_cast<std::int64_t>(cache.extent(1));
    while ((1 << block_shift) < static_cast<int>(cache.extent(1))) ++block_shift;
    chunked = wio::rows_are_chunked(k) && wio::rows_are_chunked(v);
    aligned_words = wio::words_are_aligned(cache, 4);
  }

  // One thread's share: which item and lane, and (from locate, once the row loads are in
  // flight) where the item's slot is: null when the slot is negative, skipped, or out
  // of range (counted there once per token).
  // (The token is clamped into range for the last team's spare items: the 16-lane
  // phases compute on it and store nothing, so that no branch waits on the slot.)
  struct Item {
    std::int64_t token;
    int head, lane, local_item;
    bool valid;
    std::uint8_t* dst;
  };

  KOKKOS_INLINE_FUNCTION Item item_of(int league_rank, int team_rank) const {
    Item it;
    it.lane = team_rank % kLanes;
    it.local_item = team_rank / kLanes;
    const int item = league_rank * kItems + it.local_item;  // 32-bit: a 64-bit division is a long subroutine
    it.valid = item < num_items;
    const int clamped = it.valid ? item : num_items - 1;
    it.token = by_heads(clamped);
    it.head = clamped - static_cast<int>(it.token) * num_heads;
    it.dst = nullptr;
    return it;
  }

  // The slot value, issued before the row loads and consumed after them (locate), so
  // that the rows never wait for it (-1 for a spare item).
  KOKKOS_INLINE_FUNCTION std::int64_t slot_of(const Item& it) const {
    return it.valid ? static_cast<std::int64_t>(slots(it.token)) : std::int64_t{-1};
  }

  KOKKOS_INLINE_FUNCTION void locate(Item& it, std::int64_t slot) const {
    if (slot >= num_slots && it.head == 0 && it.lane == 0) count(counts, Counter::bad_slots);
    it.dst = slot >= 0 && slot < num_slots
                 ? &cache(slot >> block_shift, slot & ((std::int64_t{1} << block_shift) - 1), it.head, 0)
                 : nullptr;
  }

  // GPU: a team takes batches of kItems items, league_rank, + league_size, ...; each batch
  // is three phases separated by two barriers (and a third before the next batch reuses
  // the scratch rows). The next batch's rows are loaded before this one's phases, so
  // that their memory latency hides behind this batch's work.
  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    float* scratch = static_cast<float*>(team.team_shmem().get_shmem(int{kScratchBytes}));
    fill_table(team.team_rank(), scratch);
    int batch = team.league_rank();
    Item it = item_of(batch, team.team_rank());
    Rows cur = load_rows(it);
    float vmine[kSpan];  // the lane's V values, kept from phase 1 to phase 2
    for (;;) {
      const int next = batch + team.league_size();
      const bool more = next < num_batches();  // the same for the whole team
      Item next_it = it;
      Rows next_rows = cur;
      if (more) {
        next_it = item_of(next, team.team_rank());
        next_rows = load_rows(next_it);
      }
      phase1(it, cur, scratch, vmine);
      team.team_barrier();
      phase2(it, scratch, vmine);
      team.team_barrier();
      phase3(it, scratch);
      if (!more) break;
      team.team_barrier();
      batch = next;
      it = next_it;
      cur = next_rows;
    }
  }

  // Hosts: one item.
  KOKKOS_INLINE_FUNCTION void operator()(const int item) const {
    Item it = item_of(item, 0);
    locate(it, slot_of(it));
    if (it.dst) write_item(it.token, it.head, it.dst);
  }

  // The 16-lane phases of one team on the host, thread after thread and phase after
  // phase (what the barriers guarantee), for the tests.
  void run_team_in_order(int batch, float* scratch) const {
    Item it[kTeam];
    Rows rows[kTeam];
    float vmine[kTeam][kSpan];
    for (int r = 0; r < kTeam; ++r) fill_table(r, scratch);
    for (int r = 0; r < kTeam; ++r) it[r] = item_of(batch, r), rows[r] = load_rows(it[r]);
    for (int r = 0; r < kTeam; ++r) phase1(it[r], rows[r], scratch, vmine[r]);
    for (int r = 0; r < kTeam; ++r) phase2(it[r], scratch, vmine[r]);
    for (int r = 0; r < kTeam; ++r) phase3(it[r], scratch);
  }

  KOKKOS_INLINE_FUNCTION int num_batches() const { return (num_items + kItems - 1) / kItems; }

  // ---- host: one thread, one item
  KOKKOS_INLINE_FUNCTION void write_item(std::int64_t token, int head, std::uint8_t* dst) const {
    float x[ultraquant::kHeadDim];
    load_row<ultraquant::kHeadDim>(k, chunked, token, head, x);
    wht_local<ultraquant::kHeadDim>(x);
    for (int i = 0; i < ultraquant::kHeadDim; ++i) x[i] *= 0.0625f;
    quantise_row(x, dst + ultraquant::kKCodes, dst + ultraquant::kKScales);
    load_row<ultraquant::kHeadDim>(v, chunked, token, head, x);
    quantise_row(x, dst + ultraquant::kVCodes, dst + ultraquant::kVScales);
  }

  // All 8 groups of a row, in loops over the whole row (they vectorise on a host).
  KOKKOS_INLINE_FUNCTION void quantise_row(const float* x, std::uint8_t* code_bytes, std::uint8_t* scales) const {
    constexpr int D = ultraquant::kHeadDim;
    UqGroup q[ultraquant::kGroups];
    float f[ultraquant::kGroups];
    bool bad = false;
    for (int g = 0; g < ultraquant::kGroups; ++g) {
      q[g] = uq_group(x + ultraquant::kGroup * g, x + ultraquant::kGroup * g + ultraquant::kGroup / 2);
      f[g] = q[g].twice_inv_scale;
      bad = bad || !q[g].finite;
    }
    unsigned c[D];
    for (int g = 0; g < ultraquant::kGroups; ++g) {
      unsigned* cg = c + ultraquant::kGroup * g;
      const float* xg = x + ultraquant::kGroup * g;
      if (q[g].byte == 0) {
        for (int i = 0; i < ultraquant::kGroup; ++i) cg[i] = 0;
      } else {
        for (int i = 0; i < ultraquant::kGroup; ++i) cg[i] = codes::uq_code_of_twice_y(xg[i] * f[g]);
      }
    }
    std::uint32_t words[D / 8];
    for (int w = 0; w < D / 8; ++w) {
      std::uint32_t word = 0;
      for (int j = 0; j < 8; ++j) word |= static_cast<std::uint32_t>(c[8 * w + j]) << (4 * j);
      words[w] = word;
    }
    store_words<D / 8>(code_bytes, words, aligned_words);
    for (int g = 0; g < ultraquant::kGroups; ++g) scales[g] = q[g].byte;
    if (bad) count(counts, Counter::nonfinite_inputs);
  }

  // ---- GPU phases (kLanes = 16, kSpan = 16)
  // Counts the row once: the lane whose atomic finds the item's flag still 0.
  KOKKOS_INLINE_FUNCTION void flag_nonfinite(float* flag) const {
    if (Kokkos::atomic_exchange(flag, 1.0f) == 0.0f) count(counts, Counter::nonfinite_inputs);
  }

  // This lane's 16 codes (bytes 8 lane..) and, from the even lane, the group's scale byte.
  KOKKOS_INLINE_FUNCTION void store_half_group(const float* mine, const UqGroup& q, float pre, int lane,
                                               const std::uint8_t* table, std::uint8_t* codes,
                                               std::uint8_t* scales) const {
    std::uint32_t words[2];
    uq_code_words16(mine, q, pre, table, words);
    store_words<2>(codes + 8 * lane, words, aligned_words);
    if ((lane & 1) == 0) scales[lane / 2] = q.byte;
  }

  // A scratch row of 16 floats (16-byte aligned: the pitch is 80 bytes) in four
  // 16-byte accesses.
  KOKKOS_INLINE_FUNCTION static void scratch_store16(float* row, const float* x) {
    for (int c = 0; c < kSpan / 4; ++c) {
      wio::Chunk16 ch;
      for (int j = 0; j < 4; ++j) ch.w[j] = codec::float_bits(x[4 * c + j]);
      reinterpret_cast<wio::Chunk16*>(row)[c] = ch;
    }
  }
  KOKKOS_INLINE_FUNCTION static void scratch_load16(const float* row, float* x) {
    for (int c = 0; c < kSpan / 4; ++c) {
      const wio::Chunk16 ch = reinterpret_cast<const wio::Chunk16*>(row)[c];
      for (int j = 0; j < 4; ++j) x[4 * c + j] = codec::bits_float(ch.w[j]);
    }
  }

  KOKKOS_INLINE_FUNCTION float* rows_of(const Item& it, float* scratch) const {
    return scratch + it.local_item * kItemFloats;
  }
  KOKKOS_INLINE_FUNCTION float* flags_of(const Item& it, float* scratch) const {  // [V, K], 0 or 1
    return scratch + kItems * kItemFloats + 2 * it.local_item;
  }
  KOKKOS_INLINE_FUNCTION float* group_max_of(const Item& it, float* scratch) const {
    return scratch + kGroupMaxOffset + kGroupMaxPitch * it.local_item;
  }
  KOKKOS_INLINE_FUNCTION static std::uint8_t* table_of(float* scratch) {
    return reinterpret_cast<std::uint8_t*>(scratch) + kTableOffset;
  }
  // The padding float after a row carries the lane's V partial maximum (as bits).
  static constexpr int kPartial = kSpan;

  // The team's code table, one entry per thread (before the first barrier).
  KOKKOS_INLINE_FUNCTION static void fill_table(int team_rank, float* scratch) {
    for (int slot = team_rank; slot < codes::kCodeTable; slot += kTeam)
      table_of(scratch)[slot] = codes::uq_code_table_entry(slot);
  }

  // A lane's inputs of one item as loaded: the bf16 bits of its kSpan elements of K and
  // of V in 16-byte chunks (wio::bf16_of's layout), and the item's slot.
  struct Rows {
    wio::Chunk16 k[kSpan / 8], v[kSpan / 8];
    std::int64_t slot;
  };

  template <class View>
  KOKKOS_INLINE_FUNCTION void load_span(const View& view, const Item& it, wio::Chunk16* ch) const {
    if (chunked) {
      const bf16* row = &view(it.token, it.head, 0) + kSpan * it.lane;
      for (int c = 0; c < kSpan / 8; ++c) ch[c] = wio::load16(row + 8 * c);
    } else {
      for (int j = 0; j < kSpan / 2; ++j)
        ch[j / 4].w[j % 4] = std::uint32_t{view(it.token, it.head, kSpan * it.lane + 2 * j).bits} |
                             (std::uint32_t{view(it.token, it.head, kSpan * it.lane + 2 * j + 1).bits} << 16);
    }
  }

  // The slot first, then the rows: every load in flight before anything waits on one.
  KOKKOS_INLINE_FUNCTION Rows load_rows(const Item& it) const {
    Rows r;
    r.slot = slot_of(it);
    load_span(k, it, r.k);
    load_span(v, it, r.v);
    return r;
  }

  KOKKOS_INLINE_FUNCTION static void unpack_span(const wio::Chunk16* ch, float* x) {
    for (int j = 0; j < kSpan; ++j) x[j] = wio::bf16_of(ch[j / 8], j % 8);
  }

  // The phases compute for every item (stores and flags only where the slot is
  // valid): the loads do not wait for the slot, and no lane diverges on it.
  KOKKOS_INLINE_FUNCTION void phase1(Item& it, const Rows& in, float* scratch, float* vmine) const {
    const int lane = it.lane;
    float* rows = rows_of(it, scratch);
    if (lane == 0) flags_of(it, scratch)[0] = flags_of(it, scratch)[1] = 0.0f;
    const std::int64_t slot = in.slot;
    float x[kSpan];
    unpack_span(in.k, x);
    unpack_span(in.v, vmine);
    wht_local<kSpan>(x);  // stages 0..3
    scratch_store16(rows + kRowPitch * lane, x);
    rows[kRowPitch * lane + kPartial] = codec::bits_float(static_cast<std::uint32_t>(max_abs_bits<kSpan>(vmine)));
    locate(it, slot);
  }

  KOKKOS_INLINE_FUNCTION void phase2(const Item& it, float* scratch, const float* vmine) const {
    const int lane = it.lane;
    float* rows = rows_of(it, scratch);
    float* flags = flags_of(it, scratch);
    // K: column c (elements c + 16 i), stages 4..7 (elements 16, 32, 64, 128 apart),
    // written back unscaled (the 1/16 is folded into the quantisation).
    // Element c + 16 i is in group i / 2: the column's maximum of each group (its pair
    // i = 2g, 2g + 1) goes to the group's row of maxima, for phase 3.
    float y[16];
    for (int i = 0; i < 16; ++i) y[i] = rows[kRowPitch * i + lane];
    wht_local<16>(y);
    float* group_max = group_max_of(it, scratch);
    std::int32_t pair[ultraquant::kGroups];
    for (int g = 0; g < ultraquant::kGroups; ++g) {
      pair[g] = max_abs_bits<2>(y + 2 * g);
      group_max[16 * g + lane] = codec::bits_float(static_cast<std::uint32_t>(pair[g]));
    }
    const std::int32_t col_max = max_bits<ultraquant::kGroups>(pair);
    for (int i = 0; i < 16; ++i) rows[kRowPitch * i + lane] = y[i];
    // V: the group's maximum from the partner's partial, then this lane's codes.
    const std::int32_t mine = static_cast<std::int32_t>(codec::float_bits(rows[kRowPitch * lane + kPartial]));
    const std::int32_t other = static_cast<std::int32_t>(codec::float_bits(rows[kRowPitch * (lane ^ 1) + kPartial]));
    const UqGroup q = uq_group_of_max(mine > other ? mine : other);
    if (!it.dst) return;
    store_half_group(vmine, q, 1.0f, lane, table_of(scratch), it.dst + ultraquant::kVCodes,
                     it.dst + ultraquant::kVScales);
    if (!q.finite && (lane & 1) == 0) flag_nonfinite(&flags[0]);
    if (col_max >= 0x7f800000) flag_nonfinite(&flags[1]);
  }

  KOKKOS_INLINE_FUNCTION void phase3(const Item& it, float* scratch) const {
    const int lane = it.lane;
    const float* rows = rows_of(it, scratch);
    float mine[kSpan], column_max[16];  // the lane's row (unscaled), its group's 16 column maxima
    scratch_load16(rows + kRowPitch * lane, mine);
    scratch_load16(group_max_of(it, scratch) + 16 * (lane / 2), column_max);
    std::int32_t m[16];
    for (int c = 0; c < 16; ++c) m[c] = static_cast<std::int32_t>(codec::float_bits(column_max[c]));
    const UqGroup q = uq_group_of_max(max_bits<16>(m), 0.0625f);
    if (!it.dst) return;
    store_half_group(mine, q, 0.0625f, lane, table_of(scratch), it.dst + ultraquant::kKCodes,
                     it.dst + ultraquant::kKScales);
  }

  // max_league > 0 caps the league below the default (tests: many batches a team).
  void launch(const ExecSpace& exec, int max_league = 0) const {
    if (num_items == 0) return;
    if constexpr (kLanes == 1) {
      (void)max_league;
      Kokkos::parallel_for("uq::write_kv", host_policy(exec, 0, num_items), *this);
    } else {
      // The teams the device holds at once (Kokkos counts 2048 threads a compute unit on
      // CUDA and HIP devices); a larger call loops, each team over several batches.
      int league = num_batches();
      const int resident = static_cast<int>(exec.concurrency() / 2048) * kTeamsPerUnit;
      if (resident > 0 && league > resident) league = resident;
      if (max_league > 0 && league > max_league) league = max_league;
      policy p(exec, league, kTeam);
      p.set_scratch_size(0, Kokkos::PerTeam(kScratchBytes));
      static_assert(fits_kernel_argument<std::decay_t<decltype(*this)>>, "the functor must travel as a kernel argument");
      Kokkos::parallel_for("uq::write_kv", p, *this);
    }
  }
};

}  // namespace impl
}  // namespace uq
