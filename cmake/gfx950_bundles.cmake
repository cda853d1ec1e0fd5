# The gfx950 code objects inside a linked HIP program, for the ISA checker (gfx950.cmake in
# script mode with -DUQ_GFX950_LINKED=<program>). Included in script mode only.
#
# clang puts each HIP translation unit's device code into the object's .hip_fatbin section as
# one clang offload bundle ("__CLANG_OFFLOAD_BUNDLE__", then its entries: a host stub and one
# code object per --offload-arch). The linker concatenates those sections, each input aligned
# to 4096 bytes (the section's alignment), so a program's .hip_fatbin is a row of bundles that
# each start at a multiple of 4096. This file cuts them apart (llvm-objcopy, dd), unbundles the
# gfx950 entry of each (clang-offload-bundler) and finds the one whose symbol table defines a
# kernel (its "<kernel>.kd" descriptor, llvm-objdump --syms).
#
# Needs: UQ_GFX950_OBJCOPY, UQ_GFX950_BUNDLER, OBJDUMP (from the check's settings).

set(UQ_GFX950_BUNDLE_TARGET hipv4-amdgcn-amd-amdhsa--gfx950)
set(UQ_GFX950_BUNDLE_MAGIC_HEX 5f5f434c414e475f4f46464c4f41445f42554e444c455f5f)  # __CLANG_OFFLOAD_BUNDLE__

