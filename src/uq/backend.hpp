// Backend choice: a pure function of (operation, device, requested backend, shape
// eligibility, which tuned paths were built) -> the path that runs. Unit-tested on
// the host; every public entry point calls it before launching anything.
#pragma once

#include "uq/error.hpp"

#include <cstddef>
#include <initializer_list>
#include <string>

namespace uq {

// What the caller asks for (Config::backend).
enum class Backend {
  Auto,     // the native path where one exists for this device and shape, else generic
  Generic,  // always the portable Kokkos code
  Native    // the tuned path; an error where none exists (never a silent fallback)
};

// What actually runs.
enum class Path { Generic, Gfx950, Sm90 };

enum class ExecKind { Serial, OpenMP, Threads, Cuda, Hip, Sycl, Other };

// The device behind an execution space, as far as backend choice needs it.
struct DeviceInfo {
  ExecKind kind = ExecKind::Other;
  std::string name;      // "Serial", "NVIDIA H200", ...
  std::string arch;      // "gfx950", "sm_90", "" for host spaces
  int compute_units = 0; // SMs / CUs (0 on host spaces)
};

// The tuned paths: the one list of which device takes which path. A device takes a row's
// path when its execution-space kind matches and its architecture name starts with the row's
// prefix, and this build has the path (BuiltPaths). Which calls a path accepts is not listed
// here: its launcher's own checks decide per call (choose_path's `rejection`). A path's
// operations come from its folder through one specialisation of uq::impl::TunedPath
// (uq/impl/tuned_path.hpp).
struct TunedPathRow {
  Path path;
  const char* name;         // path_name(): "gfx950", "sm90"
  ExecKind kind;            // the Kokkos execution space it runs on
  const char* arch_prefix;  // DeviceInfo::arch starts with this
  const char* how_built;    // for the error of Backend::Native where none is built
};
inline constexpr TunedPathRow kTunedPaths[] = {
    {Path::Gfx950, "gfx950", ExecKind::Hip, "gfx950", "HIP gfx950 with UQ_ENABLE_GFX950"},
    {Path::Sm90, "sm90", ExecKind::Cuda, "sm_90", "CUDA sm_90 with UQ_ENABLE_SM90"},
};
inline constexpr std::size_t kTunedPathCount = sizeof(kTunedPaths) / sizeof(kTunedPaths[0]);

// Which tuned paths this build of uq contains (compile-time facts, passed in so the
// selection stays a pure, testable function; uq::impl::built_paths() gives this build's).
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

// The tuned path this device would take, if any ("Generic" when none).
inline Path native_path_for(const DeviceInfo& dev, const BuiltPaths& built) {
  for (const TunedPathRow& r : kTunedPaths)
    if (dev.kind == r.kind && dev.arch.rfind(r.arch_prefix, 0) == 0 && built.has(r.path)) return r.path;
  return Path::Generic;
}

// The path a call takes and, when it is not the device's tuned path, why (one line).
struct PathChoice {
  Path path = Path::Generic;
  std::string reason;  // "" when the tuned path runs
};

// function: the public entry point's name, for the error message.
// rejection: why the device's tuned path cannot take this call ("" when it can): its
// launcher's own checks, run on the call's arguments without launching (the shape, the
// alignment and the byte spans of the views). Auto then takes the generic path and says
// why; Native is an error that carries the tuned path's reason.
inline PathChoice choose_path(const char* function, const DeviceInfo& dev, Backend requested,
                              const std::string& rejection, const BuiltPaths& built);

// The same choice for a shape predicate (shape_ok = false: an ineligible shape).
inline Path select_path(const char* function, const DeviceInfo& dev, Backend requested,
                        bool shape_ok, const BuiltPaths& built) {
  if (requested == Backend::Generic) return Path::Generic;
  const Path native = native_path_for(dev, built);
  if (requested == Backend::Auto) return (native != Path::Generic && shape_ok) ? native : Path::Generic;
  // Native
  if (native == Path::Generic) {
    std::string why = dev.name.empty() ? std::string("this device") : dev.name;
    if (!dev.arch.empty()) why += " (" + dev.arch + ")";
    std::string paths;
    for (const TunedPathRow& r : kTunedPaths) paths += (paths.empty() ? "" : ", or ") + std::string(r.how_built);
    throw Error(function, "config.backend", "a device with a native uq path built in (" + paths + ")",
                "Backend::Native on " + why);
  }
  if (!shape_ok)
    throw Error(function, "config.backend", std::string("a shape the ") + path_name(native) +
                                                 " kernel supports for Backend::Native",
                "an ineligible shape (use Backend::Auto or Generic)");
  return native;
}

inline PathChoice choose_path(const char* function, const DeviceInfo& dev, Backend requested,
                              const std::string& rejection, const BuiltPaths& built) {
  PathChoice c;
  c.path = select_path(function, dev, requested, true, built);  // Native without a tuned path throws here
  if (requested == Backend::Generic) {
    c.reason = "Backend::Generic requested";
  } else if (c.path == Path::Generic) {
    const std::string on = dev.name.empty() ? std::string("this device") : dev.name;
    c.reason = "no tuned path for " + on + (dev.arch.empty() ? std::string() : " (" + dev.arch + ")") +
               " in this build";
  } else if (!rejection.empty()) {
    if (requested == Backend::Native)
      throw Error(function, "config.backend",
                  std::string("a call the ") + path_name(c.path) + " kernel can take for Backend::Native",
                  rejection + " (Backend::Auto would take the generic path)");
    c.reason = std::string(path_name(c.path)) + " cannot take this call: " + rejection;
    c.path = Path::Generic;
  }
  return c;
}

}  // namespace uq
