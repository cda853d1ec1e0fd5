// Host vectors <-> views in the default execution space's memory, C order
// (LayoutRight) as in the .npy files.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace uq {
namespace cli {

using Exec = Kokkos::DefaultExecutionSpace;
using DeviceMemory = Exec::memory_space;

template <class T>
using DeviceView1 = Kokkos::View<T*, Kokkos::LayoutRight, DeviceMemory>;
template <class T>
using DeviceView2 = Kokkos::View<T**, Kokkos::LayoutRight, DeviceMemory>;
template <class T>
using DeviceView3 = Kokkos::View<T***, Kokkos::LayoutRight, DeviceMemory>;
template <class T>
using DeviceView4 = Kokkos::View<T****, Kokkos::LayoutRight, DeviceMemory>;

template <class T>
using HostView1 = Kokkos::View<T*, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

// A device copy of `host` (element count = product of dims), shaped dims.
template <class T>
DeviceView1<T> to_device_1d(const std::string& label, const std::vector<T>& host) {
  DeviceView1<T> d(Kokkos::view_alloc(Kokkos::WithoutInitializing, label), host.size());
  Kokkos::deep_copy(d, HostView1<const T>(host.data(), host.size()));
  return d;
}

template <class T>
DeviceView2<T> to_device_2d(const std::string& label, const T* host, std::int64_t n0, std::int64_t n1) {
  DeviceView2<T> d(Kokkos::view_alloc(Kokkos::WithoutInitializing, label), n0, n1);
  Kokkos::deep_copy(d, Kokkos::View<const T**, Kokkos::LayoutRight, Kokkos::HostSpace,
                                    Kokkos::MemoryTraits<Kokkos::Unmanaged>>(host, n0, n1));
  return d;
}

template <class T>
DeviceView3<T> to_device_3d(const std::string& label, const T* host, std::int64_t n0, std::int64_t n1,
                            std::int64_t n2) {
  DeviceView3<T> d(Kokkos::view_alloc(Kokkos::WithoutInitializing, label), n0, n1, n2);
  Kokkos::deep_copy(d, Kokkos::View<const T***, Kokkos::LayoutRight, Kokkos::HostSpace,
                                    Kokkos::MemoryTraits<Kokkos::Unmanaged>>(host, n0, n1, n2));
  return d;
}

template <class T>
DeviceView4<T> to_device_4d(const std::string& label, const T* host, std::int64_t n0, std::int64_t n1,
                            std::int64_t n2, std::int64_t n3) {
  DeviceView4<T> d(Kokkos::view_alloc(Kokkos::WithoutInitializing, label), n0, n1, n2, n3);
  Kokkos::deep_copy(d, Kokkos::View<const T****, Kokkos::LayoutRight, Kokkos::HostSpace,
                                    Kokkos::MemoryTraits<Kokkos::Unmanaged>>(host, n0, n1, n2, n3));
  return d;
}

// Copies a contiguous device view back into a host vector.
template <class View>
std::vector<typename View::non_const_value_type> to_host(const View& d) {
  using T = typename View::non_const_value_type;
  std::vector<T> host(d.span());
  Kokkos::deep_copy(HostView1<T>(host.data(), host.size()),
                    Kokkos::View<const T*, Kokkos::LayoutRight, DeviceMemory, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                        d.data(), d.span()));
  return host;
}

}  // namespace cli
}  // namespace uq
