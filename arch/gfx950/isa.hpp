// The gfx950 (CDNA4, MI350X/MI355X) operations the hand-tuned kernels are written against.
//
// One kernel source, two builds (see arch/gfx950/README.md, "How to write a kernel"):
//
//   * clang-22 HIP for gfx950 (`-x hip --offload-arch=gfx950`): every operation is a clang
//     builtin (isa_gfx950.hpp). No HIP runtime header is needed; no threadIdx.
//   * the host compiler with UQ_GFX950_EMULATE defined: every operation calls the 64-lane
//     wavefront emulator in arch/emu (isa_emu.hpp), which follows docs/gfx950-isa.md.
//
// The semantics of each operation (instruction, lane layout, numerics) are documented once,
// next to its builtin in isa_gfx950.hpp; the emulator implements exactly those comments.
// Everything in this file is shared by both builds: the vector types, the format codes and
// the constant encoders.
#pragma once

#include <cstdint>

#if defined(UQ_GFX950_EMULATE)
// Host build: kernel code is plain C++ run on fibers by the emulator.
#define UQ_DEVICE
#define UQ_ISA_FN inline
#elif defined(__HIP__)
// HIP build: kernel helpers are device functions; the operations are forced inline so that
// their template constants reach the builtins' immediate operands.
#define UQ_DEVICE __attribute__((device))
#define UQ_ISA_FN __attribute__((device)) __attribute__((always_inline)) inline
#else
#error "arch/gfx950/isa.hpp: compile as HIP for gfx950 (clang -x hip --offload-arch=gfx950) or define UQ_GFX950_EMULATE"
#endif

namespace uq::gfx950 {

// ---------------------------------------------------------------- register vector types
// clang's ext_vector_type (what the builtins take) and GCC's vector_size (the emulator build
// with g++) share this subset, which is all kernels may use: brace initialisation, v[i]
// element access, element-wise + - * / with a vector or a scalar, assignment.
#if defined(__clang__)
#define UQ_ISA_VECTOR(T, n) __attribute__((ext_vector_type(n)))
#else
#define UQ_ISA_VECTOR(T, n) __attribute__((vector_size(sizeof(T) * (n))))
#endif
typedef std::int32_t i32x2 UQ_ISA_VECTOR(std::int32_t, 2);
typedef std::int32_t i32x4 UQ_ISA_VECTOR(std::int32_t, 4);
typedef std::int32_t i32x8 UQ_ISA_VECTOR(std::int32_t, 8);
typedef std::uint32_t u32x2 UQ_ISA_VECTOR(std::uint32_t, 2);
typedef std::uint32_t u32x4 UQ_ISA_VECTOR(std::uint32_t, 4);
typedef float f32x2 UQ_ISA_VECTOR(float, 2);
typedef float f32x4 UQ_ISA_VECTOR(float, 4);
// bf16 MFMA operands: raw bf16 bit patterns, element t = item t (low half of dword t/2 first).
typedef std::int16_t i16x4 UQ_ISA_VECTOR(std::int16_t, 4);
typedef std::int16_t i16x8 UQ_ISA_VECTOR(std::int16_t, 8);
#undef UQ_ISA_VECTOR

// Reinterprets the bits of a value (both builds have __builtin_bit_cast).
template <class To, class From>
UQ_ISA_FN To bit_cast(const From& from) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast: sizes differ");
  return __builtin_bit_cast(To, from);
}

// ---------------------------------------------------------------- constants
constexpr std::uint32_t kWaveSize = 64;
// LDS one workgroup may allocate (spec §8; clang-22 enforces the same limit per kernel).
constexpr std::uint32_t kMaxLdsBytes = 163840;

// Operand formats of the 16x16x128 f8f6f4 MFMAs (spec §1.2): the builtin's cbsz (A) and blgp (B).
enum MfmaFormat : int { kFp8 = 0, kBf8 = 1, kFp6 = 2, kBf6 = 3, kFp4 = 4 };

// Buffer load/store cache-policy bits (the builtins' `aux`, spec §7.2). They change caching
// only, never results; the emulator ignores them.
namespace cache {
constexpr int kDefault = 0;
constexpr int kSc0 = 1;
constexpr int kNt = 2;  // non-temporal: stream, do not pollute the caches
constexpr int kSc1 = 16;
}  // namespace cache

// Data format word of a raw buffer resource on gfx9/gfx950 (spec §7.1: DATA_FORMAT = 32).
constexpr std::uint32_t kBufferResourceFlags = 0x00020000u;
// The largest byte range a buffer resource can describe (num_records is 32 bits on gfx950).
constexpr std::uint32_t kBufferMaxBytes = 0xFFFFFFFFu;

// ---------------------------------------------------------------- ds_swizzle patterns
// Encoders of the 16-bit ds_swizzle_b32 offset (spec §4.3). All lanes read source lane j:
// bitmask mode: j = ((((i & 31) & and) | or) ^ xor) | (i & 32)
constexpr std::uint16_t swizzle_bitmask(unsigned and_mask, unsigned or_mask, unsigned xor_mask) {
  return static_cast<std::uint16_t>((and_mask & 31u) | ((or_mask & 31u) << 5) |
                                    ((xor_mask & 31u) << 10));
}
// quad-perm mode: lane i of each quad reads lane p_i of the quad.
constexpr std::uint16_t swizzle_quad_perm(unsigned p0, unsigned p1, unsigned p2, unsigned p3) {
  return static_cast<std::uint16_t>(0x8000u | (p0 & 3u) | ((p1 & 3u) << 2) | ((p2 & 3u) << 4) |
                                    ((p3 & 3u) << 6));
}
// Exchange with lane i ^ n (n < 32): SWAP(16) = 0x401F.
constexpr std::uint16_t swizzle_swap(unsigned n) { return swizzle_bitmask(31u, 0u, n); }
// Reverse within groups of n lanes (n a power of two <= 32): REVERSE(32) = 0x7C1F.
constexpr std::uint16_t swizzle_reverse(unsigned n) { return swizzle_bitmask(31u, 0u, n - 1u); }
// Every lane of each group of `size` lanes reads lane `lane` of its group: BROADCAST(8,3) = 0x0078.
constexpr std::uint16_t swizzle_broadcast(unsigned size, unsigned lane) {
  return swizzle_bitmask(31u & ~(size - 1u), lane, 0u);
}
// Rotate within 32-lane halves by n lanes (right if `right`): ROTATE(0,3) = 0xC060.
constexpr std::uint16_t swizzle_rotate(bool right, unsigned n) {
  return static_cast<std::uint16_t>(0xC000u | (right ? 0x400u : 0u) | ((n & 31u) << 5));
}
// FFT mode (spec §4.2): FFT(n) = 0xE000 + n.
constexpr std::uint16_t swizzle_fft(unsigned n) {
  return static_cast<std::uint16_t>(0xE000u | (n & 31u));
}

}  // namespace uq::gfx950

#if defined(UQ_GFX950_EMULATE)
#include "../emu/isa_emu.hpp"
#else
#include "isa_gfx950.hpp"
#endif
