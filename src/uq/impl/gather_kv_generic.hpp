// Generic Kokkos kernel of uq::gather_kv (spec ultraquant.md §7): one team per output row (a
// position of some sequence), which finds its sequence by a binary search over kv_start_loc,
// then its threads dequantise the row's K and V code bytes of every KV head (two elements a
// byte, one 32-bit store), element by element exactly: bf16(FP4(code) x 2^(b - 127)), +0 for a
// zero group. Per-sequence counts (malformed ranges, positions past the table) are taken by the
// team whose row index is the sequence's, bad block ids by the row of a block's first requested
// position, so each is counted once.
#pragma once

#include "uq/core/sequence_rules.hpp"
#include "uq/impl/decode_generic.hpp"
#include "uq/impl/status_counters.hpp"
#include "uq/impl/team_policy.hpp"
#include "uq/types.hpp"
#include "uq/ultraquant.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace uq {
namespace impl {

template <class ExecSpace, class Tables, class Starts, class K, class V, class Counts>
struct GatherKvGeneric {
  using policy = TeamPolicyFor<ExecSpace>;
  using member = typename policy::member_type;
  static constexpr int kCodeBytes = ultraquant::kHeadDim / 2;  // 128: two elements a byte

  CacheAddressing cache;
  Tables block_tables;
  Starts kv_start_loc;
  K k_out;
  V v_out;
  Counts counts;
  int num_kv_heads = 0;
  int num_seqs = 0;
  std::int64_t num_tokens = 0;

  KOKKOS_INLINE_FUNCTION bool malformed(int b) const {
    return malformed_start_range<std::int64_t>(kv_start_loc(b), kv_start_loc(b + 1), b, num_seqs, num_tokens, 0);
  }

  // The sequence whose range holds row i: the last b with kv_start_loc(b) <= i (a binary search;
  // -1 when there is none or its range does not hold i, as with a malformed array).
  KOKKOS_INLINE_FUNCTION int sequence_of(std::int64_t i) const {
    int lo = 0, hi = num_seqs;  // kv_start_loc(lo) <= i is tested below; (hi) > i assumed
    if (num_seqs == 0 || kv_start_loc(0) > i) return -1;
    while (hi - lo > 1) {
      const int mid = lo + (hi - lo) / 2;
      if (kv_start_loc(mid) <= i) lo = mid; else hi = mid;
    }
    return i < kv_start_loc(lo + 1) && !malformed(lo) ? lo : -1;
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    const std::int64_t i = team.league_rank();
    const std::int64_t capacity = static_cast<std::int64_t>(block_tables.extent(1)) * cache.block_size;
    // Row i's source: (physical block or -1, position in it), or no write (-2).
    std::int64_t src = -2;
    Kokkos::single(
        Kokkos::PerTeam(team),
        [&](std::int64_t& s) {
          if (i < num_seqs) {  // this team counts sequence i's range problems
            if (malformed(static_cast<int>(i))) {
              count(counts, Counter::bad_start_locs);
            } else if (kv_start_loc(i + 1) - kv_start_loc(i) > capacity) {
              count(counts, Counter::long_seq_lens);
            }
          }
          s = -2;
          if (i >= num_tokens) return;
          const int b = sequence_of(i);
          if (b < 0) return;
          const std::int64_t t = i - kv_start_loc(b);
          s = -1;  // a zero row unless the position is in a good block
          if (t >= capacity) return;
          const std::int64_t physical = block_tables(b, t / cache.block_size);
          if (physical < 0 || physical >= cache.num_blocks) {
            if (t % cache.block_size == 0) count(counts, Counter::bad_block_ids);  // once a block
            return;
          }
          s = physical * cache.block_size + t % cache.block_size;
        },
        src);
    if (src == -2) return;
    const std::int64_t block = src < 0 ? -1 : src / cache.block_size;
    const std::int64_t pos = src < 0 ? 0 : src % cache.block_size;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, num_kv_heads * 2 * kCodeBytes), [&](int w) {
      const int h = w / (2 * kCodeBytes), side = (w / kCodeBytes) % 2, j = w % kCodeBytes;
      bf16 lo{0}, hi{0};
      if (block >= 0) {
        const std::uint8_t* slot = cache.base + block * cache.block_stride + pos * cache.pos_stride +
                                   static_cast<std::int64_t>(h) * cache.slot_bytes;
        const std::uint8_t byte = slot[(side ? ultraquant::kVCodes : ultraquant::kKCodes) + j];
        const std::uint8_t scale = slot[(side ? ultraquant::kVScales : ultraquant::kKScales) + 2 * j / ultraquant::kGroup];
        lo = codec::float_to_bf16(ultraquant::dequant(byte & 15u, scale));
        hi = codec::float_to_bf16(ultraquant::dequant(byte >> 4, scale));
      }
      if (side) {
        v_out(i, h, 2 * j) = lo;
        v_out(i, h, 2 * j + 1) = hi;
      } else {
        k_out(i, h, 2 * j) = lo;
        k_out(i, h, 2 * j + 1) = hi;
      }
    });
  }

  void launch(const ExecSpace& exec) const {
    // Rows, and at least one team per sequence for its counts.
    const std::int64_t league = num_tokens > num_seqs ? num_tokens : num_seqs;
    if (league == 0) return;
    policy pol = runs_on_host<ExecSpace>() ? policy(exec, static_cast<int>(league), 1)
                                           : policy(exec, static_cast<int>(league), 256);
    static_assert(fits_kernel_argument<std::decay_t<decltype(*this)>>, "the functor must travel as a kernel argument");
    Kokkos::parallel_for("uq::gather_kv", pol, *this);
  }
};

}  // namespace impl
}  // namespace uq
