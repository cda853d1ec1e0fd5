// Generic Kokkos NVFP4 index-key writer (spec nvfp4-index.md §3), laid out for the
// memory system.
//
// One lane per (token, scale group of 16). On a GPU a team is 128 threads: thread r takes
// group r % 8 of token r / 8 of the team's 16 tokens, so the 8 lanes of a token are
// neighbours (plain team threads: the same threads as 16 x 8 vector lanes were slower on
// the H200, docs/perf-log/2026-12-04-index-writer-threads.md). On a host one thread
// does a team's 16 tokens and their 8 groups in turn. A lane needs nothing from the
// others: it reads its 16 values (two or four 16-byte loads when the rows allow them;
// issued together with the slot's load, before anything waits on the slot, so the two
// memory latencies overlap), takes their absmax A, the scale byte e4m3(fl32(A / 6)), and
// the 16 E2M1 codes of fl32(x / s), and stores the 8 code bytes as two 4-byte words (page
// offset t*64 + 8g) and its scale byte (8192 + t*8 + g: the 8 lanes of a token write 8
// consecutive bytes). No exchange between the lanes (a token with non-finite groups is
// counted by its first such group's lane, which re-reads the groups before it) and no
// team barrier; one launch (league = ceil(T / 16)).
//
// On a GPU the codes of fl32(x / s) come from x itself, compared with s times the
// midpoints (exactly the same codes: codes::nv_code_words16_of_x says why), by the
// multiply-add search of uq/impl/writer_codes.hpp; no quotient is formed. The scale byte and its float come
// from codes::nv_scale_byte / e4m3_nonnegative_to_float: the spec's rounding on the
// bits, without the branches and integer conversions of the definitional functions.
#pragma once

#include "uq/impl/status_counters.hpp"
#include "uq/impl/team_policy.hpp"
#include "uq/impl/writer_codes.hpp"
#include "uq/impl/writer_io.hpp"
#include "uq/nvfp4.hpp"
#include "uq/types.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace uq {
namespace impl {

KOKKOS_INLINE_FUNCTION float key_value(float x) { return x; }
KOKKOS_INLINE_FUNCTION float key_value(bf16 x) { return codec::bf16_to_float(x); }

template <class ExecSpace, class KeyView, class SlotView, class CacheView, class CountView>
struct WriteIndexKeysGeneric {
  static constexpr bool kHost = Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible;
  static constexpr int kTokens = 16;                                     // tokens a team
  static constexpr int kThreads = kHost ? 1 : kTokens * nvfp4::kGroups;  // threads a team (host: 1, the tokens in turn)
  using key_type = typename KeyView::non_const_value_type;
  static constexpr int kKeysPerChunk = 16 / int(sizeof(key_type));
  static constexpr int kChunksPerGroup = nvfp4::kGroup / kKeysPerChunk;

  using policy = TeamPolicyFor<ExecSpace, Kokkos::LaunchBounds<kThreads, 8>>;
  using member = typename policy::member_type;

  KeyView keys;
  SlotView slots;
  CacheView cache;
  CountView counts;
  std::int64_t num_tokens = 0;
  std::int64_t num_slots = 0;  // num_blocks * 128
  bool chunked = false;        // key rows allow 16-byte loads
  bool aligned_words = false;  // pages are 4-byte aligned

  // Group g of token t: 16 values as floats.
  KOKKOS_INLINE_FUNCTION void load_group(std::int64_t token, int g, float* x) const {
    if (chunked) {
      const auto* p = reinterpret_cast<const unsigned char*>(&keys(token, 0) + nvfp4::kGroup * g);
      for (int c = 0; c < nvfp4::kGroup / kKeysPerChunk; ++c) {
        const wio::Chunk16 ch = wio::load16(p + 16 * c);
        for (int j = 0; j < kKeysPerChunk; ++j) {
          if constexpr (std::is_same<key_type, float>::value) x[kKeysPerChunk * c + j] = wio::float_of(ch, j);
          else x[kKeysPerChunk * c + j] = wio::bf16_of(ch, j);
        }
      }
    } else {
      for (int j = 0; j < nvfp4::kGroup; ++j) x[j] = key_value(keys(token, nvfp4::kGroup * g + j));
    }
  }

