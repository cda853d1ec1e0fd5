// The extension module uq._uq: errors, Kokkos' lifetime, streams, and the parts bound in
// bindings_functions.cpp (the free functions) and bindings_objects.cpp (plans and writers).
// The package's uq/__init__.py imports it, initialises Kokkos and registers finalisation.
#include "bindings.hpp"

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

namespace uqpy {
namespace {

PyObject* g_error_type = nullptr;  // uq.Error, a ValueError
py::object* g_stream_provider = nullptr;  // device id -> stream handle or None (set by uq/__init__.py)

std::uintptr_t stream_handle(py::handle s, const char* fn) {
  py::handle h = s;
  py::object attr;
  if (py::hasattr(s, "cuda_stream")) {
    attr = s.attr("cuda_stream");
    h = attr;
  }
  if (!PyLong_Check(h.ptr()))
    fail(Arg{fn, "stream"}, "an int stream handle or an object with an int 'cuda_stream' (torch.cuda.Stream)",
         "an object of type " + std::string(py::str(py::type::handle_of(s).attr("__name__"))));
  const long long v = PyLong_AsLongLong(h.ptr());
  if (v == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    fail(Arg{fn, "stream"}, "a stream handle that fits 64 bits", "a larger int");
  }
  if (v < 0) fail(Arg{fn, "stream"}, "a stream handle >= 0", std::to_string(v));
  return static_cast<std::uintptr_t>(v);
}

}  // namespace

Stream stream_for(Space& space, py::handle stream, const char* fn) {
  if (!space.takes_streams()) {
    if (!stream.is_none())
      fail(Arg{fn, "stream"}, std::string("None: the ") + space.name() + " execution space (host arrays) has no streams",
           "a stream");
    return Stream{};
  }
  if (!stream.is_none()) return Stream{stream_handle(stream, fn)};
  if (g_stream_provider != nullptr && !g_stream_provider->is_none()) {
    py::object s = (*g_stream_provider)(space.device().id);
    if (!s.is_none()) return Stream{stream_handle(s, fn)};
  }
  return Stream{0};
}

Call call_on(const Tensor& anchor, const Arg& anchor_arg, Space* plan_space, py::handle stream) {
  Call c;
  if (plan_space != nullptr) {
    c.space = plan_space;
    c.device = plan_space->device();
    c.whose = "the plan";
    c.on(anchor, anchor_arg);
  } else {
    c.space = &space_for(anchor.device, anchor_arg);
    c.device = anchor.device;
    c.whose = std::string("'") + anchor_arg.name + "'";
  }
  c.stream = stream_for(*c.space, stream, anchor_arg.function);
  return c;
}

uq::Backend parse_backend(const std::string& name, const char* fn) {
  if (name == "auto") return uq::Backend::Auto;
  if (name == "generic") return uq::Backend::Generic;
  if (name == "native") return uq::Backend::Native;
  fail(Arg{fn, "backend"}, "\"auto\", \"generic\" or \"native\"", "\"" + name + "\"");
}

void bind_errors(py::module_& m) {
  g_error_type = PyErr_NewExceptionWithDoc(
      "uq.Error",
      "A uq argument or data error (a ValueError). The message names the function, the argument, what was "
      "expected and what was given; so do the attributes function, argument, expected and actual.",
      PyExc_ValueError, nullptr);
  if (g_error_type == nullptr) throw py::error_already_set();
  m.attr("Error") = py::handle(g_error_type);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const uq::Error& e) {
      py::object err = py::reinterpret_steal<py::object>(PyObject_CallFunction(g_error_type, "s", e.what()));
      if (!err) return;  // the call set a Python error already
      err.attr("function") = e.function();
      err.attr("argument") = e.argument();
      err.attr("expected") = e.expected();
      err.attr("actual") = e.actual();
      PyErr_SetObject(g_error_type, err.ptr());
    }
  });
}

void bind_runtime(py::module_& m) {
  m.def("_initialize", &initialize, py::arg("device_id"),
        "Initialises Kokkos unless it is already (device_id < 0: Kokkos' choice); True if uq did.");
  m.def("_finalize", &finalize, "Releases every live uq object's Kokkos views, then finalises Kokkos if uq initialised it.");
  m.def("_finalized", &finalized);
  m.def(
      "_shape",
      [](py::handle obj, const std::string& function, const std::string& argument) {
        const Tensor t = import_tensor(obj, Arg{function.c_str(), argument.c_str()});
        py::tuple shape(t.ndim);
        for (int d = 0; d < t.ndim; ++d) shape[d] = t.shape[d];
        return shape;
      },
      "The shape of an array with no .shape attribute, from its DLPack export.");
  m.def(
      "_raise",
      [](const std::string& function, const std::string& argument, const std::string& expected,
         const std::string& actual) { throw uq::Error(function, argument, expected, actual); },
      "Raises uq.Error (the package's Python-side checks use it, so every message has one form).");
  m.def("_set_stream_provider", [](py::object provider) {
    if (g_stream_provider == nullptr) g_stream_provider = new py::object();  // lives until exit, like the module
    *g_stream_provider = std::move(provider);
  });
  m.def(
      "execution_spaces",
      []() {
        py::dict d;
        d["default"] = kokkos_default_space();
        d["host"] = host_space().name();
        Space* dev = device_space();
        d["device"] = dev != nullptr ? py::object(py::str(device_name(dev->device()))) : py::object(py::none());
        return d;
      },
      "The Kokkos execution spaces of this build: {'default': ..., 'host': ..., 'device': 'cuda:N' or None}.");
  m.def(
      "synchronize",
      [](py::object stream) {
        require_alive("uq.synchronize");
        Space* dev = device_space();
        if (dev == nullptr) return;
        dev->synchronize(stream_for(*dev, stream, "uq.synchronize"));
      },
      py::arg("stream") = py::none(), "Waits for uq's work on the stream (default: as for any call).");
}

}  // namespace uqpy

PYBIND11_MODULE(_uq, m) {
  m.doc() = "uq's compiled core; use the package `uq`.";
  m.attr("__version__") = UQ_PYTHON_VERSION;
  uqpy::bind_errors(m);
  uqpy::bind_runtime(m);
  uqpy::bind_functions(m);
  uqpy::bind_objects(m);
}
