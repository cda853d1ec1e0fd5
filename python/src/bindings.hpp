// Helpers shared by the binding files: the execution space and stream of a call, the option
// strings, and the functions that add each part of the module.
#pragma once

#include "args.hpp"
#include "runtime.hpp"
#include "space.hpp"

#include <pybind11/pybind11.h>

#include <string>
#include <utility>

namespace uqpy {

// Where a call runs: the space of its first array argument's device, and the stream.
struct Call {
  Space* space = nullptr;
  Device device;
  Stream stream;
  std::string whose;  // whose device the call's arrays must be on: "'q'", "the plan"

  // `t` checked to be on this call's device.
  Tensor on(Tensor t, const Arg& a) const {
    require_device(t, a, device, whose);
    return t;
  }
};

// The call whose first array argument is `anchor`: on the anchor's space (free functions), or on
// `plan_space` when a plan or writer runs (`plan_space` null: a free function). `stream` as
// the Python caller gave it.
Call call_on(const Tensor& anchor, const Arg& anchor_arg, Space* plan_space, py::handle stream);
// The stream a call on `space` uses: `stream` (an int handle, or an object with `cuda_stream`),
// else the stream provider's answer (torch's current stream), else the legacy default stream 0.
// Host spaces take none: a stream given for host arrays is an error.
Stream stream_for(Space& space, py::handle stream, const char* fn);

uq::Backend parse_backend(const std::string& name, const char* fn);

void bind_errors(py::module_& m);
void bind_runtime(py::module_& m);
void bind_functions(py::module_& m);
void bind_objects(py::module_& m);

}  // namespace uqpy
