// Generic Kokkos NVFP4 index scorer (spec nvfp4-index.md §4).
//
// Work: one team per (request, span of consecutive logical blocks); a team is kWarps team
// threads of kLanes vector lanes (a warp each on a GPU, one host thread on a CPU). The team
// stages the request's E4M3 queries as floats ([dim][Cols], zero-padded to Cols columns so the
// inner loops have compile-time trip counts) and the full dequantisation table k̂[scale][code]
// (256 x 16 floats, the code's sign included) in scratch, once; then each team thread takes
// every kWarps-th block of the span on its own, with no team barrier: a block that no query
// row needs computed is never loaded (its sentinels are written), a needed page is read
// straight from global memory, lane l scoring tokens l, l + 32, l + 64, l + 96 against every
// column, and the page's per-column maximum is a vector reduction (warp shuffles on a GPU).
//
// Why this shape (issue 20; docs/perf-log/2026-12-02-generic-scorer-restructure.md): the previous
// kernel copied each page into scratch between two team barriers, ran 64 threads on it, decoded
// each element through two dependent table loads (magnitude byte, then its value) and re-read the
// queries per token: scratch traffic and barriers, not arithmetic, set its speed. Here an element
// costs one table load and one to two integer operations (NibbleOffsets); the queries of a dim are
// one broadcast load shared by the lane's kTogether tokens; the page bytes are read once, by the
// lanes that use them; teams fill the device once (choose_generic_score_span); on a device the dim
// loop runs as 8 / kGroupsPerStep steps, so the body fits the instruction cache. What limits it now
// (ncu, 4 rows x 1 head): shared-memory latency and 4 warps per scheduler (128 registers); issue
// slots ~60 % busy. The k̂-table rows that 32 lanes read are random (their scale bytes): about 3
// bank conflicts a load, so up to 4 columns a device takes k̂ from two factors (kFactored:
// conflicts 40 M -> 2.7 M) at the price of two FP operations an element.
//
// Numerics: k̂ = e4m3(E2M1 x scale) through the format's table; q * k̂ is exact in fp32
// (4 + 4 significant bits); the 128 products of a token are summed in fp32, in dim order.
// The causal mask (token 128 b + t visible to row r iff < vis(r)) is applied only in
// blocks some row does not see whole. The maximum ignores NaN dots (a NaN never replaces
// the running maximum), so a block whose visible dots are all NaN scores -inf.
#pragma once

#include "uq/core/score_grid.hpp"
#include "uq/error.hpp"
#include "uq/impl/score_rows.hpp"
#include "uq/impl/status_counters.hpp"
#include "uq/impl/team_policy.hpp"
#include "uq/nvfp4.hpp"
#include "uq/types.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>

// Full unrolling of a loop whose indices must stay compile-time constants (register arrays)
// in device code; host compilers choose for themselves.
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define UQ_SCORE_UNROLL _Pragma("unroll")
#define UQ_SCORE_STEP_LOOP _Pragma("unroll 1")
#else
#define UQ_SCORE_UNROLL
#define UQ_SCORE_STEP_LOOP
#endif

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

// 4 bytes from p as a little-endian word.
KOKKOS_INLINE_FUNCTION std::uint32_t load_word4(const std::uint8_t* p, bool aligned) {
  if (aligned) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
    return *reinterpret_cast<const std::uint32_t*>(p);
#else
    std::uint32_t w;
    std::memcpy(&w, p, sizeof w);
    return w;
#endif
  }
  return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
         (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
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
    for (int k = 0; k < 4; ++k) c.w[k] = load_word4(p + 4 * k, false);
  }
  return c;
}

struct alignas(16) ScoreFloat4 {
  float v[4];
};

struct alignas(8) ScoreFloat2 {
  float v[2];
};

// Everything about a score call that is not a view.
struct ScoreParams {
  int query_len = 1;
  int heads = 1;
  int init_blocks = 0;
  int local_blocks = 0;
  int max_blocks = 0;       // block_tables.extent(1)
  int blocks_per_team = 4;  // the plan's league bound: teams never take fewer blocks than this
};

// Per column, the largest dot seen so far (-inf: none), and its Kokkos reducer; a NaN
// never replaces a value (the comparison is false), as the spec's maximum wants.
template <int Cols>
struct ColumnMax {
  float v[Cols];
};

