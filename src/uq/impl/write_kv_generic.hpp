// Generic Kokkos cache writer (spec ultraquant.md §4), laid out for the memory system.
//
// Work item: one (token, KV head): its K row (rotated) and its V row, 2 x 512 bytes of
// bf16 in, one 272-byte slot out. On a GPU an item is handled by kLanes threads of a
// 128-thread team ("lanes"), each of which loads 16 contiguous elements 16c.. (c =
// 0..15) of a row with two 16-byte loads; three phases separated by the team's two
// barriers:
//   1. The loads: the slot first and the rows after it, all in flight before anything
//      waits on the slot (a branch on it would hold the row loads back by one memory
//      latency). K: WHT stages 0-3 in registers (they pair elements 1, 2, 4, 8 apart,
//      all inside the lane's 16), the 16 values to row c of the item's scratch. V: the
//      lane's partial maximum to scratch.
//   2. K: lane c reads column c (elements c + 16 i), WHT stages 4-7 in registers (they
//      pair i's 1, 2, 4, 8 apart), writes it back (the 1/16 is folded into the
//      quantisation). V: the group's maximum from the partner lane's partial (c ^ 1
//      holds the other half of the group of 32), its scale byte, the lane's 16 codes
//      stored as two 4-byte words, the even lane also the scale byte.
//   3. K's codes from the scratch rows, as V's were.
// Two layouts (kLanes):
//   32 (the default, "split"): K and V on separate warps, 4 items a team (warps: K of
//      items 0-1, V of items 0-1, K of 2-3, V of 2-3), so that a lane's dependent chain
//      is half the 16-lane one and no warp diverges on the side: phase 1 and 2 are K's or
//      V's work alone, and in phase 3 all 32 lanes share K's codes, 8 each (lane l: the
//      elements 8l.., its group l / 4 read whole from the scratch for the maximum).
//   16: each lane does K's and V's column c, 8 items a team; more work per lane and
//      fewer threads per item (A/B builds: UQ_KV_WRITER_GPU_LANES below).
// Each butterfly sees the spec's inputs in the spec's stage order, so the rotated values
// are the spec's bits. The codes are the multiply-add search of writer_codes.hpp, with
// the group's 2^(1-e) (and K's 1/16) folded into its multiply-adds where that is exact.
// Scratch rows are padded to 20 floats (items to 336) so that none of the accesses
// conflict on a bank; a row's first padding float carries the V partial. A non-finite
// row is counted once: a per-item flag zeroed in phase 1, set with an atomic exchange
// in phase 2 by the lanes that see a non-finite value (V: its group; K: its column), the
// lane that finds it unset counting. Every lane computes, whatever its slot; only the
// stores and flags are conditional. The team's threads are its lanes (vector length 1),
// so every exchange is ordered by a documented team barrier, and a lane's registers are
// its own from phase to phase.
//
// Host (kLanes = 1): one item per index of a RangePolicy; one thread does the item with
// plain loops over the row (WHT two stages a pass, then the groups, the codes as
// integer counts: uq/impl/writer_codes.hpp), which vectorise; no scratch, no barrier.
//
// One launch per call: one team per kItems items (league = ceil(T * Hk / kItems)), or
// one range of T * Hk items on a host.
#pragma once

