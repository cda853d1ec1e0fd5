# Finds Kokkos and repairs the one known packaging defect, so that the build tree and
# installed consumers (uqConfig.cmake includes this file) see the same target.
#
# Debian's libtrilinos-kokkos-dev (Kokkos 3.4.1, Serial) gives Kokkos::kokkos an
# include directory computed four levels above its cmake folder (/usr/lib/include),
# which does not exist; its headers are in ${Kokkos_INCLUDE_DIRS} (include/trilinos).
# Kokkos builds made by cmake/kokkos/build-kokkos.sh and Kokkos 4.x are left alone.
# 3.4: the oldest Kokkos uq is built and tested against (Debian 12's); 4.x is compiled
# against outside CI (DESIGN.md, Dependencies).
set(UQ_KOKKOS_MIN_VERSION 3.4)
if(NOT TARGET Kokkos::kokkos)
  find_package(Kokkos ${UQ_KOKKOS_MIN_VERSION} REQUIRED)
elseif(DEFINED Kokkos_VERSION AND Kokkos_VERSION VERSION_LESS UQ_KOKKOS_MIN_VERSION)
  message(FATAL_ERROR "uq needs Kokkos >= ${UQ_KOKKOS_MIN_VERSION}; the Kokkos::kokkos target in use is ${Kokkos_VERSION}")
endif()

get_target_property(_uq_kokkos_inc Kokkos::kokkos INTERFACE_INCLUDE_DIRECTORIES)
set(_uq_kokkos_inc_ok TRUE)
foreach(_dir IN LISTS _uq_kokkos_inc)
  if(NOT _dir MATCHES "\\$<" AND NOT EXISTS "${_dir}")
    set(_uq_kokkos_inc_ok FALSE)
  endif()
endforeach()
if(NOT _uq_kokkos_inc_ok AND Kokkos_INCLUDE_DIRS)
  message(STATUS "uq: Kokkos::kokkos include directory '${_uq_kokkos_inc}' does not exist; "
                 "using Kokkos_INCLUDE_DIRS '${Kokkos_INCLUDE_DIRS}'")
  set_target_properties(Kokkos::kokkos PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${Kokkos_INCLUDE_DIRS}")
endif()
unset(_uq_kokkos_inc)
unset(_uq_kokkos_inc_ok)
