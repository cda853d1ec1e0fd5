# uq_add_tuned_path(<name> DIRECTORY <dir> [LINK_IF <condition>...]): the one CMake call a tuned
# path needs (its C++ side is a row of uq::kTunedPaths, a specialisation of uq::impl::TunedSpace
# and one of uq::impl::TunedOp per operation it implements, src/uq/impl/tuned_path.hpp).
#
# <dir> builds the path's static library uq_<name> however its language needs (arch/sm90: nvcc
# custom commands; arch: clang-22 offload bundles) and gives it the usage requirements a caller
# needs, among them the UQ_ENABLE_<NAME> definition that makes src/uq/impl/tuned_path.hpp include
# the path's specialisations. When the LINK_IF condition holds (an if() condition; default: true),
# uq::uq links uq_<name> and the library is installed with uq's package; otherwise the folder is
# only built for its own checks (the gfx950 folder also builds the emulator and the ISA checks in
# builds without Kokkos HIP). A folder named by several calls is added once.
function(uq_add_tuned_path name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "DIRECTORY" "LINK_IF")
  if(NOT arg_DIRECTORY)
    message(FATAL_ERROR "uq_add_tuned_path(${name}): DIRECTORY <folder> is required")
  endif()
  get_filename_component(_dir "${arg_DIRECTORY}" ABSOLUTE BASE_DIR "${PROJECT_SOURCE_DIR}")
  get_property(_added GLOBAL PROPERTY UQ_TUNED_PATH_DIRECTORIES)
  if(NOT _dir IN_LIST _added)
    add_subdirectory("${_dir}")
    set_property(GLOBAL APPEND PROPERTY UQ_TUNED_PATH_DIRECTORIES "${_dir}")
  endif()
  if(NOT DEFINED arg_LINK_IF)
    set(arg_LINK_IF TRUE)
  endif()
  if(${arg_LINK_IF})
    if(NOT TARGET uq_${name})
      message(FATAL_ERROR "uq_add_tuned_path(${name}): ${arg_DIRECTORY} defines no target uq_${name}")
    endif()
    target_link_libraries(uq INTERFACE uq_${name})
    install(TARGETS uq_${name} EXPORT uqTargets)
    set_property(GLOBAL APPEND PROPERTY UQ_LINKED_TUNED_PATHS ${name})
  endif()
endfunction()
