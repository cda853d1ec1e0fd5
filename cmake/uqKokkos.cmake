# Finds Kokkos for this build tree and sets UQ_KOKKOS_TARGET: the target uq's own targets link.
# Private to this build: it is not installed, and the installed uq::uq links Kokkos::kokkos as it
# is (uqConfig.cmake only finds Kokkos), so a downstream project keeps the Kokkos it configured.
#
# Debian's libtrilinos-kokkos-dev (Kokkos 3.4.1, Serial) gives Kokkos::kokkos an include
# directory computed four levels above its cmake folder (/usr/lib/include), which does not exist;
# its headers are in ${Kokkos_INCLUDE_DIRS} (include/trilinos). Rather than edit that imported
# target, this build links a copy of it with the include directory that exists
# (uq_kokkos_repaired). Kokkos builds made by cmake/kokkos/build-kokkos.sh and Kokkos 4.x are
# linked as they are.
# 3.4: the oldest Kokkos uq is built and tested against (Debian 12's); 4.x is compiled against
# outside CI (docs/DESIGN.md, "Dependencies"). uqConfig.cmake.in asks for the same minimum.
set(UQ_KOKKOS_MIN_VERSION 3.4)
if(NOT TARGET Kokkos::kokkos)
  find_package(Kokkos ${UQ_KOKKOS_MIN_VERSION} REQUIRED)
elseif(DEFINED Kokkos_VERSION AND Kokkos_VERSION VERSION_LESS UQ_KOKKOS_MIN_VERSION)
  message(FATAL_ERROR "uq needs Kokkos >= ${UQ_KOKKOS_MIN_VERSION}; the Kokkos::kokkos target in use is ${Kokkos_VERSION}")
endif()

set(UQ_KOKKOS_TARGET Kokkos::kokkos)
get_target_property(_uq_kokkos_inc Kokkos::kokkos INTERFACE_INCLUDE_DIRECTORIES)
set(_uq_kokkos_inc_ok TRUE)
foreach(_dir IN LISTS _uq_kokkos_inc)
  if(NOT _dir MATCHES "\\$<" AND NOT EXISTS "${_dir}")
    set(_uq_kokkos_inc_ok FALSE)
  endif()
endforeach()
if(NOT _uq_kokkos_inc_ok AND Kokkos_INCLUDE_DIRS)
  message(STATUS "uq: Kokkos::kokkos include directory '${_uq_kokkos_inc}' does not exist; "
                 "this build links uq_kokkos_repaired (include directory '${Kokkos_INCLUDE_DIRS}')")
  if(NOT TARGET uq_kokkos_repaired)
    add_library(uq_kokkos_repaired INTERFACE IMPORTED)
    foreach(_property INTERFACE_LINK_LIBRARIES INTERFACE_COMPILE_OPTIONS INTERFACE_COMPILE_DEFINITIONS
                      INTERFACE_COMPILE_FEATURES INTERFACE_LINK_OPTIONS)
      get_target_property(_value Kokkos::kokkos ${_property})
      if(_value)
        set_target_properties(uq_kokkos_repaired PROPERTIES ${_property} "${_value}")
      endif()
    endforeach()
    set_target_properties(uq_kokkos_repaired PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${Kokkos_INCLUDE_DIRS}")
    unset(_property)
    unset(_value)
  endif()
  set(UQ_KOKKOS_TARGET uq_kokkos_repaired)
endif()
unset(_uq_kokkos_inc)
unset(_uq_kokkos_inc_ok)
