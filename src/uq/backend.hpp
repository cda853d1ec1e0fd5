// Backend choice: a pure function of (operation, device, requested backend, which tuned paths
// this build has, which of them implement the operation, the tuned launcher's verdict on the
// call) -> the path that runs and why. Unit-tested on the host; the one dispatcher
// (uq/impl/dispatch.hpp) calls it for every operation before launching anything.
#pragma once

#include "uq/error.hpp"

#include <cstddef>
#include <initializer_list>
#include <string>

namespace uq {

// What the caller asks for (Config::backend).
enum class Backend {
  Auto,     // the native path where one exists for this device, operation and call, else generic
  Generic,  // always the portable Kokkos code
  Native    // the tuned path; an error where none exists (never a silent fallback)
};

// What actually runs.
enum class Path { Generic, Gfx950, Sm90, HostSimd };

enum class ExecKind { Serial, OpenMP, Threads, Cuda, Hip, Sycl, Other };

// A set of execution-space kinds (a tuned path may run on several: the host spaces).
constexpr unsigned exec_kinds(std::initializer_list<ExecKind> kinds) {
  unsigned m = 0;
  for (ExecKind k : kinds) m |= 1u << static_cast<unsigned>(k);
  return m;
}
constexpr bool has_kind(unsigned kinds, ExecKind k) { return (kinds >> static_cast<unsigned>(k)) & 1u; }

// The device behind an execution space, as far as backend choice needs it.
struct DeviceInfo {
  ExecKind kind = ExecKind::Other;
  std::string name;      // "Serial", "NVIDIA H200", ...
  std::string arch;      // "gfx950", "sm_90", "" for host spaces
  int compute_units = 0; // SMs / CUs (0 on host spaces)
};

// The tuned paths: the one list of which device takes which path. A device takes a row's
// path for an operation when its execution-space kind is one of the row's and its architecture
// name starts with the row's prefix, this build has the path (BuiltPaths) and the path
// implements the operation (a specialisation of uq::impl::TunedOp, uq/impl/tuned_path.hpp);
// whether it takes a particular call is its launcher's own checks (the rejection below). The
// first such row wins.
struct TunedPathRow {
  Path path;
  const char* name;         // path_name(): "gfx950", "sm90", "host-simd"
  unsigned kinds;           // exec_kinds(...): the Kokkos execution spaces it runs on
  const char* arch_prefix;  // DeviceInfo::arch starts with this ("" : any)
  const char* how_built;    // for the error of Backend::Native where none is built
};
inline constexpr TunedPathRow kTunedPaths[] = {
    {Path::Gfx950, "gfx950", exec_kinds({ExecKind::Hip}), "gfx950", "HIP gfx950 with UQ_ENABLE_GFX950"},
    {Path::Sm90, "sm90", exec_kinds({ExecKind::Cuda}), "sm_90", "CUDA sm_90 with UQ_ENABLE_SM90"},
    {Path::HostSimd, "host-simd", exec_kinds({ExecKind::Serial, ExecKind::OpenMP, ExecKind::Threads}), "",
     "a host space compiled by GCC or Clang (vector extensions)"},
};
inline constexpr std::size_t kTunedPathCount = sizeof(kTunedPaths) / sizeof(kTunedPaths[0]);

// A set of tuned paths: which ones this build contains, or which of them implement an
// operation (compile-time facts, passed in so the selection stays a pure, testable function;
// uq/impl/tuned_path.hpp computes this build's).
class BuiltPaths {
 public:
  BuiltPaths() = default;
  static BuiltPaths of(std::initializer_list<Path> paths) {
    BuiltPaths b;
    for (Path p : paths) b.add(p);
    return b;
  }
  void add(Path p) { mask_ |= bit(p); }
  bool has(Path p) const { return (mask_ & bit(p)) != 0; }