template <int Cols, class Space>
struct ColumnMaxReducer {
  using reducer = ColumnMaxReducer;
  using value_type = ColumnMax<Cols>;
  using result_view_type = Kokkos::View<value_type, Space, Kokkos::MemoryUnmanaged>;

  value_type& value;
  KOKKOS_INLINE_FUNCTION explicit ColumnMaxReducer(value_type& v) : value(v) {}
  KOKKOS_INLINE_FUNCTION void join(value_type& dst, const value_type& src) const {
    for (int c = 0; c < Cols; ++c)
      if (src.v[c] > dst.v[c]) dst.v[c] = src.v[c];
  }
  KOKKOS_INLINE_FUNCTION void join(volatile value_type& dst, const volatile value_type& src) const {
    for (int c = 0; c < Cols; ++c)
      if (src.v[c] > dst.v[c]) dst.v[c] = src.v[c];
  }
  KOKKOS_INLINE_FUNCTION void init(value_type& v) const {
    for (int c = 0; c < Cols; ++c) v.v[c] = -codec::infinity();
  }
  KOKKOS_INLINE_FUNCTION value_type& reference() const { return value; }
  KOKKOS_INLINE_FUNCTION result_view_type view() const { return result_view_type(&value); }
  KOKKOS_INLINE_FUNCTION bool references_scalar() const { return true; }
};

// Blocks per team: the scorers' one-wave rule (uq/core/score_grid.hpp) for `slots` resident
// teams, never fewer than min_span blocks a team (every team thread gets a page) unless the
// table is shorter.
constexpr int choose_generic_score_span(std::int64_t num_reqs, int max_blocks, std::int64_t slots, int min_span) {
  const std::int64_t blocks = max_blocks > 0 ? max_blocks : 1;
  const std::int64_t span = one_wave_span(num_reqs, blocks, slots);
  return static_cast<int>(span < min_span ? (min_span < blocks ? min_span : blocks) : span);
}

template <class ExecSpace, int Cols, class QView, class TableView, class LenView, class OutView, class LutView,
          class CountView>
struct ScoreGeneric {
  static constexpr int kWarps = 4;                        // team threads (pages in flight per team)
  static constexpr int kLanes = 32;                       // vector lanes of a team thread
  static constexpr int kTeamsPerUnit = 4;                 // resident teams per compute unit (GPU)
  // At most 128 registers a thread so that kTeamsPerUnit teams are resident on an H200 SM
  // (the compiler's own choice, 168, left 3 and a 1.3-wave grid:
  // docs/perf-log/2026-12-02-generic-scorer-restructure.md).
  using policy = TeamPolicyFor<ExecSpace, Kokkos::LaunchBounds<kWarps * kLanes, kTeamsPerUnit>>;
  using member = typename policy::member_type;
  static constexpr bool kHost = Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible;

  static constexpr int kD = nvfp4::kHeadDim;
  static constexpr int kTokens = nvfp4::kBlockTokens;
  static constexpr int kTokensPerLane = kTokens / kLanes;  // 4
  // Tokens a lane scores together (sharing each query load): what the accumulators allow.
  static constexpr int kTogether = Cols <= 4 ? 4 : (Cols <= 16 ? 2 : 1);
  static constexpr int kCodes = 16;                        // code nibbles per scale byte
  // k̂ from nvfp4.hpp's two factors where they hold (two FP operations an element, weights read
  // by code: no bank conflicts) or from the table row of the scale byte (one load, ~3 bank
  // conflicts). On the H200 the first is faster up to 4 columns and slower with 32; on the
  // host (GCC 12) it is slower with 2 and 4 columns, so the host takes it with one column only
  // (docs/perf-log/2026-12-02-generic-scorer-factors.md, 2026-12-03-generic-scorer-offsets.md).
  static constexpr bool kFactored = kHost ? Cols == 1 : Cols <= 4;
  static constexpr int kWordsPerToken = nvfp4::kCodeBytesPerToken / 4;  // 16
  // Scale groups per step of the rolled dim loop (a device runs the steps as a loop, each step
  // unrolled). Fully unrolled, the body at 4 columns is thousands of instructions and the warps
  // stalled on instruction fetch (ncu `no_instruction` the largest stall): on the H200 one
  // group a step is fastest up to 8 columns, 4 groups above; a host compiler does better with
  // the plain unrolled form (docs/perf-log/2026-12-03-generic-scorer-steps.md).
  static constexpr int kGroupsPerStep = kHost ? nvfp4::kGroups : (Cols <= 8 ? 1 : 4);
  static constexpr int kWordsPerStep = kGroupsPerStep * nvfp4::kGroup / 8;
  static constexpr int kSteps = nvfp4::kGroups / kGroupsPerStep;
  static_assert(kTokensPerLane % kTogether == 0, "");

