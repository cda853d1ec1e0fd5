// Counts the Kokkos dispatches (parallel_for / parallel_reduce / parallel_scan) and the
// deep copies made while it is alive, through the Kokkos Tools callbacks, so a test can
// say how many kernels a call launches and whether it copies (and so synchronises).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace uqtest {

class DispatchCount {
 public:
  DispatchCount() {
    dispatches() = 0;
    copies() = 0;
    namespace T = Kokkos::Tools::Experimental;
    T::set_begin_parallel_for_callback(&on_dispatch);
    T::set_begin_parallel_reduce_callback(&on_dispatch);
    T::set_begin_parallel_scan_callback(&on_dispatch);
    T::set_begin_deep_copy_callback(&on_copy);
  }
  ~DispatchCount() {
    namespace T = Kokkos::Tools::Experimental;
    T::set_begin_parallel_for_callback(nullptr);
    T::set_begin_parallel_reduce_callback(nullptr);
    T::set_begin_parallel_scan_callback(nullptr);
    T::set_begin_deep_copy_callback(nullptr);
  }
  DispatchCount(const DispatchCount&) = delete;
  DispatchCount& operator=(const DispatchCount&) = delete;

  static int& dispatches() {
    static int n = 0;
    return n;
  }
  static int& copies() {
    static int n = 0;
    return n;
  }

 private:
  static void on_dispatch(const char*, const std::uint32_t, std::uint64_t*) { ++dispatches(); }
  static void on_copy(Kokkos_Profiling_SpaceHandle, const char*, const void*, Kokkos_Profiling_SpaceHandle, const char*,
                      const void*, std::uint64_t) {
    ++copies();
  }
};

}  // namespace uqtest
