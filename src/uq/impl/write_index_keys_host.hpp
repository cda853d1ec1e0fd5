// The NVFP4 index-key writer's host path (Serial, OpenMP, ...: spec nvfp4-index.md §3),
// bit-identical to the generic kernel (write_index_keys_generic.hpp) on every input.
//
// Why a separate path: the generic kernel's per-lane form (one group of 16 at a time,
// a division per value, seven scalar compares) is bound by that arithmetic on a CPU
// (docs/perf-log/2026-12-01-writers-second-pass.md, the unloaded Serial run). Here one
// RangePolicy index is one token, and each scale group of 16 is one 16-lane integer vector
// of the row's bits (host_simd.hpp), read in place from the row:
//
//   - A = max |x| on the bits (|x| is the bits with the sign cleared; non-negative floats
//     order as their bits), the scale byte by codes::nv_scale_byte (the one scalar rule):
//     for float rows called per group, for bf16 rows tabulated once over the 2^15
//     patterns A can have (a 32 KB table; a load where the rule's division and ~15
//     dependent steps were ~25 % of a token's time);
//   - the codes without any division: for a scale s > 0 the quotient fl32(x / s) is a
//     non-decreasing function of x (correctly rounded division is monotone), so each of
//     the seven threshold tests of codes::nv_code_count, "|fl32(x / s)| > T_i", is
//     "|x| > X_i(s)" for one float X_i(s): the largest x whose quotient does not pass.
//     The X_i are found once per scale byte by bisection on that very rule (thresholds()),
//     so the code rule stays in writer_codes.hpp; the kernel's count is seven integer
//     compares of |x|'s bits against X_i's, as nv_code_count's against T_i. For bf16 rows
//     the compare is on the 16-bit patterns against X_i >> 16 (exact: for a bf16 b,
//     b << 16 > X <=> b > X >> 16), so a group is one 256-bit (or two 128-bit) vector.
//     Scale byte 0 (a zero, flushed or non-finite group: all codes 0) has thresholds
//     that no value passes.
//   - the sign bit as nv_code_count's (negative and a non-zero magnitude), the 16 codes
//     packed into one 8-byte word and stored whole, the 8 scale bytes as one 8-byte word.
//
// Its speed against the generic kernel's on the same host, and what limits it:
// docs/perf-log/2026-12-02-index-writer-host.md.
//
// tests/test_index_writer_host.cpp compares the code words with the scalar rule on every
// bf16 pattern against every scale byte, and on every float within 2^12 ulps of each
// threshold X_i(s) and random floats, for float rows; the scale table on every pattern;
// and the whole kernel with the generic one.
//
// Compiled only with the host vector extensions (UQ_HOST_INT_VECTORS: GCC/Clang host
// passes, never __CUDA_ARCH__ / __HIP_DEVICE_COMPILE__), and not under nvcc at all: its
// front end also reads the host pass, and whether it takes __builtin_shufflevector and
// __builtin_convertvector was not checked (no CUDA build here). Elsewhere, a Kokkos CUDA
// build's Serial / OpenMP spaces included, the generic kernel runs on hosts too.
#pragma once

#include "uq/core/write_launch.hpp"
#include "uq/impl/host_simd.hpp"
#include "uq/impl/status_counters.hpp"
#include "uq/impl/writer_codes.hpp"
#include "uq/nvfp4.hpp"
#include "uq/types.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#if defined(UQ_HOST_INT_VECTORS) && (!defined(__CUDACC__) || defined(__clang__))
#define UQ_INDEX_WRITER_HOST_PATH 1

