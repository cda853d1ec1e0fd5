// Kokkos' lifetime in the Python process and the execution spaces of this build.
//
// Kokkos is initialised once, on import (an already initialised Kokkos is used as it is and
// left to its owner), and finalised at interpreter exit by uq's atexit hook. Python objects that
// hold Kokkos views (plans, writers) may outlive that hook (module globals are destroyed after
// atexit runs), and a view freed after Kokkos::finalize aborts the process: every such object
// registers here, and finalize() first releases what they hold; they then refuse to run.
#pragma once

#include "error_args.hpp"
#include "space.hpp"
#include "tensor.hpp"

namespace uqpy {

// Something that holds Kokkos resources until finalize() releases them.
class Releasable {
 public:
  Releasable();
  virtual ~Releasable();
  Releasable(const Releasable&) = delete;
  Releasable& operator=(const Releasable&) = delete;
  virtual void release() = 0;
};

// device_id < 0: Kokkos' own choice (KOKKOS_DEVICE_ID, else 0). Returns whether uq initialised
// Kokkos (false: it was already initialised).
bool initialize(int device_id);
void finalize();
bool finalized();
// Throws uq::Error once finalize() has run.
void require_alive(const char* function);

const char* kokkos_default_space();  // "Serial", "OpenMP", "Cuda"
Space& host_space();
Space* device_space();  // null in host-only builds

// The space that runs a call whose arrays are on `d` (named after argument `a` in errors): the
// host space for host memory, the device space for memory of the device Kokkos runs on.
Space& space_for(const Device& d, const Arg& a);
// The same for a device given by name ("cpu", "cuda", "cuda:1").
Space& space_named(const std::string& device, const Arg& a);

}  // namespace uqpy
