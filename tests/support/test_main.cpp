// GoogleTest main for every uq test program: Kokkos is initialised once around the
// whole run (Kokkos cannot be re-initialised within a process).
#include <Kokkos_Core.hpp>
#include <gtest/gtest.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // Listing the tests (ctest's discovery) needs no Kokkos. Initialising it anyway lets the
  // OpenMP backend print its OMP_PROC_BIND warnings on stdout, which the discovery would
  // then read as test names.
  if (::testing::GTEST_FLAG(list_tests)) return RUN_ALL_TESTS();
  Kokkos::initialize(argc, argv);
  int rc = RUN_ALL_TESTS();
  Kokkos::finalize();
  return rc;
}