  QView q;
  IndexCacheAddressing cache;
  TableView block_tables;
  LenView seq_lens;
  OutView scores;
  LutView lut;
  CountView counts;
  ScoreParams p;
  int span = 4;  // blocks per team (launch)

  // Scratch regions, each a multiple of 16 bytes.
  static constexpr int kQBytes = kD * Cols * int(sizeof(float));
  static constexpr int kKhatRowBytes = kCodes * int(sizeof(float));  // one scale byte's 16 k̂
  static constexpr int kKhatBytes = 256 * kKhatRowBytes;
  static constexpr int kPairBytes = kFactored ? 256 * int(sizeof(ScoreFloat2)) : 0;       // only where used
  static constexpr int kWeightBytes = kFactored ? kCodes * int(sizeof(ScoreFloat2)) : 0;
  static constexpr int kScratchBytes = kQBytes + kKhatBytes + kPairBytes + kWeightBytes + 16;

  struct Scratch {
    float* q;             // [kD][Cols]
    float* khat;          // [256 scale bytes][16 codes]
    ScoreFloat2* pair;    // [256 scale bytes]: (A, B) of nvfp4.hpp's two factors, NaN where they do not apply
    ScoreFloat2* weight;  // [16 codes]: (weight_a, weight_b)
  };

  KOKKOS_INLINE_FUNCTION Scratch carve(const member& team) const {
    auto* base = static_cast<char*>(team.team_shmem().get_shmem_aligned(kScratchBytes - 16, 16));
    return Scratch{reinterpret_cast<float*>(base), reinterpret_cast<float*>(base + kQBytes),
                   reinterpret_cast<ScoreFloat2*>(base + kQBytes + kKhatBytes),
                   reinterpret_cast<ScoreFloat2*>(base + kQBytes + kKhatBytes + kPairBytes)};
  }

  // k̂ of (scale byte, code) as the table holds it.
  KOKKOS_INLINE_FUNCTION float khat_entry(int scale_byte, unsigned code) const {
    return codec::e4m3_to_float(nvfp4::apply_code_sign(lut(8 * scale_byte + (code & 7u)), code));
  }

  // The request's queries (zero-padded to Cols columns) and the k̂ table into scratch.
  KOKKOS_INLINE_FUNCTION void stage(const member& team, const Scratch& s, std::int64_t req) const {
    const int cols = p.query_len * p.heads;
    Kokkos::parallel_for(Kokkos::TeamVectorRange(team, Cols * kD), [&](int i) {
      const int c = i / kD, d = i % kD;  // consecutive lanes read consecutive dims
      s.q[d * Cols + c] =
          c < cols ? codec::e4m3_to_float(q(req * p.query_len + c / p.heads, c % p.heads, d)) : 0.0f;
    });
    Kokkos::parallel_for(Kokkos::TeamVectorRange(team, 256 * kCodes),
                         [&](int i) { s.khat[i] = khat_entry(i / kCodes, static_cast<unsigned>(i % kCodes)); });
    if constexpr (kFactored) stage_factors(team, s);
  }

  // The two factors of each scale byte, kept only where all 16 codes give the table's k̂
  // (compared as floats: a zero's sign cannot change a dot, which starts at +0), and the weights.
  KOKKOS_INLINE_FUNCTION void stage_factors(const member& team, const Scratch& s) const {
    Kokkos::parallel_for(Kokkos::TeamVectorRange(team, 256), [&](int sb) {
      const float a = khat_entry(sb, 2u), b = khat_entry(sb, 3u);  // k̂(+1), k̂(+1.5)
      bool exact = true;
      for (unsigned code = 0; code < unsigned(kCodes); ++code) {
        exact = exact && a * nvfp4::code_weight_a(code) + b * nvfp4::code_weight_b(code) == khat_entry(sb, code);
      }
      s.pair[sb] = exact ? ScoreFloat2{a, b} : ScoreFloat2{codec::quiet_nan(), codec::quiet_nan()};
    });
    Kokkos::parallel_for(Kokkos::TeamVectorRange(team, int(kCodes)), [&](int code) {  // (a prvalue: NVCC's device
      // code cannot bind the range's const reference to a static member)
      s.weight[code] = ScoreFloat2{nvfp4::code_weight_a(static_cast<unsigned>(code)),
                                   nvfp4::code_weight_b(static_cast<unsigned>(code))};
    });
  }

