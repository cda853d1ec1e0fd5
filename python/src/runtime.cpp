// Kokkos initialisation and finalisation, the spaces and the registry of live objects (runtime.hpp).
#include "runtime.hpp"

#include <Kokkos_Core.hpp>

#include <memory>
#include <set>
#include <string>
#include <vector>

namespace uqpy {
namespace {

struct State {
  bool owns_kokkos = false;
  bool finalized = false;
  std::unique_ptr<Space> host, device;
  std::set<Releasable*> live;
};

State& state() {
  // Never destroyed: objects that Python frees late in interpreter shutdown still unregister.
  static State* s = new State;
  return *s;
}

void initialize_kokkos(int device_id) {
  // The argc/argv form, so that Kokkos also reads its environment variables (KOKKOS_DEVICE_ID,
  // KOKKOS_NUM_THREADS, ...) as a C++ program's main() would let it.
  std::vector<std::string> args{"uq"};
#if KOKKOS_VERSION >= 30700
  if (device_id >= 0) args.push_back("--kokkos-device-id=" + std::to_string(device_id));
#else
  if (device_id >= 0) args.push_back("--kokkos-device=" + std::to_string(device_id));
#endif
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  Kokkos::initialize(argc, argv.data());
}

}  // namespace

Releasable::Releasable() { state().live.insert(this); }
Releasable::~Releasable() { state().live.erase(this); }

bool initialize(int device_id) {
  State& s = state();
  if (!Kokkos::is_initialized()) {
    initialize_kokkos(device_id);
    s.owns_kokkos = true;
  }
  s.host = make_host_space();
  s.device = make_device_space();
  return s.owns_kokkos;
}

void finalize() {
  State& s = state();
  if (s.finalized) return;
  s.finalized = true;
  // Objects first (their views), then the spaces' cached instances, then Kokkos itself.
  std::vector<Releasable*> live(s.live.begin(), s.live.end());
  for (Releasable* r : live) r->release();
  if (s.device) s.device->release();
  if (s.host) s.host->release();
  s.device.reset();
  s.host.reset();
  if (s.owns_kokkos && Kokkos::is_initialized()) Kokkos::finalize();
}

bool finalized() { return state().finalized; }

void require_alive(const char* function) {
  if (state().finalized)
    throw uq::Error(function, "(module state)", "a running uq (Kokkos initialised)",
                    "Kokkos already finalised at interpreter exit");
}

const char* kokkos_default_space() { return Kokkos::DefaultExecutionSpace::name(); }

Space& host_space() { return *state().host; }
Space* device_space() { return state().device.get(); }

Space& space_for(const Device& d, const Arg& a) {
  State& s = state();
  if (d.kind == DeviceKind::cpu) return *s.host;
  if (s.device && d == s.device->device()) return *s.device;
  std::string built = "host memory (cpu)";
  if (s.device) built += " or " + device_name(s.device->device()) + " (the device Kokkos runs on)";
  fail(a, "an array in " + built + "; this uq is built for Kokkos " + std::string(kokkos_default_space()),
       "an array on " + device_name(d));
}

Space& space_named(const std::string& device, const Arg& a) {
  Device d;
  if (device == "cpu") return space_for(Device{DeviceKind::cpu, 0}, a);
  const std::string kinds[] = {"cuda", "rocm"};
  for (const std::string& k : kinds) {
    if (device.rfind(k, 0) != 0) continue;
    d.kind = k == "cuda" ? DeviceKind::cuda : DeviceKind::rocm;
    if (device == k) {
      // "cuda" alone: the device Kokkos runs on, if it is of that kind.
      if (state().device && state().device->device().kind == d.kind) return *state().device;
      d.id = 0;
      return space_for(d, a);
    }
    if (device.size() > k.size() + 1 && device[k.size()] == ':') {
      bool parsed = false;
      try {
        std::size_t used = 0;
        d.id = std::stoi(device.substr(k.size() + 1), &used);
        parsed = used == device.size() - k.size() - 1 && d.id >= 0;
      } catch (const std::exception&) {  // not a number: the error below
      }
      if (parsed) return space_for(d, a);
    }
  }
  fail(a, "\"cpu\", \"cuda\" or \"cuda:N\"", "\"" + device + "\"");
}

}  // namespace uqpy
