// Memory access of the cache writers: 16-byte loads of bf16/float rows, 4- and 8-byte
// stores of whole code words, and the host-side tests that decide whether a view's
// rows allow them (otherwise the kernels fall back to element access through the view).
#pragma once

#include "uq/types.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>

namespace uq {
namespace impl {
namespace wio {

// 16 bytes, the widest load every GPU and CPU issues as one instruction.
struct alignas(16) Chunk16 {
  std::uint32_t w[4];
};

// p must be 16-byte aligned. A device dereference is one 128-bit load; on the host a
// memcpy of 16 bytes is one unaligned vector load and keeps the access well defined.
KOKKOS_INLINE_FUNCTION Chunk16 load16(const void* p) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return *static_cast<const Chunk16*>(p);
#else
  Chunk16 c;
  std::memcpy(&c, p, sizeof c);
  return c;
#endif
}

// bf16 element j (0..7) of a chunk as float: bf16 is the high half of an fp32.
KOKKOS_INLINE_FUNCTION float bf16_of(const Chunk16& c, int j) {
  const std::uint32_t w = c.w[j >> 1];
  return codec::bits_float((j & 1) ? (w & 0xffff0000u) : (w << 16));
}

KOKKOS_INLINE_FUNCTION float float_of(const Chunk16& c, int j) { return codec::bits_float(c.w[j]); }

// p must be 4-byte aligned.
KOKKOS_INLINE_FUNCTION void store4(std::uint8_t* p, std::uint32_t w) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  *reinterpret_cast<std::uint32_t*>(p) = w;
#else
  std::memcpy(p, &w, sizeof w);
#endif
}

// Byte by byte, least significant first (little-endian, as store4 on every target).
KOKKOS_INLINE_FUNCTION void store_bytes(std::uint8_t* p, std::uint32_t w) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::uint8_t>(w >> (8 * i));
}

// ---------------------------------------------------------------- host-side checks
inline bool aligned(const void* p, std::uintptr_t bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

// Whether every row v(i, ..., :) of a view starts on a 16-byte boundary and is
// contiguous: last stride 1, every other stride (of an extent > 1) a multiple of
// 16 bytes, data aligned. Such rows are read in Chunk16s.
template <class View>
bool rows_are_chunked(const View& v) {
  constexpr int rank = static_cast<int>(View::rank);
  using T = typename View::value_type;
  if (v.span() == 0) return true;
  if (!aligned(v.data(), 16)) return false;
  if (v.extent(rank - 1) > 1 && v.stride(rank - 1) != 1) return false;
  if ((v.extent(rank - 1) * sizeof(T)) % 16 != 0) return false;
  for (int d = 0; d + 1 < rank; ++d)
    if (v.extent(d) > 1 && (static_cast<std::size_t>(v.stride(d)) * sizeof(T)) % 16 != 0) return false;
  return true;
}

// Whether every byte address the writer stores a word to, base + k * word for the
// view's leading indices, is word-aligned: data aligned and every stride but the
// last (of an extent > 1) a multiple of `word`.
template <class View>
bool words_are_aligned(const View& v, std::size_t word) {
  constexpr int rank = static_cast<int>(View::rank);
  if (v.span() == 0) return true;
  if (!aligned(v.data(), word)) return false;
  for (int d = 0; d + 1 < rank; ++d)
    if (v.extent(d) > 1 && static_cast<std::size_t>(v.stride(d)) % word != 0) return false;
  return true;
}

}  // namespace wio
}  // namespace impl
}  // namespace uq
