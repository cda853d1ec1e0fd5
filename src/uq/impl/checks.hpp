// Argument checks shared by the public entry points: compile-time (is a View, rank,
// value type, reachable from the execution space) and run time (extents, strides,
// aliasing), each failure a uq::Error naming function, argument, expected and actual.
#pragma once

#include "uq/error.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>
#include <type_traits>

namespace uq {
namespace impl {

// Compile-time contract of a view argument: a Kokkos::View of the given rank whose
// value type (const or not) is T and whose memory the execution space can read.
template <class ExecSpace, class View, class T, int Rank>
struct ViewContract {
  static_assert(Kokkos::is_view<View>::value, "uq: every array argument must be a Kokkos::View");
  static_assert(static_cast<int>(View::rank) == Rank, "uq: a view argument has the wrong rank");
  static_assert(std::is_same<typename View::non_const_value_type, T>::value,
                "uq: a view argument has the wrong value type");
  static_assert(Kokkos::SpaceAccessibility<ExecSpace, typename View::memory_space>::accessible,
                "uq: a view argument is not accessible from the execution space");
  static constexpr bool ok = true;
};

// Same contract for an output: additionally not const.
template <class ExecSpace, class View, class T, int Rank>
struct OutputViewContract : ViewContract<ExecSpace, View, T, Rank> {
  static_assert(!std::is_const<typename View::value_type>::value,
                "uq: an output view must not have a const value type");
};

// Compile-time contract of an index view: rank Rank, value type one of the given
// integer types (int32 or int64).
template <class ExecSpace, class View, int Rank, class... Ints>
struct IndexViewContract {
  static_assert(Kokkos::is_view<View>::value, "uq: every array argument must be a Kokkos::View");
  static_assert(static_cast<int>(View::rank) == Rank, "uq: an index view has the wrong rank");
  static_assert((std::is_same<typename View::non_const_value_type, Ints>::value || ...),
                "uq: an index view has the wrong integer type");
  static_assert(Kokkos::SpaceAccessibility<ExecSpace, typename View::memory_space>::accessible,
                "uq: an index view is not accessible from the execution space");
  static constexpr bool ok = true;
};

// Whether V is a Kokkos::View of rank R (the overloads of a run whose views differ only in rank:
// decode's out and lse against query_start_loc and out).
template <class V, int R, class = void>
struct is_view_of_rank : std::false_type {};
template <class V, int R>
struct is_view_of_rank<V, R, std::enable_if_t<Kokkos::is_view<V>::value>>
    : std::integral_constant<bool, static_cast<int>(V::rank) == R> {};

template <class View>
void require_extent(const char* function, const char* argument, const View& v, int dim,
                    std::int64_t expected, const char* what) {
  const std::int64_t got = static_cast<std::int64_t>(v.extent(dim));
  if (got == expected) return;  // the message is composed only for a failure
  require(false, function, argument,
          "extent(" + str(dim) + ") == " + str(expected) + " (" + what + ")", str(got));
}

template <class View>
void require_stride(const char* function, const char* argument, const View& v, int dim,
                    std::int64_t expected, const char* what) {
  // A dimension of extent 1 may carry any stride.
  if (v.extent(dim) <= 1) return;
  const std::int64_t got = static_cast<std::int64_t>(v.stride(dim));
  if (got == expected) return;
  require(false, function, argument,
          "stride(" + str(dim) + ") == " + str(expected) + " (" + what + ")", str(got));
}

// Byte range [first, last) a view can touch, from its first element to one past its last; for
// a view with at least one element. (Kokkos' span() of a LayoutStride view is the largest
// extent(d) * stride(d), which reaches past the last element of a view that starts inside a
// padded row, e.g. out = buffer[:, :, 0:256] of a [B, H, 512] buffer: against that, an
// allocation right after the view would be reported as overlapping.)
template <class View>
void byte_range(const View& v, std::uintptr_t& first, std::uintptr_t& last) {
  first = reinterpret_cast<std::uintptr_t>(v.data());
  std::size_t last_element = 0;
  for (int d = 0; d < static_cast<int>(View::rank); ++d) last_element += (v.extent(d) - 1) * v.stride(d);
  last = first + (last_element + 1) * sizeof(typename View::value_type);
}

// Throws when the output's memory overlaps the input's.
template <class Out, class In>
void require_no_alias(const char* function, const char* out_name, const Out& out,
                      const char* in_name, const In& in) {
  if (out.size() == 0 || in.size() == 0) return;  // (byte_range needs an element)
  std::uintptr_t o0, o1, i0, i1;
  byte_range(out, o0, o1);
  byte_range(in, i0, i1);
  if (o1 <= i0 || i1 <= o0) return;
  require(false, function, out_name,
          std::string("memory disjoint from '") + in_name + "'", "overlapping memory");
}

}  // namespace impl
}  // namespace uq
