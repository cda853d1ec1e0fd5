// The one dispatcher of every operation: choose the path (uq/backend.hpp's pure choice over this
// build's tuned paths, uq/impl/tuned_path.hpp), check the call once on the chosen path keeping
// the kernel arguments, then launch them — or run the generic kernels and say why.
//
// An operation's call is a tuple of launch descriptions (uq/core/*_launch.hpp; decode: the
// partition kernel and the reducer) run in order on one path: all of them tuned, or all generic.
#pragma once

#include "uq/backend.hpp"
#include "uq/error.hpp"
#include "uq/impl/device_info.hpp"
#include "uq/impl/tuned_path.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace uq {
namespace impl {

template <class ExecSpace, class... Launch>
struct TunedCall {
  static_assert(sizeof...(Launch) >= 1, "a call launches at least one kernel");

  // What the launches are, for the reasons ("decode partitions + decode reducer").
  static std::string operation() {
    std::string s;
    ((s += (s.empty() ? "" : " + ") + std::string(Launch::kName)), ...);
    return s;
  }

  // The path a call of this device would take before its arguments are looked at (Native
  // without one throws here), and why it is not a tuned path. Given the execution space, its
  // device's information is only looked up where the choice needs it (a query of a GPU's
  // properties is not free, and a writer built per call would pay it each time).
  static PathChoice candidate(const char* fn, Backend requested, const DeviceInfo& dev) {
    return choose(fn, requested, [&]() -> const DeviceInfo& { return dev; });
  }
  static PathChoice candidate(const char* fn, Backend requested, const ExecSpace& exec) {
    return choose(fn, requested, [&] { return device_info(exec); });
  }

  // The tuned path Auto takes on this device for calls the launcher accepts (Generic: none).
  static Path tuned_path(const DeviceInfo& dev) { return native_path_for(dev, paths_implementing<ExecSpace, Launch...>()); }

  // Runs the call on candidate.path (from candidate() with the same `requested`): each launch is
  // prepared by the path's TunedOp (its checks, once, keeping the kernel arguments) and, when all
  // pass, launched in order on exec's stream. When the path cannot take the call, Auto runs
  // `generic()` and Native throws the path's reason. `ran` gets the path that ran and why (an
  // out-argument the caller keeps: assigning the same reason again allocates nothing, which a
  // one-token writer call notices).
  template <class Generic>
  static void run(const char* fn, const ExecSpace& exec, const PathChoice& candidate, Backend requested,
                  std::tuple<Launch...> launches, PathChoice& ran, Generic&& generic) {
    ran = candidate;
    bool tuned = false;
    const bool found = with_tuned_path<ExecSpace>(candidate.path, [&](auto path) {
      constexpr Path P = decltype(path)::value;
      if constexpr ((TunedOp<P, Launch>::available && ...)) {
        tuned = run_on<P>(fn, exec, candidate, requested, launches, ran, std::index_sequence_for<Launch...>{});
      } else {  // a candidate not chosen for these launches: refused like any call the path cannot take
        ran = refine_choice(fn, candidate, requested, std::string(path_name(P)) + " has no " + operation() + " kernel");
      }
    });
    // A tuned candidate comes from paths_implementing(): finding no specialisation here is a bug
    // in the table or the seam, never a reason to run the generic kernels under its name.
    if (candidate.path != Path::Generic && !found)
      throw Error(fn, "path", "a tuned path built for this execution space",
                  std::string(path_name(candidate.path)) + ", which this build has no launcher for here");
    if (!tuned) generic();
  }

 private:
  template <class DeviceOf>
  static PathChoice choose(const char* fn, Backend requested, const DeviceOf& dev) {
    if (requested == Backend::Generic) return PathChoice{Path::Generic, "Backend::Generic requested"};
    if (requested == Backend::Auto && !any_path_implements<ExecSpace, Launch...>())
      return PathChoice{Path::Generic, "no tuned path has a " + operation() + " kernel for " +
                                           std::string(ExecSpace::name()) + " in this build"};
    return choose_candidate(fn, operation().c_str(), dev(), requested, built_paths_for<ExecSpace>(),
                            paths_implementing<ExecSpace, Launch...>());
  }

  template <Path P, std::size_t... I>
  static bool run_on(const char* fn, const ExecSpace& exec, const PathChoice& candidate, Backend requested,
                     std::tuple<Launch...>& launches, PathChoice& ran, std::index_sequence<I...>) {
    ((std::get<I>(launches).stream = TunedSpace<P>::stream(exec)), ...);
    using Prepared = std::tuple<typename TunedOp<P, Launch>::Prepared...>;
    std::optional<Prepared> prepared;
    std::string rejection;
    try {
      prepared.emplace(Prepared{TunedOp<P, Launch>::prepare(std::get<I>(launches))...});  // in order
    } catch (const Error& e) {
      rejection = e.what();
    }
    if (!prepared) {
      ran = refine_choice(fn, candidate, requested, rejection);
      return false;
    }
    (TunedOp<P, Launch>::launch(exec, std::get<I>(launches), std::get<I>(*prepared)), ...);
    return true;
  }
};

}  // namespace impl
}  // namespace uq
