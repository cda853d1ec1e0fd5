// The one place that spells what Kokkos 3.x and 4.x name differently (docs/DESIGN.md). uq builds
// against Debian's Kokkos 3.4.01 in CI and must compile against 4.x unchanged.
#pragma once

#include <Kokkos_Core.hpp>

namespace uq {
namespace impl {

#if defined(KOKKOS_ENABLE_HIP)
// The HIP execution space: Kokkos::Experimental::HIP before 4.0, Kokkos::HIP since.
#if KOKKOS_VERSION >= 40000
using HipSpace = Kokkos::HIP;
#else
using HipSpace = Kokkos::Experimental::HIP;
#endif
#endif

// exp and log: Kokkos::Experimental::exp / log before 4.0, Kokkos::exp since.
KOKKOS_INLINE_FUNCTION float kokkos_exp(float x) {
#if KOKKOS_VERSION >= 40000
  return Kokkos::exp(x);
#else
  return Kokkos::Experimental::exp(x);
#endif
}

// log: likewise.
KOKKOS_INLINE_FUNCTION float kokkos_log(float x) {
#if KOKKOS_VERSION >= 40000
  return Kokkos::log(x);
#else
  return Kokkos::Experimental::log(x);
#endif
}

}  // namespace impl
}  // namespace uq