  // Writes group g (its 16 values x) at page position pos; returns whether it was finite.
  KOKKOS_INLINE_FUNCTION bool write_group(const float* x, int g, std::uint8_t* page, int pos) const {
    // max |x| on the bits, as a tree (see max_abs_bits in write_kv_generic.hpp)
    std::int32_t m[nvfp4::kGroup];
    for (int j = 0; j < nvfp4::kGroup; ++j) m[j] = static_cast<std::int32_t>(codec::float_bits(x[j]) & 0x7fffffffu);
    for (int w = nvfp4::kGroup / 2; w >= 1; w /= 2)
      for (int j = 0; j < w; ++j) m[j] = m[j + w] > m[j] ? m[j + w] : m[j];
    const std::uint32_t amax = static_cast<std::uint32_t>(m[0]);
    const bool finite = amax < 0x7f800000u;  // else written as a zero group
    const std::uint8_t scale_byte = finite ? codes::nv_scale_byte(codec::bits_float(amax)) : std::uint8_t{0};
    const float s = codes::e4m3_nonnegative_to_float(scale_byte);
    std::uint32_t words[2] = {0, 0};
    if (s != 0.0f) codes::nv_group_code_words(x, s, words);
    std::uint8_t* dst = page + nvfp4::code_offset(pos, nvfp4::kGroup * g);
    for (int w = 0; w < 2; ++w) {
      if (aligned_words) wio::store4(dst + 4 * w, words[w]);
      else wio::store_bytes(dst + 4 * w, words[w]);
    }
    page[nvfp4::scale_offset(pos, g)] = scale_byte;
    return finite;
  }

  // A token with non-finite groups is counted once, by its first such group's lane: the
  // rare path re-reads the groups before it (no exchange between the lanes on the
  // common path, where a vector reduction cost every lane a few percent of its work).
  KOKKOS_INLINE_FUNCTION bool first_nonfinite_group(std::int64_t row, int g) const {
    for (int h = 0; h < g; ++h) {
      float x[nvfp4::kGroup];
      load_group(row, h, x);
      for (int j = 0; j < nvfp4::kGroup; ++j)
        if ((codec::float_bits(x[j]) & 0x7fffffffu) >= 0x7f800000u) return false;
    }
    return true;
  }

  // One lane's (token, group) as loaded: the key row (the last token's for a lane past
  // the end, which writes nothing), the slot (-1: nothing to write) and, for chunked rows,
  // the group's raw 16-byte chunks. The slot and the rows are loaded before anything
  // waits on the slot, so that the two loads overlap rather than follow each other.
  struct Pending {
    std::int64_t row = 0;
    std::int64_t slot = -1;
    wio::Chunk16 raw[kChunksPerGroup];
  };

  KOKKOS_INLINE_FUNCTION Pending load_pending(std::int64_t token, int g) const {
    Pending p;
    const bool in_range = token < num_tokens;
    p.row = in_range ? token : num_tokens - 1;
    p.slot = in_range ? static_cast<std::int64_t>(slots(p.row)) : std::int64_t{-1};
    if (chunked) {
      const auto* src = reinterpret_cast<const unsigned char*>(&keys(p.row, 0) + nvfp4::kGroup * g);
      for (int c = 0; c < kChunksPerGroup; ++c) p.raw[c] = wio::load16(src + 16 * c);
    }
    return p;
  }

  // The lane's work once its loads are in: the group written (or skipped), and the
  // counts (a bad slot once per token, by group 0's lane).
  KOKKOS_INLINE_FUNCTION void finish(const Pending& p, int g) const {
    if (p.slot >= num_slots) {
      if (g == 0) count(counts, Counter::bad_slots);
      return;
    }
    if (p.slot < 0) return;  // skipped token (untouched)
    float x[nvfp4::kGroup];
    if (chunked) {
      for (int c = 0; c < kChunksPerGroup; ++c)
        for (int j = 0; j < kKeysPerChunk; ++j) {
          if constexpr (std::is_same<key_type, float>::value) x[kKeysPerChunk * c + j] = wio::float_of(p.raw[c], j);
          else x[kKeysPerChunk * c + j] = wio::bf16_of(p.raw[c], j);
        }
    } else {
      load_group(p.row, g, x);
    }
    std::uint8_t* page = &cache(p.slot / nvfp4::kBlockTokens, 0);
    const int pos = static_cast<int>(p.slot % nvfp4::kBlockTokens);
    if (!write_group(x, g, page, pos) && first_nonfinite_group(p.row, g)) count(counts, Counter::nonfinite_inputs);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    const std::int64_t t0 = static_cast<std::int64_t>(team.league_rank()) * kTokens;
    if constexpr (kHost) {
      for (int i = 0; i < kTokens; ++i)
        for (int g = 0; g < nvfp4::kGroups; ++g) finish(load_pending(t0 + i, g), g);
    } else {
      const int g = team.team_rank() % nvfp4::kGroups;
      finish(load_pending(t0 + team.team_rank() / nvfp4::kGroups, g), g);
    }
  }

  void launch(const ExecSpace& exec) const {
    const std::int64_t league = (num_tokens + kTokens - 1) / kTokens;
    if (league == 0) return;
    static_assert(fits_kernel_argument<std::decay_t<decltype(*this)>>, "the functor must travel as a kernel argument");
    Kokkos::parallel_for("uq::write_index_keys", policy(exec, static_cast<int>(league), kThreads), *this);
  }
};

}  // namespace impl
}  // namespace uq
