// The few math functions the generic kernels need, spelled for Kokkos 3.x and 4.x
// (Kokkos::Experimental::exp and log moved to Kokkos::exp and log in 4.0).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace uq {
namespace impl {

KOKKOS_INLINE_FUNCTION float exp_f32(float x) {
#if KOKKOS_VERSION >= 40000
  return Kokkos::exp(x);
#else
  return Kokkos::Experimental::exp(x);
#endif
}

KOKKOS_INLINE_FUNCTION float log_f32(float x) {
#if KOKKOS_VERSION >= 40000
  return Kokkos::log(x);
#else
  return Kokkos::Experimental::log(x);
#endif
}

KOKKOS_INLINE_FUNCTION float max_f32(float a, float b) { return a > b ? a : b; }
KOKKOS_INLINE_FUNCTION std::int64_t min_i64(std::int64_t a, std::int64_t b) { return a < b ? a : b; }

}  // namespace impl
}  // namespace uq