#include "uq/impl/status_counters.hpp"
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
KOKKOS_INLINE_FUNCTION std::int32_t max_abs_bits(const float* x) {
  std::int32_t m[n];
  for (int i = 0; i < n; ++i) m[i] = static_cast<std::int32_t>(codec::float_bits(x[i]) & 0x7fffffffu);
  for (int w = n / 2; w >= 1; w /= 2)
    for (int i = 0; i < w; ++i) m[i] = m[i + w] > m[i] ? m[i + w] : m[i];
  return m[0];
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

// Codes of n values x * pre (n = 8 or 16) as n / 8 words, element 2j in bits 3..0 of
// byte j (the GPU lanes' form: the multiply-add search of writer_codes.hpp, the group's
// scaling folded into it where the scale allows, accumulated into half-words). A zero
// group (scale byte 0) has all codes 0.
template <int n>
KOKKOS_INLINE_FUNCTION void uq_code_words(const float* x, const UqGroup& q, float pre, std::uint32_t* words) {
  static_assert(n == 8 || n == 16, "whole words of codes");
  for (int w = 0; w < n / 8; ++w) words[w] = 0;
  if (q.byte == 0) return;
  std::uint32_t half[n / 4];
  if (codes::uq_fold_ok(q.byte)) {
    const float S = codes::kB * q.twice_inv_scale * pre;  // exact: powers of two, <= 2^127
    for (int h = 0; h < n / 4; ++h) {
      float acc = codes::kMagic;
      for (int j = 0; j < 4; ++j) acc = codes::uq_code_accumulate(x[4 * h + j], S, float(1 << (4 * j)), acc);
      half[h] = codec::float_bits(acc) & 0xffffu;
    }
  } else {  // e < -100: y2 = fl(x * pre) * 2^(1-e) first, as the spec writes it
    for (int h = 0; h < n / 4; ++h) {
      float acc = codes::kMagic;
      for (int j = 0; j < 4; ++j)
        acc = codes::uq_code_accumulate((x[4 * h + j] * pre) * q.twice_inv_scale, codes::kB, float(1 << (4 * j)),
                                        acc);
      half[h] = codec::float_bits(acc) & 0xffffu;
    }
  }
  for (int w = 0; w < n / 8; ++w) words[w] = half[2 * w] | (half[2 * w + 1] << 16);
}

template <int n>
KOKKOS_INLINE_FUNCTION void store_words(std::uint8_t* dst, const std::uint32_t* words, bool aligned_words) {
  for (int w = 0; w < n; ++w) {
    if (aligned_words) wio::store4(dst + 4 * w, words[w]);
    else wio::store_bytes(dst + 4 * w, words[w]);
  }
}

// n consecutive elements first.. of row (token, head) as floats: for rows that allow
// them, 16-byte loads on a device and a plain contiguous loop on a host (which the
// compiler vectorises); else element access through the view.
template <int n, class View>
KOKKOS_INLINE_FUNCTION void load_row(const View& view, bool chunked, std::int64_t token, int head, int first,
                                     float* out) {
  if (chunked) {
    const bf16* row = &view(token, head, 0) + first;
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
    for (int c = 0; c < n / 8; ++c) {
      const wio::Chunk16 ch = wio::load16(row + 8 * c);
      for (int j = 0; j < 8; ++j) out[8 * c + j] = wio::bf16_of(ch, j);
    }
#else
    for (int j = 0; j < n; ++j) out[j] = codec::bf16_to_float(row[j]);
#endif
  } else {
    for (int j = 0; j < n; ++j) out[j] = codec::bf16_to_float(view(token, head, first + j));
  }
}

// ------------------------------------------------------------------ the kernel
// Lanes an item on a GPU: 32 (the split layout) unless a benchmark build asks for the
// 16-lane one (-DUQ_KV_WRITER_GPU_LANES=16, for A/B runs; docs/PERF.md §8).
#ifndef UQ_KV_WRITER_GPU_LANES
#define UQ_KV_WRITER_GPU_LANES 32
#endif
template <class ExecSpace>
inline constexpr int kv_writer_lanes =
    Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible ? 1 : UQ_KV_WRITER_GPU_LANES;

// Lanes: 1, 16 or 32 (the default for the execution space; tests run the 16- and
// 32-lane phases on the host through run_team_in_order).
template <class ExecSpace, class KView, class VView, class SlotView, class CacheView, class CountView,
          int Lanes = kv_writer_lanes<ExecSpace>>
struct WriteKvGeneric {
  static constexpr int kLanes = Lanes;
  static constexpr bool kSplit = kLanes == 32;  // K and V on separate warps
  static constexpr int kTeam = kLanes == 1 ? 1 : 128;
  static constexpr int kItems = kTeam / kLanes;
  static constexpr int kSpan = kLanes == 1 ? ultraquant::kHeadDim : 16;  // elements of a row a lane loads
  static_assert(kLanes == 1 || kLanes == 16 || kLanes == 32, "the phases below are written for 1, 16 or 32 lanes");
  // Scratch (GPU layouts): per item 16 rows of 16 floats padded to 20, padded to 336;
  // the split layout adds K's pair maxima, 16 columns of 8 padded to 12 (the item then
  // 528 floats: a bank offset of 16 between the two items of a warp either way); then
  // 2 flags per item.
  static constexpr int kRowPitch = 20;
  static constexpr int kPairPitch = 12;
  static constexpr int kRowFloats = 16 * kRowPitch + 16;
  static constexpr int kItemFloats = kRowFloats + (kSplit ? 16 * kPairPitch : 0);
  static constexpr int kScratchBytes = kLanes == 1 ? 0 : kItems * (kItemFloats + 2) * int(sizeof(float));

  // Light weight: the functor travels as a kernel argument, never through the
  // constant-memory path (which waits on the host for the previous such kernel).
  using policy = Kokkos::TeamPolicy<ExecSpace, Kokkos::LaunchBounds<kTeam, 8>,
                                    Kokkos::Experimental::WorkItemProperty::HintLightWeight_t>;
  using member = typename policy::member_type;
  // Hosts: one item per index of a range (no team machinery to set up per call).
  using host_policy = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<int>>;

  KView k;
  VView v;
  SlotView slots;
  CacheView cache;
  CountView counts;
  int num_heads = 0;
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
    num_items = static_cast<int>(static_cast<std::int64_t>(k.extent(0)) * num_heads);
    num_slots = static_cast<std::int64_t>(cache.extent(0)) * static_cast<std::int64_t>(cache.extent(1));
    while ((1 << block_shift) < static_cast<int>(cache.extent(1))) ++block_shift;
    chunked = wio::rows_are_chunked(k) && wio::rows_are_chunked(v);
    aligned_words = wio::words_are_aligned(cache, 4);
  }

  // One thread's share: which item, which lane of it, and (from locate, once the row
  // loads are in flight) where the item's slot is: null when the slot is negative,
  // skipped, or out of range (counted there once per token).
  // lane: 0..kLanes-1 within the item; side: 0 = K, 1 = V (the split layout's warps;
  // the 16-lane layout's lanes do both); c: the lane's 16 elements 16c.. of its row(s).
  // (The token is clamped into range for the last team's spare items: the GPU phases
  // compute on it and store nothing, so that no branch waits on the slot.)
  struct Item {
    std::int64_t token;
    int head, lane, side, c, local_item;
    bool valid;
    std::uint8_t* dst;
  };

  KOKKOS_INLINE_FUNCTION Item item_of(int league_rank, int team_rank) const {
    Item it;
    if constexpr (kSplit) {
      // warps: [K of items 0, 1], [V of items 0, 1], [K of 2, 3], [V of 2, 3]
      const int warp = team_rank >> 5, q = team_rank & 31;
      it.side = warp & 1;
      it.local_item = 2 * (warp >> 1) + (q >> 4);
      it.c = q & 15;
      it.lane = 16 * it.side + it.c;
    } else {
      it.lane = team_rank % kLanes;
      it.local_item = team_rank / kLanes;
      it.side = 0;
      it.c = it.lane;
    }
    const int item = league_rank * kItems + it.local_item;  // 32-bit: a 64-bit division is a long subroutine
    it.valid = item < num_items;
    const int clamped = it.valid ? item : num_items - 1;
    it.token = clamped / num_heads;
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

  // GPU layouts: one team, three phases separated by two barriers.
  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    Item it = item_of(team.league_rank(), team.team_rank());
    float* scratch = static_cast<float*>(team.team_shmem().get_shmem(int{kScratchBytes}));
    float vmine[kSpan];  // the lane's V values, kept from phase 1 to phase 2
    phase1(it, scratch, vmine);
    team.team_barrier();
    phase2(it, scratch, vmine);
    team.team_barrier();
    phase3(it, scratch);
  }

  // Hosts: one item.
  KOKKOS_INLINE_FUNCTION void operator()(const int item) const {
    Item it = item_of(item, 0);
    locate(it, slot_of(it));
    if (it.dst) write_item(it.token, it.head, it.dst);
  }

  // The GPU phases of one team on the host, thread after thread and phase after phase
  // (what the barriers guarantee), for the tests.
  void run_team_in_order(int league_rank, float* scratch) const {
    Item it[kTeam];
    float vmine[kTeam][kSpan];
    for (int r = 0; r < kTeam; ++r) it[r] = item_of(league_rank, r);
    for (int r = 0; r < kTeam; ++r) phase1(it[r], scratch, vmine[r]);
    for (int r = 0; r < kTeam; ++r) phase2(it[r], scratch, vmine[r]);
    for (int r = 0; r < kTeam; ++r) phase3(it[r], scratch);
  }

  int league_size() const { return (num_items + kItems - 1) / kItems; }

  // ---- host: one thread, one item
  KOKKOS_INLINE_FUNCTION void write_item(std::int64_t token, int head, std::uint8_t* dst) const {
    float x[ultraquant::kHeadDim];
    load_row<ultraquant::kHeadDim>(k, chunked, token, head, 0, x);
    wht_local<ultraquant::kHeadDim>(x);
    for (int i = 0; i < ultraquant::kHeadDim; ++i) x[i] *= 0.0625f;
    quantise_row(x, dst + ultraquant::kKCodes, dst + ultraquant::kKScales);
    load_row<ultraquant::kHeadDim>(v, chunked, token, head, 0, x);
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

  // ---- GPU phases (kLanes = 16 or 32; kSpan = 16)
  // Counts the row once: the lane whose atomic finds the item's flag still 0.
  KOKKOS_INLINE_FUNCTION void flag_nonfinite(float* flag) const {
    if (Kokkos::atomic_exchange(flag, 1.0f) == 0.0f) count(counts, Counter::nonfinite_inputs);
  }

  // n codes of a group (the lane's share, element offset `first` of its codes: 8 per
  // word) and, from the group's first lane, its scale byte.
  template <int n>
  KOKKOS_INLINE_FUNCTION void store_codes(const float* mine, const UqGroup& q, float pre, int first, bool scale_lane,
                                          int group, std::uint8_t* codes, std::uint8_t* scales) const {
    std::uint32_t words[n / 8];
    uq_code_words<n>(mine, q, pre, words);
    store_words<n / 8>(codes + first / 2, words, aligned_words);
    if (scale_lane) scales[group] = q.byte;
  }

  // A scratch row of n floats (16-byte aligned: the pitch is 80 bytes, halves at 32)
  // in n / 4 16-byte accesses.
  template <int n = 16>
  KOKKOS_INLINE_FUNCTION static void scratch_store(float* row, const float* x) {
    for (int c = 0; c < n / 4; ++c) {
      wio::Chunk16 ch;
      for (int j = 0; j < 4; ++j) ch.w[j] = codec::float_bits(x[4 * c + j]);
      reinterpret_cast<wio::Chunk16*>(row)[c] = ch;
    }
  }
  template <int n = 16>
  KOKKOS_INLINE_FUNCTION static void scratch_load(const float* row, float* x) {
    for (int c = 0; c < n / 4; ++c) {
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
  // The padding float after a row carries the lane's V partial maximum (as bits).
  static constexpr int kPartial = 16;
  // Split layout: column c's maxima of the 8 row pairs (2g, 2g + 1), as bits.
  KOKKOS_INLINE_FUNCTION float* pairs_of(const Item& it, float* scratch) const {
    return rows_of(it, scratch) + kRowFloats + kPairPitch * it.c;
  }

  // Phase 1: the loads (slot first, consumed last), K's WHT stages 0-3 into row c of
  // the scratch, V's partial maximum; the flags zeroed.
  KOKKOS_INLINE_FUNCTION void phase1(Item& it, float* scratch, float* vmine) const {
    float* rows = rows_of(it, scratch);
    if (it.lane == 0) flags_of(it, scratch)[0] = flags_of(it, scratch)[1] = 0.0f;
    const std::int64_t slot = slot_of(it);
    const bool does_k = !kSplit || it.side == 0, does_v = !kSplit || it.side == 1;
    float x[kSpan];
    if (does_k) load_row<kSpan>(k, chunked, it.token, it.head, kSpan * it.c, x);
    if (does_v) load_row<kSpan>(v, chunked, it.token, it.head, kSpan * it.c, vmine);
    if (does_k) {
      wht_local<kSpan>(x);  // stages 0..3
      scratch_store(rows + kRowPitch * it.c, x);
    }
    if (does_v)
      rows[kRowPitch * it.c + kPartial] = codec::bits_float(static_cast<std::uint32_t>(max_abs_bits<kSpan>(vmine)));
    locate(it, slot);
  }

  // Phase 2: K's column c (elements c + 16 i), stages 4-7 (elements 16, 32, 64, 128
  // apart), written back unscaled (the 1/16 is folded into the quantisation); V's group
  // maximum from the partner's partial (lane c ^ 1 holds the other half of the group
  // of 32), then the lane's 16 V codes.
  KOKKOS_INLINE_FUNCTION void phase2(const Item& it, float* scratch, const float* vmine) const {
    const int c = it.c;
    float* rows = rows_of(it, scratch);
    float* flags = flags_of(it, scratch);
    std::int32_t col_max = 0;
    if (!kSplit || it.side == 0) {
      float y[16];
      for (int i = 0; i < 16; ++i) y[i] = rows[kRowPitch * i + c];
      wht_local<16>(y);
      if constexpr (kSplit) {  // the pair maxima for phase 3's groups, and their maximum
        float pm[8];
        for (int g = 0; g < 8; ++g)
          pm[g] = codec::bits_float(static_cast<std::uint32_t>(max_abs_bits<2>(y + 2 * g)));
        scratch_store<8>(pairs_of(it, scratch), pm);
        col_max = max_abs_bits<8>(pm);  // (the bits of non-negative floats: their own |.|)
      } else {
        col_max = max_abs_bits<16>(y);
      }
      for (int i = 0; i < 16; ++i) rows[kRowPitch * i + c] = y[i];
      if (it.dst && col_max >= 0x7f800000) flag_nonfinite(&flags[1]);
    }
    if (!kSplit || it.side == 1) {
      const std::int32_t mine = static_cast<std::int32_t>(codec::float_bits(rows[kRowPitch * c + kPartial]));
      const std::int32_t other = static_cast<std::int32_t>(codec::float_bits(rows[kRowPitch * (c ^ 1) + kPartial]));
      const UqGroup q = uq_group_of_max(mine > other ? mine : other);
      if (!it.dst) return;
      store_codes<16>(vmine, q, 1.0f, 16 * c, (c & 1) == 0, c / 2, it.dst + ultraquant::kVCodes,
                      it.dst + ultraquant::kVScales);
      if (!q.finite && (c & 1) == 0) flag_nonfinite(&flags[0]);
    }
  }

  // Phase 3: K's codes. 16 lanes: lane c quantises row c (its group's other half is row
  // c ^ 1). 32 lanes: lane l the 8 elements 8l.. (row l / 2, half l % 2), its group g =
  // l / 4 being rows 2g and 2g + 1, whose maximum is that of the 16 columns' pair
  // maxima g.
  KOKKOS_INLINE_FUNCTION void phase3(const Item& it, float* scratch) const {
    const float* rows = rows_of(it, scratch);
    if constexpr (kSplit) {
      const int l = it.lane, g = l >> 2;
      const float* pairs = rows + kRowFloats + g;
      float pm[16], mine[8];
      for (int col = 0; col < 16; ++col) pm[col] = pairs[kPairPitch * col];
      scratch_load<8>(rows + kRowPitch * (l >> 1) + 8 * (l & 1), mine);
      const UqGroup q = uq_group_of_max(max_abs_bits<16>(pm), 0.0625f);
      if (!it.dst) return;
      store_codes<8>(mine, q, 0.0625f, 8 * l, (l & 3) == 0, g, it.dst + ultraquant::kKCodes,
                     it.dst + ultraquant::kKScales);
    } else {
      const int c = it.c;
      float mine[16], other[16];  // rows c and c ^ 1: the group of 32, unscaled
      scratch_load(rows + kRowPitch * c, mine);
      scratch_load(rows + kRowPitch * (c ^ 1), other);
      const UqGroup q = uq_group(mine, other, 0.0625f);
      if (!it.dst) return;
      store_codes<16>(mine, q, 0.0625f, 16 * c, (c & 1) == 0, c / 2, it.dst + ultraquant::kKCodes,
                      it.dst + ultraquant::kKScales);
    }
  }

  void launch(const ExecSpace& exec) const {
    if (num_items == 0) return;
    if constexpr (kLanes == 1) {
      Kokkos::parallel_for("uq::write_kv", host_policy(exec, 0, num_items), *this);
    } else {
      policy p(exec, league_size(), kTeam);
      p.set_scratch_size(0, Kokkos::PerTeam(kScratchBytes));
      Kokkos::parallel_for("uq::write_kv", p, *this);
    }
  }
};

}  // namespace impl
}  // namespace uq
