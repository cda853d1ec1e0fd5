// The seam between the generic code and the tuned paths: one specialisation per (path,
// operation), unavailable unless a path's folder says otherwise.
//
// TunedSpace<P>: where path P runs. The primary is a path this build does not have; a path's
// folder specialises it once with
//   built = true
//   template <class ExecSpace> runs_on       whether it runs on this Kokkos execution space
//   stream(exec)                             the space's native stream as void* (nullptr on hosts)
//
// TunedOp<P, Launch>: path P's kernels for one launch description (uq/core/*_launch.hpp: the
// operation's plain-C++ arguments, one type per variant of an operation). The primary is
// *unavailable*: a path implements exactly the launch types it specialises, so a new launch type
// (a new variant of an operation) is refused by every path until that path writes its kernel —
// no field of an existing description can be silently ignored by a kernel that predates it,
// because variants never become fields of an existing description. A specialisation has
//   available = true
//   Prepared                                 the kernel arguments, checked
//   prepare(launch) -> Prepared              the launcher's checks; throws uq::Error naming what
//                                            it cannot take (the dispatcher falls back on it)
//   launch(exec, launch, prepared)           launches on exec's stream (no checks left to do)
// (LauncherOp below builds one from a launcher's two halves.)
//
// The specialisations of this build (the tuned_path.hpp of each arch folder) are included below;
// the one dispatcher (uq/impl/dispatch.hpp) walks the rows of kTunedPaths (uq/backend.hpp) and
// never names a path. Adding a path: a Path value and a row there, a folder with these
// specialisations, an include line below, and its CMake.
#pragma once

#include "uq/backend.hpp"

#include <cstddef>
#include <type_traits>
#include <utility>

namespace uq {
namespace impl {

template <Path P>
struct TunedSpace {
  static constexpr bool built = false;
};

template <Path P, class Launch>
struct TunedOp {
  static constexpr bool available = false;
};

// A TunedOp made of a launcher's two halves, the one way a path's kernel arguments are built:
// Make(launch) checks the launch and returns the kernel arguments (arch/<path>/*_launch_args.hpp,
// plain C++, testable without a device), Run(launch, arguments) launches them (launch_*.hpp).
template <class Launch, class Args, Args (*Make)(const Launch&), void (*Run)(const Launch&, const Args&)>
struct LauncherOp {
  static constexpr bool available = true;
  using Prepared = Args;
  static Prepared prepare(const Launch& l) { return Make(l); }
  template <class ExecSpace>
  static void launch(const ExecSpace&, const Launch& l, const Prepared& a) {
    Run(l, a);
  }
};

}  // namespace impl
}  // namespace uq

// Each include needs the path's execution space and its library (whose usage requirements define
// the macro and put arch/ on the include path); the host path is header-only.
#if defined(KOKKOS_ENABLE_HIP) && defined(UQ_ENABLE_GFX950)
#include "gfx950/tuned_path.hpp"
#endif
#if defined(KOKKOS_ENABLE_CUDA) && defined(UQ_ENABLE_SM90)
#include "sm90/tuned_path.hpp"
#endif
#include "uq/impl/host_simd_path.hpp"

namespace uq {
namespace impl {

namespace tuned_detail {

template <Path P, class ExecSpace>
constexpr bool runs_on() {
  if constexpr (TunedSpace<P>::built) {
    return TunedSpace<P>::template runs_on<ExecSpace>;
  } else {
    return false;
  }
}

template <Path P, class ExecSpace, class... Launch>
constexpr bool implements() {
  if constexpr (runs_on<P, ExecSpace>()) {
    return (TunedOp<P, Launch>::available && ...);
  } else {
    return false;
  }
}

template <class ExecSpace, class... Launch, std::size_t... I>
BuiltPaths with_ops(std::index_sequence<I...>) {
  BuiltPaths b;
  ((implements<kTunedPaths[I].path, ExecSpace, Launch...>() ? b.add(kTunedPaths[I].path) : void()), ...);
  return b;
}

template <class ExecSpace, class... Launch, std::size_t... I>
constexpr bool any_implements(std::index_sequence<I...>) {
  return (implements<kTunedPaths[I].path, ExecSpace, Launch...>() || ...);
}

template <class ExecSpace, std::size_t... I>
BuiltPaths on_space(std::index_sequence<I...>) {
  BuiltPaths b;
  ((runs_on<kTunedPaths[I].path, ExecSpace>() ? b.add(kTunedPaths[I].path) : void()), ...);
  return b;
}

template <std::size_t... I>
BuiltPaths in_build(std::index_sequence<I...>) {
  BuiltPaths b;
  ((TunedSpace<kTunedPaths[I].path>::built ? b.add(kTunedPaths[I].path) : void()), ...);
  return b;
}

template <Path P, class ExecSpace, class F>
bool call_if(Path path, F& f) {
  if constexpr (runs_on<P, ExecSpace>()) {
    if (path == P) {
      f(std::integral_constant<Path, P>{});
      return true;
    }
  }
  (void)path, (void)f;
  return false;
}

template <class ExecSpace, class F, std::size_t... I>
bool call_matching(Path path, F& f, std::index_sequence<I...>) {
  return (call_if<kTunedPaths[I].path, ExecSpace>(path, f) || ...);
}

using Rows = std::make_index_sequence<kTunedPathCount>;

}  // namespace tuned_detail

// The tuned paths compiled into this build (any execution space).
inline BuiltPaths built_paths() { return tuned_detail::in_build(tuned_detail::Rows{}); }

// Those that run on ExecSpace.
template <class ExecSpace>
BuiltPaths built_paths_for() {
  return tuned_detail::on_space<ExecSpace>(tuned_detail::Rows{});
}

// Those that run on ExecSpace and implement every one of the launch types.
template <class ExecSpace, class... Launch>
BuiltPaths paths_implementing() {
  return tuned_detail::with_ops<ExecSpace, Launch...>(tuned_detail::Rows{});
}

// Whether any path of this build could run the launches on ExecSpace (a compile-time fact).
template <class ExecSpace, class... Launch>
constexpr bool any_path_implements() {
  return tuned_detail::any_implements<ExecSpace, Launch...>(tuned_detail::Rows{});
}

// Calls f(std::integral_constant<Path, P>{}) for the path P == `path` when this build has it for
// ExecSpace; returns whether it did.
template <class ExecSpace, class F>
bool with_tuned_path(Path path, F&& f) {
  return tuned_detail::call_matching<ExecSpace>(path, f, tuned_detail::Rows{});
}

}  // namespace impl
}  // namespace uq