 private:
  static unsigned bit(Path p) { return 1u << static_cast<unsigned>(p); }
  unsigned mask_ = 0;
};

inline const char* path_name(Path p) {
  if (p == Path::Generic) return "generic";
  for (const TunedPathRow& r : kTunedPaths)
    if (r.path == p) return r.name;
  return "?";
}

inline const char* backend_name(Backend b) {
  switch (b) {
    case Backend::Auto: return "auto";
    case Backend::Generic: return "generic";
    case Backend::Native: return "native";
  }
  return "?";
}

inline bool row_matches(const TunedPathRow& r, const DeviceInfo& dev) {
  return has_kind(r.kinds, dev.kind) && dev.arch.rfind(r.arch_prefix, 0) == 0;
}

// The tuned path this device takes among `built` ("Generic" when none).
inline Path native_path_for(const DeviceInfo& dev, const BuiltPaths& built) {
  for (const TunedPathRow& r : kTunedPaths)
    if (row_matches(r, dev) && built.has(r.path)) return r.path;
  return Path::Generic;
}

// The path a call takes and, when it is not a tuned path, why (one line).
struct PathChoice {
  Path path = Path::Generic;
  std::string reason;  // "" when the tuned path runs
};

namespace detail {
inline std::string device_words(const DeviceInfo& dev) {
  std::string on = dev.name.empty() ? std::string("this device") : dev.name;
  if (!dev.arch.empty()) on += " (" + dev.arch + ")";
  return on;
}
inline std::string how_built_list() {
  std::string paths;
  for (const TunedPathRow& r : kTunedPaths) paths += (paths.empty() ? "" : ", or ") + std::string(r.how_built);
  return paths;
}
}  // namespace detail

// The first step of the choice, before the call's arguments are looked at.
//   function   the public entry point's name, for the error message ("uq::decode")
//   operation  what the launches are, for the reasons ("decode partitions + decode reducer")
//   built      the tuned paths this build has for the call's execution space
//   with_op    those of them that implement every launch the call makes
// Generic requested: generic. A device without a built path, or whose path lacks the operation:
// generic with the reason under Auto, a uq::Error under Native.
inline PathChoice choose_candidate(const char* function, const char* operation, const DeviceInfo& dev,
                                   Backend requested, const BuiltPaths& built, const BuiltPaths& with_op) {
  PathChoice c;
  if (requested == Backend::Generic) {
    c.reason = "Backend::Generic requested";
    return c;
  }
  // The first row that runs here and implements the operation; else the first that runs here
  // (it names what is missing).
  const Path tuned = native_path_for(dev, with_op), native = native_path_for(dev, built);
  if (tuned != Path::Generic) {
    c.path = tuned;
    return c;
  }
  const std::string lacking =
      native == Path::Generic ? std::string() : std::string(path_name(native)) + " has no " + operation + " kernel";
  if (requested == Backend::Native)
    throw Error(function, "config.backend",
                std::string("a device with a native uq path built in that implements ") + operation + " (" +
                    detail::how_built_list() + ")",
                "Backend::Native on " + detail::device_words(dev) + (lacking.empty() ? "" : ", whose " + lacking));
  c.reason = lacking.empty() ? "no tuned path for " + detail::device_words(dev) + " in this build" : lacking;
  return c;
}

// The second step: `rejection` is why the candidate's launcher cannot take this call (its own
// checks on the call's arguments, run without launching: the shape, the alignment and the byte
// spans of the views; "" when it can). Auto then takes the generic path and says why; Native is
// an error that carries the tuned path's reason.
inline PathChoice refine_choice(const char* function, const PathChoice& candidate, Backend requested,
                                const std::string& rejection) {
  if (candidate.path == Path::Generic || rejection.empty()) return candidate;
  if (requested == Backend::Native)
    throw Error(function, "config.backend",
                std::string("a call the ") + path_name(candidate.path) + " kernel can take for Backend::Native",
                rejection + " (Backend::Auto would take the generic path)");
  PathChoice c;
  c.reason = std::string(path_name(candidate.path)) + " cannot take this call: " + rejection;
  return c;
}

}  // namespace uq
