// The few math functions the generic kernels need (exp's and log's Kokkos 3.x / 4.x spellings:
// uq/impl/kokkos_compat.hpp).
#pragma once

#include "uq/impl/kokkos_compat.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace uq {
namespace impl {

KOKKOS_INLINE_FUNCTION float exp_f32(float x) { return kokkos_exp(x); }

KOKKOS_INLINE_FUNCTION float log_f32(float x) { return kokkos_log(x); }

KOKKOS_INLINE_FUNCTION float max_f32(float a, float b) { return a > b ? a : b; }
KOKKOS_INLINE_FUNCTION std::int64_t min_i64(std::int64_t a, std::int64_t b) { return a < b ? a : b; }

// n / d for 0 <= n < 2^31 and a divisor d in [1, 2^31) fixed when the functor is built: a
// 32 x 32 -> 64-bit multiply and a shift (Granlund & Montgomery: l = ceil(log2 d) and
// m = ceil(2^(31+l) / d), exact for every such n since m d - 2^(31+l) < d <= 2^l). m fits
// 32 bits: 2^31 for a power of two, else d >= 2^(l-1) + 1 gives m <= 2^32 - 2. On a GPU a
// 32-bit division by a run-time value is a ~30-instruction sequence.
struct DivideBy {
  std::uint32_t m = 1u << 31;
  int shift = 31;  // d = 1
  DivideBy() = default;
  explicit DivideBy(int d) {
    int l = 0;
    while ((std::int64_t{1} << l) < d) ++l;
    shift = 31 + l;
    m = static_cast<std::uint32_t>(((std::uint64_t{1} << shift) + static_cast<std::uint64_t>(d) - 1) /
                                   static_cast<std::uint64_t>(d));
  }
  KOKKOS_INLINE_FUNCTION int operator()(int n) const {
    return static_cast<int>((static_cast<std::uint64_t>(static_cast<std::uint32_t>(n)) * m) >> shift);
  }
};

}  // namespace impl
}  // namespace uq