  // Byte offsets row + (code << Shift) of the 8 code nibbles of one code word, for table
  // reads: a shift and a mask an element. GCC 12 (-O3 -march=native) makes code of very
  // different speed from two spellings of it: nibble-then-scale is faster with one token at a
  // time (32 columns), slower with 2 or 4 (docs/perf-log/2026-12-03-generic-scorer-offsets.md).
  // Portable on purpose: a CUDA byte-permute form was a few % faster at 32 columns on the H200
  // and is not generic code (docs/perf-log/2026-12-03-generic-scorer-portable.md).
  template <int Shift>
  struct NibbleOffsets {
    static_assert(Shift >= 2 && Shift <= 4, "the tables read so have entries of 4, 8 or 16 bytes");
    std::uint32_t word, row;
    NibbleOffsets() = default;
    KOKKOS_INLINE_FUNCTION NibbleOffsets(std::uint32_t w, std::uint32_t r) : word(w), row(r) {}
    // Offset of nibble e (0..7, a constant once unrolled).
    KOKKOS_INLINE_FUNCTION std::uint32_t operator()(int e) const {
      if constexpr (kHost && kTogether == 1) {
        return row + (((word >> (4 * e)) & 0xfu) << Shift);
      } else {
        constexpr std::uint32_t mask = 0xfu << Shift;
        return row + (4 * e < Shift ? (word << (Shift - 4 * e)) & mask : (word >> (4 * e - Shift)) & mask);
      }
    }
  };
  using WeightOffsets = NibbleOffsets<3>;
  using KhatOffsets = NibbleOffsets<2>;

