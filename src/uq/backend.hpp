// Backend choice: a pure function of (operation, device, requested backend, shape
// eligibility, which tuned paths were built) -> the path that runs. Unit-tested on
// the host; every public entry point calls it before launching anything.
#pragma once

#include "uq/error.hpp"

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

// Which tuned paths this build of uq contains (compile-time facts, passed in so the
// selection stays a pure, testable function).
struct BuiltPaths {
  bool gfx950 = false;
  bool sm90 = false;
};

inline const char* path_name(Path p) {
  switch (p) {
    case Path::Generic: return "generic";
    case Path::Gfx950: return "gfx950";
    case Path::Sm90: return "sm90";
  }
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

// The tuned path this device would take for op, if any ("Generic" when none).
inline Path native_path_for(const DeviceInfo& dev, const BuiltPaths& built) {
  const bool gfx950 = dev.kind == ExecKind::Hip && dev.arch.rfind("gfx950", 0) == 0;
  const bool sm90 = dev.kind == ExecKind::Cuda && dev.arch.rfind("sm_90", 0) == 0;
  if (gfx950 && built.gfx950) return Path::Gfx950;
  if (sm90 && built.sm90) return Path::Sm90;
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
    throw Error(function, "config.backend",
                "a device with a native uq path built in (HIP gfx950 with UQ_ENABLE_GFX950, or CUDA "
                "sm_90 with UQ_ENABLE_SM90)",
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
