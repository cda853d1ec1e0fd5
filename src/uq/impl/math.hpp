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

}  // namespace impl
}  // namespace uq
