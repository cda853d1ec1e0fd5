// The seam between the generic dispatch (decode_dispatch.hpp, score_dispatch.hpp) and the tuned paths.
//
// TunedPath<P> is the primary template: a path this build does not have. Each tuned path's
// folder specialises it once (arch/<x>/tuned_path.hpp), included below only when its library
// is linked, with:
//   built = true, ExecSpace          the Kokkos execution space it runs on
//   stream(exec)                     the space's native stream, as void*
//   check(launch)                    its launcher's checks without launching (throws uq::Error)
//   launch(launch)                   launches, for the launch descriptions it takes:
//                                    DecodePartitionsLaunch, DecodeReduceLaunch, ScoreLaunch
//   ScoreLaunch, score_knobs(...)    its scorer's launch description and grid knobs
// The dispatch never names a path: with_tuned_path() finds the specialisation for the chosen
// Path among the rows of kTunedPaths (uq/backend.hpp). Adding a path: a Path value and a row
// there, a folder with this specialisation, an include line below, and its CMake.
#pragma once

#include "uq/backend.hpp"
#include "uq/error.hpp"

#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>

namespace uq {
namespace impl {

template <Path P>
struct TunedPath {
  static constexpr bool built = false;
};

}  // namespace impl
}  // namespace uq

// Each include needs the path's Kokkos backend and its library (whose usage requirements define
// the macro and put arch/ on the include path).
#if defined(KOKKOS_ENABLE_HIP) && defined(UQ_ENABLE_GFX950)
#include "gfx950/tuned_path.hpp"
#endif
#if defined(KOKKOS_ENABLE_CUDA) && defined(UQ_ENABLE_SM90)
#include "sm90/tuned_path.hpp"
#endif

namespace uq {
namespace impl {

namespace tuned_detail {

template <Path P, class ExecSpace, class F>
bool call_if(Path path, F& f) {
  if constexpr (TunedPath<P>::built) {
    if constexpr (std::is_same<ExecSpace, typename TunedPath<P>::ExecSpace>::value) {
      if (path == P) {
        f(TunedPath<P>{});
        return true;
      }
    }
  }
  (void)path, (void)f;
  return false;
}

template <class ExecSpace, class F, std::size_t... I>
bool call_matching(Path path, F& f, std::index_sequence<I...>) {
  return (call_if<kTunedPaths[I].path, ExecSpace>(path, f) || ...);
}

template <std::size_t... I>
BuiltPaths built_from(std::index_sequence<I...>) {
  BuiltPaths b;
  ((TunedPath<kTunedPaths[I].path>::built ? b.add(kTunedPaths[I].path) : void()), ...);
  return b;
}

}  // namespace tuned_detail

// The tuned paths compiled into this build.
inline BuiltPaths built_paths() { return tuned_detail::built_from(std::make_index_sequence<kTunedPathCount>{}); }

// Calls f(TunedPath<path>{}) when `path` is a tuned path this build has for ExecSpace; returns
// whether it did (false: the caller runs the generic kernels).
template <class ExecSpace, class F>
bool with_tuned_path(Path path, F&& f) {
  return tuned_detail::call_matching<ExecSpace>(path, f, std::make_index_sequence<kTunedPathCount>{});
}

// with_tuned_path for a call that must run: `path` came from choose_path, which gives a tuned
// path only where built_paths() has it, so finding no specialisation for ExecSpace is a bug in
// the table or the seam; it throws instead of running the generic kernels under the tuned
// path's name. Returns false for Path::Generic.
template <class ExecSpace, class F>
bool run_tuned_path(const char* function, Path path, F&& f) {
  if (path == Path::Generic) return false;
  if (!with_tuned_path<ExecSpace>(path, f))
    throw Error(function, "path", "a tuned path built for this execution space",
                std::string(path_name(path)) + ", which this build has no launcher for here");
  return true;
}

}  // namespace impl
}  // namespace uq
