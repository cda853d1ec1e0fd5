// uq on the host execution space (Kokkos::DefaultHostExecutionSpace: Serial or OpenMP), for
// arrays in host memory (NumPy, CPU tensors). It has no streams: one default instance.
#include "space_impl.hpp"

namespace uqpy {
namespace {

struct HostInstances {
  using exec_type = Kokkos::DefaultHostExecutionSpace;
  exec_type get(Stream) const { return exec_type(); }
  void clear() {}
};

}  // namespace

std::unique_ptr<Space> make_host_space() {
  return std::make_unique<SpaceOn<Kokkos::DefaultHostExecutionSpace, HostInstances>>(
      Kokkos::DefaultHostExecutionSpace::name(), Device{DeviceKind::cpu, 0}, false);
}

std::size_t decode_workspace_bytes(const DecodeDims& dims, const DecodeSettings& d) {
  // The size depends on the shape and the partition count only, not on the execution space.
  return uq::DecodePlan<Kokkos::DefaultHostExecutionSpace>::workspace_bytes(decode_shape(dims), decode_config(d));
}

std::size_t decode_workspace_alignment() { return uq::kDecodeWorkspaceAlignment; }

#if !defined(UQ_PYTHON_CUDA)  // space_cuda.cpp defines it in CUDA builds
std::unique_ptr<Space> make_device_space() { return nullptr; }
#endif

}  // namespace uqpy
