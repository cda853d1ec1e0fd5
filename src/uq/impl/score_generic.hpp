// Generic Kokkos NVFP4 index scorer (spec nvfp4-index.md §4).
//
// One team per (request, chunk of consecutive logical blocks). Per block the team
// first decides each query row's kind (invisible, init, local, computed) from the
// lengths alone; a block no row needs computed is never loaded. Otherwise the page's
// 9216 bytes are copied into scratch (16-byte loads when aligned; each token's code
// row padded to 68 bytes so threads reading different tokens hit different banks),
// and every one of the request's H*QL columns is scored against every token of the
// page, so each page is read once. A column is query row r = c / H, head c % H; its
// E4M3 query is staged once per team as floats, dim-major, padded to Cols columns
// with zeros so the inner loop has a compile-time trip count. The dot products are
// split into 64 token slices (2 tokens each), so teams have at most 64 threads.
//
// Numerics: k̂ = e4m3(E2M1 x scale) through the format's table; q * k̂ is exact in
// fp32 (4 + 4 significant bits); the 128 products of a token are summed in fp32, in
// dim order. The causal mask (token 128 b + t visible to row r iff < vis(r)) is
// applied only in blocks some row does not see whole. The maximum ignores NaN dots
// (a NaN never replaces the running maximum), so a block whose visible dots are all
// NaN scores -inf.
#pragma once

#include "uq/error.hpp"
#include "uq/impl/score_rows.hpp"
#include "uq/impl/status_counters.hpp"
#include "uq/nvfp4.hpp"
#include "uq/types.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>

namespace uq {
namespace impl {

// The cache as the scorer addresses it: raw pages, 64-bit offsets.
struct IndexCacheAddressing {
  const std::uint8_t* base = nullptr;
  std::int64_t num_blocks = 0;
  bool aligned16 = false;  // every page starts on a 16-byte boundary
};

template <class CacheView>
IndexCacheAddressing index_cache_addressing(const CacheView& cache) {
  IndexCacheAddressing a;
  a.base = reinterpret_cast<const std::uint8_t*>(cache.data());
  a.num_blocks = static_cast<std::int64_t>(cache.extent(0));
  a.aligned16 = reinterpret_cast<std::uintptr_t>(a.base) % 16 == 0;  // the page stride 9216 is a multiple of 16
  return a;
}

struct alignas(16) IndexChunk16 {
  std::uint32_t w[4];
};

// 16 bytes from p as four little-endian words.
KOKKOS_INLINE_FUNCTION IndexChunk16 load_chunk16(const std::uint8_t* p, bool aligned) {
  IndexChunk16 c;
  if (aligned) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
    c = *reinterpret_cast<const IndexChunk16*>(p);
#else
    std::memcpy(&c, p, sizeof c);
#endif
  } else {
    for (int k = 0; k < 4; ++k)
      c.w[k] = static_cast<std::uint32_t>(p[4 * k]) | (static_cast<std::uint32_t>(p[4 * k + 1]) << 8) |
               (static_cast<std::uint32_t>(p[4 * k + 2]) << 16) | (static_cast<std::uint32_t>(p[4 * k + 3]) << 24);
  }
  return c;
}

// Everything about a score call that is not a view.
struct ScoreParams {
  int query_len = 1;
  int heads = 1;
  int init_blocks = 0;
  int local_blocks = 0;
  int max_blocks = 0;       // block_tables.extent(1)
  int blocks_per_team = 4;  // consecutive logical blocks per team
};

template <class ExecSpace, int Cols, class QView, class TableView, class LenView, class OutView, class LutView,
          class CountView>
struct ScoreGeneric {
  using policy = Kokkos::TeamPolicy<ExecSpace>;
  using member = typename policy::member_type;

  static constexpr int kD = nvfp4::kHeadDim;
  static constexpr int kTokens = nvfp4::kBlockTokens;
  static constexpr int kRowWords = nvfp4::kCodeBytesPerToken / 4 + 1;  // 16 code words + 1 pad
  static constexpr int kSlices = 64;                                   // token slices per page
  static constexpr int kTokensPerSlice = kTokens / kSlices;            // 2

  QView q;
  IndexCacheAddressing cache;
  TableView block_tables;
  LenView seq_lens;
  OutView scores;
  LutView lut;
  CountView counts;
  ScoreParams p;

  // Scratch regions, each a multiple of 16 bytes.
  static constexpr int kQBytes = kD * Cols * int(sizeof(float));
  static constexpr int kLutBytes = nvfp4::kTableEntries;
  static constexpr int kDecodeBytes = 256 * int(sizeof(float));
  static constexpr int kCodeBytes = kTokens * kRowWords * int(sizeof(std::uint32_t));
  static constexpr int kScaleBytes = kTokens * nvfp4::kGroups;
  static constexpr int kPartialBytes = Cols * kSlices * int(sizeof(float));
  static constexpr int kScratchBytes =
      kQBytes + kLutBytes + kDecodeBytes + kCodeBytes + kScaleBytes + kPartialBytes + 16;

