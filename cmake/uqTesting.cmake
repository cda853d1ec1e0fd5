# uq_discover_tests(<target> [TIMEOUT s]): register a GoogleTest program with ctest.
#
# Host builds list every TEST as its own ctest test, right after the build (POST_BUILD).
# GPU builds (Kokkos CUDA/HIP) are made on machines without a GPU, where the program
# cannot even start to list its tests: there the whole program is one ctest test.
# (DISCOVERY_MODE PRE_TEST would serve both, but CMake 3.25 overwrites its include file
# with one that includes itself on every re-configure, which breaks incremental runs.)
# PREFIX: prepended to each host-listed test's name (a program that reruns another's TESTs).
function(uq_discover_tests target)
  cmake_parse_arguments(ARG "" "TIMEOUT;PREFIX" "" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 900)
  endif()
  if(Kokkos_ENABLE_CUDA OR Kokkos_ENABLE_HIP)
    add_test(NAME ${target} COMMAND ${target})
    set_tests_properties(${target} PROPERTIES TIMEOUT ${ARG_TIMEOUT})
  else()
    gtest_discover_tests(${target} DISCOVERY_TIMEOUT 120 TEST_PREFIX "${ARG_PREFIX}" PROPERTIES TIMEOUT ${ARG_TIMEOUT})
  endif()
endfunction()
