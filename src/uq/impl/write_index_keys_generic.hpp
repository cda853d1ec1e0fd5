// Generic Kokkos NVFP4 index-key writer (spec nvfp4-index.md §3). One team per 16
// tokens, one thread per (token, scale group): the group's 16 values, its absmax A,
// scale byte e4m3(fl32(A / 6)), and 16 E2M1 codes of fl32(x / s) (8 bytes, low nibble
// = even dim) written into the token's page at its position. A group holding a
// non-finite value is written as zeros (scale byte 0, codes 0); the token is counted
// once, through a per-token flag in scratch.
#pragma once

#include "uq/error.hpp"
#include "uq/impl/status_counters.hpp"
#include "uq/nvfp4.hpp"
#include "uq/types.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace uq {
namespace impl {

KOKKOS_INLINE_FUNCTION float key_value(float x) { return x; }
KOKKOS_INLINE_FUNCTION float key_value(bf16 x) { return codec::bf16_to_float(x); }

template <class ExecSpace, class KeyView, class SlotView, class CacheView, class CountView>
struct WriteIndexKeysGeneric {
  using policy = Kokkos::TeamPolicy<ExecSpace>;
  using member = typename policy::member_type;

  static constexpr int kTokensPerTeam = 16;
  static constexpr int kScratchBytes = kTokensPerTeam * int(sizeof(int));

  KeyView keys;
  SlotView slots;
  CacheView cache;
  CountView counts;
  std::int64_t num_tokens = 0;
  std::int64_t num_slots = 0;  // num_blocks * 128

  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    const std::int64_t t0 = static_cast<std::int64_t>(team.league_rank()) * kTokensPerTeam;
    const int n = num_tokens - t0 < kTokensPerTeam ? static_cast<int>(num_tokens - t0) : kTokensPerTeam;
    // A prvalue, not the member itself: get_shmem takes a reference, and nvcc has no
    // device definition of a static constexpr member to bind it to.
    int* nonfinite = static_cast<int*>(team.team_shmem().get_shmem(int{kScratchBytes}));
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n), [&](int i) { nonfinite[i] = 0; });
    team.team_barrier();

    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n * nvfp4::kGroups), [&](int item) {
      const int i = item / nvfp4::kGroups, g = item % nvfp4::kGroups;
      const std::int64_t token = t0 + i;
      const std::int64_t slot = static_cast<std::int64_t>(slots(token));
      if (slot < 0) return;  // skipped token: its slot is untouched
      if (slot >= num_slots) {
        if (g == 0) count(counts, Counter::bad_slots);
        return;
      }
      const std::int64_t page = slot / nvfp4::kBlockTokens;
      const int pos = static_cast<int>(slot % nvfp4::kBlockTokens);

      float x[nvfp4::kGroup];
      float absmax = 0.0f;
      bool finite = true;
      for (int j = 0; j < nvfp4::kGroup; ++j) {
        x[j] = key_value(keys(token, nvfp4::kGroup * g + j));
        finite = finite && codec::is_finite(x[j]);
        const float a = x[j] < 0.0f ? -x[j] : x[j];
        absmax = a > absmax ? a : absmax;
      }
      if (!finite) nonfinite[i] = 1;  // every writer stores the same value
      const std::uint8_t scale_byte = finite ? nvfp4::scale_byte_for_absmax(absmax) : 0;
      const float s = codec::e4m3_to_float(scale_byte);
      for (int j = 0; j < nvfp4::kGroup / 2; ++j) {
        unsigned lo = 0, hi = 0;
        if (s != 0.0f) {
          lo = nvfp4::e2m1_code_nearest_even(x[2 * j] / s);
          hi = nvfp4::e2m1_code_nearest_even(x[2 * j + 1] / s);
        }
        cache(page, nvfp4::code_offset(pos, nvfp4::kGroup * g + 2 * j)) = static_cast<std::uint8_t>(lo | (hi << 4));
      }
      cache(page, nvfp4::scale_offset(pos, g)) = scale_byte;
    });
    team.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n), [&](int i) {
      if (nonfinite[i]) count(counts, Counter::nonfinite_inputs);
    });
  }

  void launch(const ExecSpace& exec) const {
    const std::int64_t league = (num_tokens + kTokensPerTeam - 1) / kTokensPerTeam;
    if (league == 0) return;
    policy p(exec, static_cast<int>(league), Kokkos::AUTO);
    p.set_scratch_size(0, Kokkos::PerTeam(kScratchBytes));
    Kokkos::parallel_for("uq::write_index_keys", p, *this);
  }
};

}  // namespace impl
}  // namespace uq