  struct Scratch {
    float* q;                // [kD][Cols]
    std::uint8_t* lut;       // [256 * 8]
    float* decode;           // [256]: E4M3 byte -> value
    std::uint32_t* codes;    // [kTokens][kRowWords]
    std::uint8_t* scales;    // [kTokens][8]
    float* partial;          // [Cols][kSlices]
  };

  KOKKOS_INLINE_FUNCTION Scratch carve(const member& team) const {
    auto* base = static_cast<char*>(team.team_shmem().get_shmem_aligned(kScratchBytes - 16, 16));
    Scratch s;
    s.q = reinterpret_cast<float*>(base);
    s.lut = reinterpret_cast<std::uint8_t*>(base + kQBytes);
    s.decode = reinterpret_cast<float*>(base + kQBytes + kLutBytes);
    s.codes = reinterpret_cast<std::uint32_t*>(base + kQBytes + kLutBytes + kDecodeBytes);
    s.scales = reinterpret_cast<std::uint8_t*>(base + kQBytes + kLutBytes + kDecodeBytes + kCodeBytes);
    s.partial =
        reinterpret_cast<float*>(base + kQBytes + kLutBytes + kDecodeBytes + kCodeBytes + kScaleBytes);
    return s;
  }

  // The request's queries (zero-padded to Cols columns), the table and the E4M3
  // decode table into scratch.
  KOKKOS_INLINE_FUNCTION void stage(const member& team, const Scratch& s, std::int64_t req) const {
    const int cols = p.query_len * p.heads;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, Cols * kD), [&](int i) {
      const int c = i / kD, d = i % kD;  // consecutive threads read consecutive dims
      s.q[d * Cols + c] =
          c < cols ? codec::e4m3_to_float(q(req * p.query_len + c / p.heads, c % p.heads, d)) : 0.0f;
    });
    const bool lut_aligned = reinterpret_cast<std::uintptr_t>(lut.data()) % 16 == 0;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, nvfp4::kTableEntries / 16), [&](int k) {
      const IndexChunk16 c = load_chunk16(lut.data() + 16 * k, lut_aligned);
      for (int w = 0; w < 4; ++w)
        for (int j = 0; j < 4; ++j) s.lut[16 * k + 4 * w + j] = static_cast<std::uint8_t>(c.w[w] >> (8 * j));
    });
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, 256),
                         [&](int b) { s.decode[b] = codec::e4m3_to_float(static_cast<std::uint8_t>(b)); });
  }

  KOKKOS_INLINE_FUNCTION void load_page(const member& team, const Scratch& s, std::int64_t page) const {
    const std::uint8_t* src = cache.base + page * nvfp4::kPageBytes;
    constexpr int code_chunks = nvfp4::kPageCodes / 16;  // 512: 4 per token
    constexpr int chunks = nvfp4::kPageBytes / 16;       // 576
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, chunks), [&](int k) {
      const IndexChunk16 c = load_chunk16(src + 16 * k, cache.aligned16);
      if (k < code_chunks) {
        std::uint32_t* dst = s.codes + (k / 4) * kRowWords + (k % 4) * 4;
        for (int w = 0; w < 4; ++w) dst[w] = c.w[w];
      } else {
        std::uint8_t* dst = s.scales + 16 * (k - code_chunks);
        for (int w = 0; w < 4; ++w)
          for (int j = 0; j < 4; ++j) dst[4 * w + j] = static_cast<std::uint8_t>(c.w[w] >> (8 * j));
      }
    });
  }

  // Per column, the maximum dot over the page's tokens that the column's row sees
  // (only tokens below lim[c] when masked), reduced over this slice's tokens.
  KOKKOS_INLINE_FUNCTION void slice_max(const Scratch& s, int slice, bool masked, const int* lim) const {
    float run[Cols];
    for (int c = 0; c < Cols; ++c) run[c] = -codec::infinity();
    for (int j = 0; j < kTokensPerSlice; ++j) {
      const int t = slice + kSlices * j;
      float acc[Cols];
      for (int c = 0; c < Cols; ++c) acc[c] = 0.0f;
      const std::uint32_t* row = s.codes + t * kRowWords;
      for (int g = 0; g < nvfp4::kGroups; ++g) {
        const std::uint8_t* mags = s.lut + 8 * s.scales[t * nvfp4::kGroups + g];
        for (int w = 0; w < 2; ++w) {
          const std::uint32_t word = row[2 * g + w];
          for (int e = 0; e < 8; ++e) {
            const unsigned code = (word >> (4 * e)) & 15u;
            const float k = s.decode[nvfp4::apply_code_sign(mags[code & 7u], code)];
            const float* qd = s.q + (nvfp4::kGroup * g + 8 * w + e) * Cols;
            for (int c = 0; c < Cols; ++c) acc[c] += qd[c] * k;
          }
        }
      }
      for (int c = 0; c < Cols; ++c)
        if ((!masked || t < lim[c]) && acc[c] > run[c]) run[c] = acc[c];
    }
    for (int c = 0; c < Cols; ++c) s.partial[c * kSlices + slice] = run[c];
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    const int chunks_per_req = (p.max_blocks + p.blocks_per_team - 1) / p.blocks_per_team;
    const std::int64_t req = team.league_rank() / chunks_per_req;
    const std::int64_t b0 = static_cast<std::int64_t>(team.league_rank() % chunks_per_req) * p.blocks_per_team;
    const int QL = p.query_len;
    const int H = p.heads;
    const int cols = QL * H;

    const RequestLength len =
        request_length_in_table(seq_lens(req), p.max_blocks);
    if (b0 == 0 && (len.negative || len.too_long)) {
      Kokkos::single(Kokkos::PerTeam(team), [&]() {
        count(counts, len.negative ? Counter::negative_seq_lens : Counter::long_seq_lens);
      });
    }
    const std::int64_t L = len.tokens;
    const std::int64_t nb_req = blocks_for_tokens(L);
    const std::int64_t b_end = b0 + p.blocks_per_team < nb_req ? b0 + p.blocks_per_team : nb_req;
    if (b0 >= b_end) return;

    const Scratch s = carve(team);
    bool staged = false;
    for (std::int64_t b = b0; b < b_end; ++b) {
      // The page is needed only if some row's score of b is its computed maximum.
      bool any_computed = false;
      for (int r = 0; r < QL; ++r) {
        const std::int64_t nb = blocks_for_tokens(visible_tokens(L, QL, r));
        any_computed = any_computed || block_kind(b, nb, p.init_blocks, p.local_blocks) == BlockKind::Computed;
      }
      bool page_ok = false;
      if (any_computed) {
        const std::int64_t page = static_cast<std::int64_t>(block_tables(req, b));
        page_ok = page >= 0 && page < cache.num_blocks;
        if (!page_ok) {
          Kokkos::single(Kokkos::PerTeam(team), [&]() { count(counts, Counter::bad_block_ids); });
        } else {
          if (!staged) {
            stage(team, s, req);
            staged = true;
          }
          load_page(team, s, page);
          team.team_barrier();
          // Tokens of this page column c sees, in [0, 128].
          int lim[Cols];
          for (int c = 0; c < Cols; ++c) {
            const std::int64_t v = c < cols ? visible_tokens(L, QL, c / H) - b * kTokens : 0;
            lim[c] = v < 0 ? 0 : v > kTokens ? kTokens : static_cast<int>(v);
          }
          // Row 0 sees the least: if it sees the whole block, every row does.
          const bool masked = visible_tokens(L, QL, 0) < (b + 1) * kTokens;
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, kSlices),
                               [&](int slice) { slice_max(s, slice, masked, lim); });
          team.team_barrier();
        }
      }
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, cols), [&](int c) {
        const int r = c / H, h = c % H;
        const BlockKind kind =
            block_kind(b, blocks_for_tokens(visible_tokens(L, QL, r)), p.init_blocks, p.local_blocks);
        float raw = -codec::infinity();
        if (kind == BlockKind::Computed && page_ok)
          for (int k = 0; k < kSlices; ++k) {
            const float v = s.partial[c * kSlices + k];
            raw = v > raw ? v : raw;
          }
        scores(h, req * QL + r, b) = block_score(kind, raw);
      });
      // No barrier needed here: the next page's slices write `partial` only after the
      // barrier that follows its load, which every thread reaches after this loop.
    }
  }

  void launch(const ExecSpace& exec, std::int64_t num_reqs) const {
    const std::int64_t chunks_per_req = (p.max_blocks + p.blocks_per_team - 1) / p.blocks_per_team;
    const std::int64_t league = num_reqs * chunks_per_req;
    if (league == 0) return;
    // The page's work is split into kSlices token slices: more threads than that
    // would idle through the dot products.
    policy probe(exec, static_cast<int>(league), Kokkos::AUTO);
    probe.set_scratch_size(0, Kokkos::PerTeam(kScratchBytes));
    const int recommended = probe.team_size_recommended(*this, Kokkos::ParallelForTag());
    policy pol(exec, static_cast<int>(league), recommended < kSlices ? recommended : kSlices);
    pol.set_scratch_size(0, Kokkos::PerTeam(kScratchBytes));
    Kokkos::parallel_for("uq::score", pol, *this);
  }
};

}  // namespace impl
}  // namespace uq
