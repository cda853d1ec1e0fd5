// DeviceInfo of a Kokkos execution space (what backend selection needs). The HIP
// execution space's name (HipSpace) comes from uq/impl/kokkos_compat.hpp.
#pragma once

#include "uq/backend.hpp"
#include "uq/impl/kokkos_compat.hpp"

#include <Kokkos_Core.hpp>

#include <string>
#include <type_traits>

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime_api.h>
#endif
#if defined(KOKKOS_ENABLE_HIP)
#include <hip/hip_runtime_api.h>
#endif

namespace uq {
namespace impl {

template <class ExecSpace>
DeviceInfo device_info(const ExecSpace& exec) {
  DeviceInfo d;
  (void)exec;
#if defined(KOKKOS_ENABLE_SERIAL)
  if constexpr (std::is_same<ExecSpace, Kokkos::Serial>::value) {
    d.kind = ExecKind::Serial;
    d.name = "Serial (host)";
    return d;
  }
#endif
#if defined(KOKKOS_ENABLE_OPENMP)
  if constexpr (std::is_same<ExecSpace, Kokkos::OpenMP>::value) {
    d.kind = ExecKind::OpenMP;
    d.name = "OpenMP (host, " + std::to_string(exec.concurrency()) + " threads)";
    return d;
  }
#endif
#if defined(KOKKOS_ENABLE_THREADS)
  if constexpr (std::is_same<ExecSpace, Kokkos::Threads>::value) {
    d.kind = ExecKind::Threads;
    d.name = "Threads (host)";
    return d;
  }
#endif
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, exec.cuda_device()) == cudaSuccess) {
      d.kind = ExecKind::Cuda;
      d.name = prop.name;
      d.arch = "sm_" + std::to_string(prop.major) + std::to_string(prop.minor);
      d.compute_units = prop.multiProcessorCount;
    }
    return d;
  }
#endif
#if defined(KOKKOS_ENABLE_HIP)
  if constexpr (std::is_same<ExecSpace, HipSpace>::value) {
    hipDeviceProp_t prop{};
    int dev = 0;
    if (hipGetDevice(&dev) == hipSuccess && hipGetDeviceProperties(&prop, dev) == hipSuccess) {
      d.kind = ExecKind::Hip;
      d.name = prop.name;
      d.arch = prop.gcnArchName;  // e.g. "gfx950:sramecc+:xnack-"
      d.compute_units = prop.multiProcessorCount;
    }
    return d;
  }
#endif
  d.kind = ExecKind::Other;
  d.name = ExecSpace::name();
  return d;
}

}  // namespace impl
}  // namespace uq