  // acc[j][c] += q[c] * k[j] for every column c of one dim's queries q (broadcast loads). On
  // a device the loads are kept wide: 16 bytes where Cols allows, and 8-byte integer loads at
  // Cols >= 16, where NVCC split this kernel's 16-byte float loads into scalar ones (one load
  // per FMA; a scalar 64-bit type is never split). A host compiler vectorises the plain loop.
  KOKKOS_INLINE_FUNCTION static void fma_dim(const float* q, const float (&k)[kTogether],
                                             float (&acc)[kTogether][Cols]) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
    if constexpr (Cols >= 16) {
      const std::uint64_t* qp = reinterpret_cast<const std::uint64_t*>(q);
      UQ_SCORE_UNROLL
      for (int c2 = 0; c2 < Cols / 2; ++c2) {
        const std::uint64_t pair = qp[c2];
        const float lo = codec::bits_float(static_cast<std::uint32_t>(pair));
        const float hi = codec::bits_float(static_cast<std::uint32_t>(pair >> 32));
        UQ_SCORE_UNROLL
        for (int j = 0; j < kTogether; ++j) {
          acc[j][2 * c2] += lo * k[j];
          acc[j][2 * c2 + 1] += hi * k[j];
        }
      }
    } else if constexpr (Cols % 4 == 0) {
      const ScoreFloat4* qv = reinterpret_cast<const ScoreFloat4*>(q);
      UQ_SCORE_UNROLL
      for (int c4 = 0; c4 < Cols / 4; ++c4) {
        const ScoreFloat4 f = qv[c4];
        UQ_SCORE_UNROLL
        for (int x = 0; x < 4; ++x)
          UQ_SCORE_UNROLL
          for (int j = 0; j < kTogether; ++j) acc[j][4 * c4 + x] += f.v[x] * k[j];
      }
    } else
#endif
    {
      for (int c = 0; c < Cols; ++c)
        for (int j = 0; j < kTogether; ++j) acc[j][c] += q[c] * k[j];
    }
  }

  // Words [Block, 2 Block) of every token to [0, Block) (register moves once unrolled).
  template <int Block>
  KOKKOS_INLINE_FUNCTION static void move_to_front(std::uint32_t (&w)[kTogether][kWordsPerToken]) {
    UQ_SCORE_UNROLL
    for (int j = 0; j < kTogether; ++j)
      UQ_SCORE_UNROLL
      for (int k = 0; k < Block; ++k) w[j][k] = w[j][k + Block];
  }

  // One step of the dim loop (kGroupsPerStep scale groups, from group step x kGroupsPerStep)
  // for the lane's kTogether tokens: their code words for the step at w[j][0 ..), every
  // token's 8 scale bytes in sc.
  KOKKOS_INLINE_FUNCTION void score_step(const Scratch& s, int step, const std::uint32_t (&w)[kTogether][kWordsPerToken],
                                         const std::uint32_t (&sc)[kTogether][2], float (&acc)[kTogether][Cols]) const {
    // Scratch regions are 16-byte aligned (carve); saying so lets the compilers keep the
    // query loads 16 bytes wide.
    const float* qstep = static_cast<const float*>(__builtin_assume_aligned(s.q, 16)) +
                         step * kGroupsPerStep * nvfp4::kGroup * Cols;  // d below counts from the step's first dim
    const char* weights = reinterpret_cast<const char*>(s.weight);
    UQ_SCORE_UNROLL
    for (int g = 0; g < kGroupsPerStep; ++g) {
      std::uint32_t scale[kTogether];
      ScoreFloat2 ab[kTogether] = {};
      bool factored = true;
      const int group = step * kGroupsPerStep + g;  // of the token's 8 (a constant on a host)
      UQ_SCORE_UNROLL
      for (int j = 0; j < kTogether; ++j) {
        scale[j] = ((group < 4 ? sc[j][0] : sc[j][1]) >> (8 * (group % 4))) & 0xffu;
        if (kFactored) {
          ab[j] = s.pair[scale[j]];
          factored = factored && ab[j].v[0] == ab[j].v[0];  // not NaN: the factors apply
        }
      }
      if (kFactored && factored) {
        // k̂ = A * weight_a + B * weight_b, the weights read by code from a 16-entry table
        // (8 bytes an entry): lanes reading the same code read the same word, so the loads
        // never conflict.
        UQ_SCORE_UNROLL
        for (int half = 0; half < nvfp4::kGroup / 8; ++half) {
          WeightOffsets at[kTogether];
          UQ_SCORE_UNROLL
          for (int j = 0; j < kTogether; ++j) at[j] = WeightOffsets(w[j][2 * g + half], 0u);
          UQ_SCORE_UNROLL
          for (int e = 0; e < 8; ++e) {
            const int d = nvfp4::kGroup * g + 8 * half + e;
            float k[kTogether];
            UQ_SCORE_UNROLL
            for (int j = 0; j < kTogether; ++j) {
              const ScoreFloat2 wt = *reinterpret_cast<const ScoreFloat2*>(weights + at[j](e));
              k[j] = ab[j].v[0] * wt.v[0] + ab[j].v[1] * wt.v[1];
            }
            fma_dim(qstep + d * Cols, k, acc);
          }
        }
      } else {
        // k̂ from the group's row of the table (kKhatRowBytes), by code, addressed in bytes. The
        // 32 lanes read 32 random rows: about 3 bank conflicts a load.
        const char* khat = reinterpret_cast<const char*>(s.khat);
        UQ_SCORE_UNROLL
        for (int half = 0; half < nvfp4::kGroup / 8; ++half) {
          KhatOffsets at[kTogether];
          UQ_SCORE_UNROLL
          for (int j = 0; j < kTogether; ++j) at[j] = KhatOffsets(w[j][2 * g + half], kKhatRowBytes * scale[j]);
          UQ_SCORE_UNROLL
          for (int e = 0; e < 8; ++e) {
            const int d = nvfp4::kGroup * g + 8 * half + e;
            float k[kTogether];
            UQ_SCORE_UNROLL
            for (int j = 0; j < kTogether; ++j) k[j] = *reinterpret_cast<const float*>(khat + at[j](e));
            fma_dim(qstep + d * Cols, k, acc);
          }
        }
      }
    }
  }

  // Lane `lane`'s tokens of one page into m: per column, the maximum dot over the tokens
  // the column's row sees (only tokens below lim[c] when masked).
  KOKKOS_INLINE_FUNCTION void lane_max(const Scratch& s, const std::uint8_t* page, int lane, bool masked,
                                       const int* lim, ColumnMax<Cols>& m) const {
    for (int i0 = 0; i0 < kTokensPerLane; i0 += kTogether) {
      std::uint32_t w[kTogether][kWordsPerToken];  // code words: dims 8 x .. 8 x + 7, low nibble first
      std::uint32_t sc[kTogether][2];              // the 8 scale bytes
      UQ_SCORE_UNROLL
      for (int j = 0; j < kTogether; ++j) {
        const int t = lane + kLanes * (i0 + j);
        UQ_SCORE_UNROLL
        for (int k = 0; k < kWordsPerToken / 4; ++k) {
          const IndexChunk16 c = load_chunk16(page + t * nvfp4::kCodeBytesPerToken + 16 * k, cache.aligned16);
          UQ_SCORE_UNROLL
          for (int x = 0; x < 4; ++x) w[j][4 * k + x] = c.w[x];
        }
        const std::uint8_t* sp = page + nvfp4::kPageCodes + t * nvfp4::kGroups;
        sc[j][0] = load_word4(sp, cache.aligned16);
        sc[j][1] = load_word4(sp + 4, cache.aligned16);
      }
      float acc[kTogether][Cols];
      UQ_SCORE_UNROLL
      for (int j = 0; j < kTogether; ++j)
        UQ_SCORE_UNROLL
        for (int c = 0; c < Cols; ++c) acc[j][c] = 0.0f;
      // The steps as three nested loops of (at most) two rolled iterations each; after each
      // iteration its level's next block of code words moves to the front. A step's words must
      // sit in fixed registers (the loops are rolled), and this moves each word at most
      // log2(kSteps) times (a shift by one step after every step moved 7 x 14 words a token at
      // 8 steps; the same moves made conditional in one flat loop became selects run every
      // step). A move after a level's last iteration copies words already used: harmless.
      constexpr int kOuter = kSteps >= 8 ? 2 : 1, kMiddle = kSteps >= 4 ? 2 : 1, kInner = kSteps >= 2 ? 2 : 1;
      static_assert(kOuter * kMiddle * kInner == kSteps, "the nested loops take 1, 2, 4 or 8 steps");
      UQ_SCORE_STEP_LOOP
      for (int outer = 0; outer < kOuter; ++outer) {
        UQ_SCORE_STEP_LOOP
        for (int middle = 0; middle < kMiddle; ++middle) {
          UQ_SCORE_STEP_LOOP
          for (int inner = 0; inner < kInner; ++inner) {
            score_step(s, (outer * kMiddle + middle) * kInner + inner, w, sc, acc);
            if constexpr (kInner == 2) move_to_front<kWordsPerStep>(w);
          }
          if constexpr (kMiddle == 2) move_to_front<2 * kWordsPerStep>(w);
        }
        if constexpr (kOuter == 2) move_to_front<4 * kWordsPerStep>(w);
      }
      UQ_SCORE_UNROLL
      for (int j = 0; j < kTogether; ++j) {
        const int t = lane + kLanes * (i0 + j);
        UQ_SCORE_UNROLL
        for (int c = 0; c < Cols; ++c)
          if ((!masked || t < lim[c]) && acc[j][c] > m.v[c]) m.v[c] = acc[j][c];
      }
    }
  }

  // One block of the request: its page scored if some row needs it, then every column's entry.
  KOKKOS_INLINE_FUNCTION void block(const member& team, const Scratch& s, std::int64_t req, std::int64_t L,
                                    std::int64_t b) const {
    const int QL = p.query_len, H = p.heads, cols = QL * H;
    bool any_computed = false;
    for (int r = 0; r < QL; ++r) {
      const std::int64_t nb = blocks_for_tokens(visible_tokens(L, QL, r));
      any_computed = any_computed || block_kind(b, nb, p.init_blocks, p.local_blocks) == BlockKind::Computed;
    }
    ColumnMax<Cols> m;
    for (int c = 0; c < Cols; ++c) m.v[c] = -codec::infinity();
    bool page_ok = false;
    if (any_computed) {
      const std::int64_t page = static_cast<std::int64_t>(block_tables(req, b));
      page_ok = page >= 0 && page < cache.num_blocks;
      if (!page_ok) {
        Kokkos::single(Kokkos::PerThread(team), [&]() { count(counts, Counter::bad_block_ids); });
      } else {
        // Tokens of this page column c sees, in [0, 128]. Row 0 sees the least: if it sees
        // the whole block, every row does.
        int lim[Cols];
        UQ_SCORE_UNROLL
        for (int c = 0; c < Cols; ++c) {
          const std::int64_t v = c < cols ? visible_tokens(L, QL, c / H) - b * kTokens : 0;
          lim[c] = v < 0 ? 0 : v > kTokens ? kTokens : static_cast<int>(v);
        }
        const bool masked = visible_tokens(L, QL, 0) < (b + 1) * kTokens;
        const std::uint8_t* pg = cache.base + page * nvfp4::kPageBytes;
        Kokkos::parallel_reduce(
            Kokkos::ThreadVectorRange(team, kLanes),
            [&](int lane, ColumnMax<Cols>& acc) { lane_max(s, pg, lane, masked, lim, acc); },
            ColumnMaxReducer<Cols, typename ExecSpace::memory_space>(m));
      }
    }
    Kokkos::single(Kokkos::PerThread(team), [&]() {
      for (int c = 0; c < cols && c < Cols; ++c) {
        const int r = c / H, h = c % H;
        const BlockKind kind =
            block_kind(b, blocks_for_tokens(visible_tokens(L, QL, r)), p.init_blocks, p.local_blocks);
        scores(h, req * QL + r, b) = block_score(kind, kind == BlockKind::Computed && page_ok ? m.v[c] : -codec::infinity());
      }
    });
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    const int spans_per_req = (p.max_blocks + span - 1) / span;
    const std::int64_t req = team.league_rank() / spans_per_req;
    const std::int64_t b0 = static_cast<std::int64_t>(team.league_rank() % spans_per_req) * span;
    const int QL = p.query_len;

    const RequestLength len = request_length_in_table(seq_lens(req), p.max_blocks);
    if (b0 == 0 && (len.negative || len.too_long)) {
      Kokkos::single(Kokkos::PerTeam(team), [&]() {
        count(counts, len.negative ? Counter::negative_seq_lens : Counter::long_seq_lens);
      });
    }
    const std::int64_t L = len.tokens;
    const std::int64_t nb_req = blocks_for_tokens(L);
    const std::int64_t b_end = b0 + span < nb_req ? b0 + span : nb_req;
    if (b0 >= b_end) return;

    // Some block of the span is computed for some row iff it is for the last row (which
    // sees the most): [init, nb(QL - 1) - local) meets the span. Otherwise nothing is staged.
    const std::int64_t nb_last = blocks_for_tokens(visible_tokens(L, QL, QL - 1));
    const std::int64_t need_lo = b0 > p.init_blocks ? b0 : p.init_blocks;
    const std::int64_t need_hi = b_end < nb_last - p.local_blocks ? b_end : nb_last - p.local_blocks;
    const Scratch s = carve(team);
    if (need_lo < need_hi) {
      stage(team, s, req);
      team.team_barrier();
    }
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, kWarps), [&](int w) {
      for (std::int64_t b = b0 + w; b < b_end; b += kWarps) block(team, s, req, L, b);
    });
  }

  void launch(const ExecSpace& exec, std::int64_t num_reqs, int compute_units) {
    // Resident teams: on a GPU kTeamsPerUnit per compute unit (the launch bounds); on a host
    // a few teams per thread, for balance.
    const std::int64_t slots = kHost ? 4 * static_cast<std::int64_t>(exec.concurrency())
                                     : kTeamsPerUnit * static_cast<std::int64_t>(compute_units > 0 ? compute_units : 80);
    const int min_span = p.blocks_per_team > kWarps ? p.blocks_per_team : kWarps;
    span = choose_generic_score_span(num_reqs, p.max_blocks, slots, min_span);
    const std::int64_t spans_per_req = (p.max_blocks + span - 1) / span;
    const std::int64_t league = num_reqs * spans_per_req;
    if (league == 0) return;
    policy pol = kHost ? policy(exec, static_cast<int>(league), 1, 1)
                       : policy(exec, static_cast<int>(league), kWarps, kLanes);
    pol.set_scratch_size(0, Kokkos::PerTeam(kScratchBytes));
    static_assert(fits_kernel_argument<std::decay_t<decltype(*this)>>, "the functor must travel as a kernel argument");
    Kokkos::parallel_for("uq::score", pol, *this);
  }
};

}  // namespace impl
}  // namespace uq

#undef UQ_SCORE_UNROLL
#undef UQ_SCORE_STEP_LOOP