function(_uq_gfx950_run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
  if(NOT _rc EQUAL 0)
    string(REPLACE ";" " " _cmd "${ARGN}")
    message(FATAL_ERROR "gfx950 bundles: '${_cmd}' failed (${_rc}): ${_err}${_out}")
  endif()
endfunction()

# Extracts every gfx950 code object of <program> into <program>.gfx950/ (once per build of
# the program: a stamp holds its timestamp) and writes kernels.txt there, one line
# "<code object>|<kernel>" per kernel. Concurrent checks of the same program wait on a lock.
function(uq_gfx950_extract_code_objects program out_dir_var)
  set(_dir "${program}.gfx950")
  file(TIMESTAMP "${program}" _stamp "%Y-%m-%dT%H:%M:%S" UTC)
  file(SIZE "${program}" _size)
  string(APPEND _stamp " ${_size}")
  file(LOCK "${_dir}.lock" GUARD FUNCTION)
  set(${out_dir_var} "${_dir}" PARENT_SCOPE)
  if(EXISTS "${_dir}/stamp")
    file(READ "${_dir}/stamp" _old)
    if(_old STREQUAL _stamp)
      return()
    endif()
  endif()
  file(REMOVE_RECURSE "${_dir}")
  file(MAKE_DIRECTORY "${_dir}")
  _uq_gfx950_run("${UQ_GFX950_OBJCOPY}" -O binary --only-section=.hip_fatbin "${program}" "${_dir}/hip_fatbin")
  file(SIZE "${_dir}/hip_fatbin" _bytes)
  if(_bytes EQUAL 0)
    message(FATAL_ERROR "gfx950 bundles: ${program} has no .hip_fatbin section: no HIP device code is linked")
  endif()
  file(READ "${_dir}/hip_fatbin" _hex HEX)
  string(LENGTH "${UQ_GFX950_BUNDLE_MAGIC_HEX}" _magic_len)
  math(EXPR _pages "(${_bytes} + 4095) / 4096 - 1")
  set(_index "")
  set(_bundles 0)
  foreach(_page RANGE 0 ${_pages})
    math(EXPR _at "${_page} * 8192")  # two hex digits per byte
    string(SUBSTRING "${_hex}" ${_at} ${_magic_len} _head)
    if(NOT _head STREQUAL UQ_GFX950_BUNDLE_MAGIC_HEX)
      continue()
    endif()
    # The bundle's own header gives its entries' offsets: the bundler ignores what follows it.
    set(_bundle "${_dir}/bundle-${_bundles}")
    _uq_gfx950_run(dd "if=${_dir}/hip_fatbin" "of=${_bundle}.bin" bs=4096 skip=${_page} status=none)
    execute_process(COMMAND "${UQ_GFX950_BUNDLER}" --list --type=o "--input=${_bundle}.bin"
                    OUTPUT_VARIABLE _targets RESULT_VARIABLE _rc ERROR_VARIABLE _err)
    if(NOT _rc EQUAL 0)
      message(FATAL_ERROR "gfx950 bundles: bundle at byte ${_page}*4096 of ${program}'s .hip_fatbin: ${_err}")
    endif()
    string(REPLACE "\n" ";" _targets "${_targets}")
    foreach(_t IN LISTS _targets)
      if(_t MATCHES "^hip" AND NOT _t STREQUAL UQ_GFX950_BUNDLE_TARGET)
        message(FATAL_ERROR "gfx950 bundles: ${program} holds device code for '${_t}', not only gfx950")
      endif()
    endforeach()
    if(NOT UQ_GFX950_BUNDLE_TARGET IN_LIST _targets)
      message(FATAL_ERROR "gfx950 bundles: a bundle of ${program} has no gfx950 code object (${_targets})")
    endif()
    _uq_gfx950_run("${UQ_GFX950_BUNDLER}" --unbundle --type=o "--targets=${UQ_GFX950_BUNDLE_TARGET}"
                   "--input=${_bundle}.bin" "--output=${_bundle}.co")
    file(REMOVE "${_bundle}.bin")
    execute_process(COMMAND "${OBJDUMP}" --syms "${_bundle}.co" OUTPUT_VARIABLE _syms RESULT_VARIABLE _rc)
    if(NOT _rc EQUAL 0)
      message(FATAL_ERROR "gfx950 bundles: ${OBJDUMP} --syms failed on ${_bundle}.co")
    endif()
    string(REGEX MATCHALL "[^ \t\n]+\\.kd\n" _kds "${_syms}")
    foreach(_kd IN LISTS _kds)
      string(REGEX REPLACE "\\.kd\n$" "" _kernel "${_kd}")
      string(APPEND _index "bundle-${_bundles}.co|${_kernel}\n")
    endforeach()
    math(EXPR _bundles "${_bundles} + 1")
  endforeach()
  file(REMOVE "${_dir}/hip_fatbin")
  if(_bundles EQUAL 0)
    message(FATAL_ERROR "gfx950 bundles: no offload bundle in ${program}'s .hip_fatbin")
  endif()
  file(WRITE "${_dir}/kernels.txt" "${_index}")
  file(WRITE "${_dir}/stamp" "${_stamp}")
  message(STATUS "gfx950 bundles: ${_bundles} gfx950 code objects extracted from ${program}")
endfunction()

# Sets <out_var> to the extracted code object of <program> that defines <kernel>, or to ""
# when none does (the kernel, hence its launcher, was not linked).
function(uq_gfx950_kernel_code_object program kernel out_var)
  if(kernel STREQUAL "")
    message(FATAL_ERROR "gfx950 bundles: a check of a linked program needs its KERNEL")
  endif()
  uq_gfx950_extract_code_objects("${program}" _dir)
  file(STRINGS "${_dir}/kernels.txt" _lines)
  set(_found "")
  foreach(_line IN LISTS _lines)
    if(_line MATCHES "^([^|]+)\\|(.*)$" AND CMAKE_MATCH_2 STREQUAL kernel)
      list(APPEND _found "${_dir}/${CMAKE_MATCH_1}")
    endif()
  endforeach()
  list(LENGTH _found _n)
  if(_n GREATER 1)
    message(FATAL_ERROR "gfx950 ISA check: kernel '${kernel}' is defined in ${_n} code objects of ${program}: ${_found}")
  endif()
  set(${out_var} "${_found}" PARENT_SCOPE)
endfunction()