namespace uq {
namespace impl {
namespace index_host {

using host_simd::I16v;
using host_simd::I16x16;
using host_simd::I16x8;
using host_simd::I32v;
using host_simd::I32x4;
using host_simd::I32x8;
using host_simd::U16x8;
using host_simd::U8x16;
using host_simd::U8x8;

inline constexpr int kScaleBytes = 0x7f;  // codes::e4m3_of_nonnegative gives 0..0x7e
inline constexpr int kThresholds = 7;     // nv_code_count's seven

// Per scale byte, X_i(s) as float bits (row [7] unused padding) and as bf16 patterns,
// and the same as whole registers of the kernel's width (each threshold in every lane:
// loaded as compare operands, not broadcast per group, which costs SSE2 four
// instructions a threshold).
struct Thresholds {
  std::int32_t x32[kScaleBytes][8];
  std::int16_t x16[kScaleBytes][8];
  I32v v32[kScaleBytes][kThresholds];
  I16v v16[kScaleBytes][kThresholds];
  // The scale byte of every bf16 group maximum |x| (its pattern 0..0x7fff): codes::
  // nv_scale_byte of the value, 0 for inf and NaN (a non-finite group is written as a zero
  // group). A load instead of a division and ~15 dependent integer steps a group.
  std::uint8_t scale16[0x8000];
};

// The magnitude of the scalar rule's code of x (>= 0) at scale s > 0: exactly what the
// generic kernel computes for that value (codes::quotient, then codes::nv_code).
inline unsigned scalar_magnitude(float x, float s) {
  return codes::nv_code_count(codes::quotient(x, s, 1.0f / s)) & 7u;
}

// X_i(s): the largest non-negative float (bits) whose magnitude is <= i. The magnitude
// is non-decreasing in x, 0 at x = 0 and 7 at +inf (> i for every i < 7), so bisection
// over the bits [0, +inf] finds the one boundary.
inline std::int32_t threshold_bits(float s, int i) {
  std::uint32_t lo = 0, hi = 0x7f800000u;  // magnitude(lo) <= i < magnitude(hi)
  while (hi - lo > 1) {
    const std::uint32_t mid = lo + (hi - lo) / 2;
    (scalar_magnitude(codec::bits_float(mid), s) > static_cast<unsigned>(i) ? hi : lo) = mid;
  }
  return static_cast<std::int32_t>(lo);
}

inline Thresholds make_thresholds() {
  Thresholds t{};
  for (int b = 0; b < kScaleBytes; ++b) {
    const float s = codes::e4m3_nonnegative_to_float(static_cast<std::uint8_t>(b));
    for (int i = 0; i < 8; ++i) {
      // s = 0: all codes 0, so no value may pass (|x|'s bits are <= 0x7fffffff)
      const std::int32_t x = (s != 0.0f && i < kThresholds) ? threshold_bits(s, i) : 0x7fffffff;
      t.x32[b][i] = x;
      t.x16[b][i] = static_cast<std::int16_t>(x >> 16);
      if (i < kThresholds) {
        t.v32[b][i] = I32v{} + t.x32[b][i];
        t.v16[b][i] = I16v{} + t.x16[b][i];
      }
    }
  }
  for (std::uint32_t a = 0; a < 0x8000u; ++a)
    t.scale16[a] = a < 0x7f80u ? codes::nv_scale_byte(codec::bits_float(a << 16)) : std::uint8_t{0};
  return t;
}

// Built on first use, once: 96 KB (126 x 7 bisections of 31 steps, 2^15 scales).
inline const Thresholds& thresholds() {
  static const Thresholds t = make_thresholds();
  return t;
}

// Bits of one group of a row: bf16 patterns (16-bit lanes) or float bits (32-bit) in P
// parts of the target's register width, and the matching threshold rows and scales.
template <class Key>
struct Lanes {
  static_assert(std::is_same<Key, bf16>::value || std::is_same<Key, float>::value, "bf16 or float rows");
  static constexpr bool kBf16 = std::is_same<Key, bf16>::value;
  using V = std::conditional_t<kBf16, I16v, I32v>;
  using Scalar = std::conditional_t<kBf16, std::int16_t, std::int32_t>;
  static constexpr int P = 16 * static_cast<int>(sizeof(Key)) / host_simd::kIntBytes;
  static constexpr std::int32_t kAbs = kBf16 ? 0x7fff : 0x7fffffff;  // |x| of the bits
  static constexpr std::int32_t kInf = kBf16 ? 0x7f80 : 0x7f800000;  // |x| >= kInf: not finite
  static const V* row(const Thresholds& t, int b) {
    if constexpr (kBf16) return t.v16[b];
    else return t.v32[b];
  }
  // The scale byte of a group maximum |x| (bits), 0 for a non-finite group (written as a
  // zero group): the bf16 table, or for floats the rule on the value (computed on an inf
  // or NaN too, without a branch, then dropped).
  static std::uint8_t scale(const Thresholds& t, std::int32_t amax) {
    if constexpr (kBf16) {
      return t.scale16[amax];
    } else {
      const std::uint8_t any = codes::nv_scale_byte(codec::bits_float(static_cast<std::uint32_t>(amax)));
      return static_cast<std::uint8_t>(any & -static_cast<std::uint8_t>(amax < kInf));
    }
  }
};

// max over the lanes (signed; the values are >= 0): rotations within the register
// (lane-crossing shuffles of its own width, never wider vectors).
template <class V>
inline V vmax(V a, V b) {
  return a > b ? a : b;
}
#if UQ_HOST_INT_BYTES == 32  // (the 256-bit overloads: only where they are registers)
inline std::int32_t max_lanes(I16x16 a) {
  a = vmax(a, __builtin_shufflevector(a, a, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7));
  a = vmax(a, __builtin_shufflevector(a, a, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11));
  a = vmax(a, __builtin_shufflevector(a, a, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13));
  a = vmax(a, __builtin_shufflevector(a, a, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14));
  return a[0];
}
inline std::int32_t max_lanes(I32x8 a) {
  a = vmax(a, __builtin_shufflevector(a, a, 4, 5, 6, 7, 0, 1, 2, 3));
  a = vmax(a, __builtin_shufflevector(a, a, 2, 3, 0, 1, 6, 7, 4, 5));
  a = vmax(a, __builtin_shufflevector(a, a, 1, 0, 3, 2, 5, 4, 7, 6));
  return a[0];
}
#endif
inline std::int32_t max_lanes(I16x8 a) {
  a = vmax(a, __builtin_shufflevector(a, a, 4, 5, 6, 7, 0, 1, 2, 3));
  a = vmax(a, __builtin_shufflevector(a, a, 2, 3, 0, 1, 6, 7, 4, 5));
  a = vmax(a, __builtin_shufflevector(a, a, 1, 0, 3, 2, 5, 4, 7, 6));
  return a[0];
}
inline std::int32_t max_lanes(I32x4 a) {
  a = vmax(a, __builtin_shufflevector(a, a, 2, 3, 0, 1));
  a = vmax(a, __builtin_shufflevector(a, a, 1, 0, 3, 2));
  return a[0];
}

// Two parts of 32-bit codes (0..15) as one part of 16-bit codes, in order: lane k of
// the pairs (2k, 2k + 1) as lo | hi << 16 (even / odd lanes: shuffles of the register's
// own width).
inline I16x8 narrow_codes(I32x4 a, I32x4 b) {
  const I32x4 r = __builtin_shufflevector(a, b, 0, 2, 4, 6) | (__builtin_shufflevector(a, b, 1, 3, 5, 7) << 16);
  I16x8 o;
  std::memcpy(&o, &r, sizeof o);
  return o;
}
#if UQ_HOST_INT_BYTES == 32
inline I16x16 narrow_codes(I32x8 a, I32x8 b) {
  const I32x8 r = __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14) |
                  (__builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15) << 16);
  I16x16 o;
  std::memcpy(&o, &r, sizeof o);
  return o;
}
#endif

// 16 codes (0..15) as bytes -> the code word: byte j = c[2j] | c[2j + 1] << 4 (the
// 16-bit lane c[2j] | c[2j + 1] << 8 folded by a shift, then its low byte).
inline std::uint64_t code_word(U8x16 c8) {
  U16x8 u;
  std::memcpy(&u, &c8, sizeof u);
  u = u | (u >> 4);
  const U8x8 b = __builtin_convertvector(u, U8x8);
  std::uint64_t w;
  std::memcpy(&w, &b, sizeof w);
  return w;
}
#if UQ_HOST_INT_BYTES == 32
inline std::uint64_t code_word(const I16x16* c) { return code_word(__builtin_convertvector(c[0], U8x16)); }
#endif
inline std::uint64_t code_word(const I16x8* c) {
  const U8x8 lo = __builtin_convertvector(c[0], U8x8), hi = __builtin_convertvector(c[1], U8x8);
  return code_word(__builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
}

// The 16 codes of a group (v: its bits in P parts, a: v with the sign cleared) at the
// thresholds x[0..6] (registers) of its scale byte, as one code word (element 2j in bits 3..0 of
// byte j): nv_code_count's seven compares and its sign rule, lane by lane.
template <class L>
inline std::uint64_t group_code_word(const typename L::V* v, const typename L::V* a, const typename L::V* x) {
  using V = typename L::V;
  V m[L::P];
#pragma GCC unroll 4
  for (int p = 0; p < L::P; ++p) {
    m[p] = V{};
#pragma GCC unroll 7
    for (int i = 0; i < kThresholds; ++i) m[p] -= (a[p] > x[i]);  // a true compare is -1
    m[p] = m[p] | ((v[p] < V{}) & (m[p] != V{}) & 8);  // sign bit: negative, non-zero magnitude
  }
  if constexpr (std::is_same<V, I32v>::value) {
    I16v c[L::P / 2];
#pragma GCC unroll 4
    for (int q = 0; q < L::P / 2; ++q) c[q] = narrow_codes(m[2 * q], m[2 * q + 1]);
    return code_word(c);
  } else {
    return code_word(m);
  }
}

// Test seam (tests/test_index_writer_host.cpp): the code word of 16 values given as bits,
// at scale byte b, exactly as the kernel forms it.
template <class Key>
inline std::uint64_t group_code_word_of(const typename Lanes<Key>::Scalar* bits, int b) {
  using L = Lanes<Key>;
  typename L::V v[L::P], a[L::P];
#pragma GCC unroll 4
  for (int p = 0; p < L::P; ++p) {
    std::memcpy(&v[p], bits + p * (sizeof v[p] / sizeof bits[0]), sizeof v[p]);
    a[p] = v[p] & L::kAbs;
  }
  return group_code_word<L>(v, a, L::row(thresholds(), b));
}

// A group's max |x| (bits), its parts' lanes folded first.
template <class L>
inline std::int32_t group_max(const typename L::V* a) {
  typename L::V m = a[0];
#pragma GCC unroll 4
  for (int p = 1; p < L::P; ++p) m = vmax(m, a[p]);
  return max_lanes(m);
}

// One token per index. Raw pointers and strides, not views: a functor copy then costs no
// reference counting (Kokkos copies the functor per launch). Pages are dense and their
// bytes contiguous (checked on the host: check_index_cache); rows contiguous (the caller
// takes this path only when keys.stride(1) == 1); loads and stores go through memcpy (no
// alignment assumption: 16 or 32 bytes, one unaligned vector move each).
template <class Key, class Slot, class CountView>
struct Writer {
  using L = Lanes<Key>;
  using V = typename L::V;
  const Key* keys = nullptr;
  std::int64_t key_stride = 0;  // elements from one row to the next
  const Slot* slots = nullptr;
  std::int64_t slot_stride = 0;
  std::uint8_t* cache = nullptr;
  std::int64_t num_slots = 0;  // num_blocks * 128
  const Thresholds* table = nullptr;
  CountView counts;

  // Group g of a row: its bits (v, unless null) and their magnitudes a.
  static void load_abs(const unsigned char* row, int g, V* v, V* a) {
#pragma GCC unroll 4
    for (int p = 0; p < L::P; ++p) {
      V x;
      std::memcpy(&x, row + (g * L::P + p) * sizeof(V), sizeof(V));
      if (v) v[p] = x;
      a[p] = x & L::kAbs;
    }
  }

  void operator()(const std::int64_t t) const {
    const std::int64_t slot = static_cast<std::int64_t>(slots[t * slot_stride]);
    if (slot < 0) return;  // skipped: untouched
    if (slot >= num_slots) {
      count(counts, Counter::bad_slots);
      return;
    }
    std::uint8_t* page = cache + (slot / nvfp4::kBlockTokens) * nvfp4::kPageBytes;
    const int pos = static_cast<int>(slot % nvfp4::kBlockTokens);
    const unsigned char* row = reinterpret_cast<const unsigned char*>(keys + t * key_stride);
    // Two passes over the 8 groups, so that the 8 scale chains (max -> scale byte ->
    // threshold row) are in flight together instead of one group's chain gating its
    // codes: group by group, a token was latency bound (the out-of-order window holds about
    // two groups). The row is read twice (the second time from L1); the loops
    // unroll fully, so b[] lives in registers (and each maximum dies at once: holding all
    // 8 made GCC spill them through the stack).
    std::int32_t token_max = 0;  // finite iff every group is (no flag through memory)
    std::uint64_t scales = 0;
    std::uint8_t b[nvfp4::kGroups];
#pragma GCC unroll 8
    for (int g = 0; g < nvfp4::kGroups; ++g) {
      V a[L::P];
      load_abs(row, g, nullptr, a);
      const std::int32_t amax = group_max<L>(a);
      token_max = token_max > amax ? token_max : amax;
      b[g] = L::scale(*table, amax);
      scales |= static_cast<std::uint64_t>(b[g]) << (8 * g);
    }
#pragma GCC unroll 8
    for (int g = 0; g < nvfp4::kGroups; ++g) {
      V v[L::P], a[L::P];
      load_abs(row, g, v, a);
      const std::uint64_t word = group_code_word<L>(v, a, L::row(*table, b[g]));
      std::memcpy(page + nvfp4::code_offset(pos, nvfp4::kGroup * g), &word, sizeof word);
    }
    std::memcpy(page + nvfp4::scale_offset(pos, 0), &scales, sizeof scales);
    const bool finite = token_max < L::kInf;
    if (!finite) count(counts, Counter::nonfinite_inputs);  // once per token
  }
};

// What a single-token call costs beside its row work is the launch itself, so
// the launch allocates nothing and counts no references: the counters go in as an
// unmanaged view of the same memory, and the label is a std::string made once (Kokkos
// 3.4 takes the label as a std::string, and a 20-character literal would be a heap
// allocation and a free per call, visible in a profile of single-token calls).
// l: the call (uq/core/write_launch.hpp) with rows of Key, slots of Slot, key_stride_dim 1.
template <class Key, class Slot, class ExecSpace>
void launch(const ExecSpace& exec, const IndexKeyWriteLaunch& l) {
  using Counts = Kokkos::View<unsigned long long[kNumCounters], Kokkos::HostSpace, Kokkos::MemoryUnmanaged>;
  if (l.num_tokens == 0) return;
  static const std::string label("uq::write_index_keys");
  Writer<Key, Slot, Counts> w;
  w.keys = static_cast<const Key*>(l.keys);
  w.key_stride = l.key_stride_token;
  w.slots = static_cast<const Slot*>(l.slots);
  w.slot_stride = l.slots_stride;
  w.cache = l.cache;
  w.num_slots = l.num_blocks * nvfp4::kBlockTokens;
  w.table = &thresholds();
  w.counts = Counts(l.counters);
  Kokkos::parallel_for(label, Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(exec, 0, l.num_tokens),
                       w);
}

}  // namespace index_host
}  // namespace impl
}  // namespace uq

#endif  // UQ_INDEX_WRITER_HOST_PATH
