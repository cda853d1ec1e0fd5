# gfx950 toolchain glue: compile HIP sources for gfx950 with Debian's clang-22 (driven
# directly: CMake's HIP language cannot find Debian's hip-lang layout) and check the
# resulting code objects' instructions and resource use in ctest.
#
#   include(gfx950)
#   uq_gfx950_find_tools()
#   uq_gfx950_object(<target> <source.hip>
#                    [INCLUDE_DIRECTORIES dir...] [DEFINITIONS NAME[=VALUE]...]
#                    [OPTIONS flag...] [DEPENDS file...])
#       Builds <target>: ${CMAKE_CURRENT_BINARY_DIR}/<target>.co, a linked AMDGPU code object
#       (clang++-22 -x hip --offload-arch=gfx950 -nogpulib -nogpuinc --cuda-device-only -O2).
#       The path is the target's UQ_GFX950_OBJECT property.
#   uq_gfx950_isa_check(<test> <object-target>
#                       [KERNEL symbol]          only this kernel (default: every kernel)
#                       [REQUIRE mnemonic...]    each must occur (v_foo also matches v_foo_e32,
#                                                _e64, _sdwa, _dpp)
#                       [FORBID mnemonic...]     none may occur
#                       [REQUIRE_MATCH regex...] each must match some instruction line
#                       [MAX_VGPRS n]            .vgpr_count (ArchVGPRs + AGPRs) <= n
#                       [MAX_SGPRS n]            .sgpr_count <= n
#                       [MAX_LDS bytes]          .group_segment_fixed_size <= bytes
#                       [NO_SCRATCH]             no private segment, spills or scratch_ ops
#                       [EXPECT_FAILURE regex])  self-tests of the checker: the test passes iff
#                                                the check fails and its list of failures
#                                                (not the printed text) matches regex
#       Adds a ctest test that disassembles the object (llvm-objdump-22) and reads its AMDGPU
#       metadata notes (llvm-readelf-22 --notes) at test time.
#   uq_gfx950_linked_isa_checks(<program-target> OBJECTS <object-target>...
#                               [EXPECT_NOT_LINKED])
#       Runs every uq_gfx950_isa_check made so far on those objects' kernels once more, on
#       the gfx950 code objects inside the linked program's offload bundles (the .hip_fatbin
#       section; cmake/gfx950_bundles.cmake): ctest tests hip_linked_isa.<program>.<test>.
#       EXPECT_NOT_LINKED: self-tests (hip_self_test.not_linked.<program>.<test>) that pass
#       only if the kernels are absent, for a program that never calls their launchers.
#
# The same file is the checker when run as a script:
#   cmake -DUQ_GFX950_CHECK=<settings file> -P gfx950.cmake
#   cmake -DUQ_GFX950_CHECK=<settings file> -DUQ_GFX950_LINKED=<program> -DUQ_GFX950_BUNDLER=<...>
#         -DUQ_GFX950_OBJCOPY=<...> -P gfx950.cmake     (the same check, on the code object of
#                                                        KERNEL inside a linked program)

cmake_policy(PUSH)
cmake_policy(VERSION 3.16...3.25)

# ============================================================== script mode: the checker
if(CMAKE_SCRIPT_MODE_FILE AND DEFINED UQ_GFX950_CHECK)
  include("${CMAKE_CURRENT_LIST_DIR}/uqText.cmake")
  include("${UQ_GFX950_CHECK}")  # sets OBJECT OBJDUMP READELF KERNEL REQUIRE FORBID ...
  if(DEFINED UQ_GFX950_LINKED)
    # The same settings, read from the code object that holds KERNEL in a linked program.
    include("${CMAKE_CURRENT_LIST_DIR}/gfx950_bundles.cmake")
    uq_gfx950_kernel_code_object("${UQ_GFX950_LINKED}" "${KERNEL}" OBJECT)
    if(UQ_GFX950_EXPECT_NOT_LINKED)  # self-test: a program that never calls the launcher
      if(OBJECT)
        message(FATAL_ERROR "gfx950 linked-check self-test FAILED: ${KERNEL} is linked into "
                            "${UQ_GFX950_LINKED} (${OBJECT}), which should not hold it")
      endif()
      message(STATUS "gfx950 linked-check self-test passed: ${KERNEL} is not in ${UQ_GFX950_LINKED}")
      cmake_policy(POP)
      return()
    endif()
    if(NOT OBJECT)
      message(FATAL_ERROR "gfx950 ISA check: kernel '${KERNEL}' is in none of the gfx950 code "
                          "objects linked into ${UQ_GFX950_LINKED}: its launcher was not linked")
    endif()
    message(STATUS "gfx950 ISA check of ${KERNEL} as linked into ${UQ_GFX950_LINKED}: ${OBJECT}")
  endif()

  set(_failures "")
  macro(_uq_fail text)
    string(APPEND _failures "  - ${text}\n")
  endmacro()

  # ---- instructions of the selected kernel(s)
  execute_process(COMMAND "${OBJDUMP}" -d --no-show-raw-insn "${OBJECT}"
                  OUTPUT_VARIABLE _dis ERROR_VARIABLE _err RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "gfx950 ISA check: ${OBJDUMP} failed on ${OBJECT}: ${_err}")
  endif()
  # Make the text safe as a CMake list: no ';', no brackets.
  uq_text_lines(_lines "${_dis}")
  set(_in_kernel FALSE)
  set(_kernels_seen "")
  set(_insns "")
  set(_mnemonics "")
  foreach(_line IN LISTS _lines)
    if(_line MATCHES "^[0-9a-fA-F]+ <([^>]+)>:")
      set(_sym "${CMAKE_MATCH_1}")
      list(APPEND _kernels_seen "${_sym}")
      if(NOT KERNEL OR _sym STREQUAL KERNEL)
        set(_in_kernel TRUE)
      else()
        set(_in_kernel FALSE)
      endif()
    elseif(_in_kernel AND _line MATCHES "^[ \t]+([a-z_0-9]+)")
      set(_m "${CMAKE_MATCH_1}")
      string(REGEX REPLACE "[ \t]*//.*$" "" _text "${_line}")
      string(STRIP "${_text}" _text)
      if(NOT _m STREQUAL "s_nop")  # also the code object's padding
        list(APPEND _insns "${_text}")
      endif()
      list(APPEND _mnemonics "${_m}")
    endif()
  endforeach()
  if(KERNEL AND NOT KERNEL IN_LIST _kernels_seen)
    message(FATAL_ERROR "gfx950 ISA check: kernel '${KERNEL}' is not in ${OBJECT} "
                        "(it has: ${_kernels_seen})")
  endif()
  list(REMOVE_DUPLICATES _mnemonics)

  foreach(_want IN LISTS REQUIRE)
    set(_found FALSE)
    foreach(_m IN LISTS _mnemonics)
      if(_m STREQUAL _want OR _m MATCHES "^${_want}_(e32|e64|sdwa|dpp|e64_dpp)$")
        set(_found TRUE)
        break()
      endif()
    endforeach()
    if(NOT _found)
      _uq_fail("required instruction '${_want}' is missing")
    endif()
  endforeach()
  foreach(_bad IN LISTS FORBID)
    foreach(_m IN LISTS _mnemonics)
      if(_m STREQUAL _bad OR _m MATCHES "^${_bad}_(e32|e64|sdwa|dpp|e64_dpp)$")
        _uq_fail("forbidden instruction '${_m}' is present")
      endif()
    endforeach()
  endforeach()
  foreach(_re IN LISTS REQUIRE_MATCH)
    set(_found FALSE)
    foreach(_i IN LISTS _insns)
      if(_i MATCHES "${_re}")
        set(_found TRUE)
        break()
      endif()
    endforeach()
    if(NOT _found)
      _uq_fail("no instruction matches '${_re}'")
    endif()
  endforeach()

  # ---- resource use from the AMDGPU metadata notes
  execute_process(COMMAND "${READELF}" --notes "${OBJECT}"
                  OUTPUT_VARIABLE _notes ERROR_VARIABLE _err RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "gfx950 ISA check: ${READELF} failed on ${OBJECT}: ${_err}")
  endif()
  uq_text_lines(_note_lines "${_notes}")
  # One record per kernel: "  - .key: value" starts it, "    .key: value" continues it.
  set(_records "")
  set(_record "")
  foreach(_line IN LISTS _note_lines)
    if(_line MATCHES "^  - (\\.[a-z_]+):[ ]*(.*)$")
      if(_record)
        list(APPEND _records "${_record}")
      endif()
      set(_record "${CMAKE_MATCH_1}=${CMAKE_MATCH_2}")
    elseif(_line MATCHES "^    (\\.[a-z_]+):[ ]*(.*)$")
      string(APPEND _record "|${CMAKE_MATCH_1}=${CMAKE_MATCH_2}")
    elseif(_line MATCHES "^[a-z]")
      if(_record)
        list(APPEND _records "${_record}")
      endif()
      set(_record "")
    endif()
  endforeach()
  if(_record)
    list(APPEND _records "${_record}")
  endif()

  set(_summary "")
  set(_checked 0)
  foreach(_rec IN LISTS _records)
    string(REPLACE "|" ";" _fields "${_rec}")
    foreach(_key name vgpr_count sgpr_count group_segment_fixed_size private_segment_fixed_size
                 vgpr_spill_count sgpr_spill_count uses_dynamic_stack agpr_count)
      set(_v_${_key} "")
      foreach(_f IN LISTS _fields)
        if(_f MATCHES "^\\.${_key}=(.*)$")
          string(STRIP "${CMAKE_MATCH_1}" _v_${_key})
        endif()
      endforeach()
    endforeach()
    if(KERNEL AND NOT _v_name STREQUAL KERNEL)
      continue()
    endif()
    math(EXPR _checked "${_checked} + 1")
    string(APPEND _summary
           "  ${_v_name}: vgpr_count ${_v_vgpr_count} (agpr ${_v_agpr_count}), sgpr_count "
           "${_v_sgpr_count}, LDS ${_v_group_segment_fixed_size} B, scratch "
           "${_v_private_segment_fixed_size} B, spills v${_v_vgpr_spill_count}/s${_v_sgpr_spill_count}\n")
    if(DEFINED MAX_VGPRS AND NOT MAX_VGPRS STREQUAL "" AND _v_vgpr_count GREATER MAX_VGPRS)
      _uq_fail("${_v_name}: ${_v_vgpr_count} VGPRs (ArchVGPR + AGPR) > MAX_VGPRS ${MAX_VGPRS}")
    endif()
    if(DEFINED MAX_SGPRS AND NOT MAX_SGPRS STREQUAL "" AND _v_sgpr_count GREATER MAX_SGPRS)
      _uq_fail("${_v_name}: ${_v_sgpr_count} SGPRs > MAX_SGPRS ${MAX_SGPRS}")
    endif()
    if(DEFINED MAX_LDS AND NOT MAX_LDS STREQUAL "" AND _v_group_segment_fixed_size GREATER MAX_LDS)
      _uq_fail("${_v_name}: ${_v_group_segment_fixed_size} bytes of LDS > MAX_LDS ${MAX_LDS}")
    endif()
    if(NO_SCRATCH)
      if(NOT _v_private_segment_fixed_size EQUAL 0)
        _uq_fail("${_v_name}: scratch (private segment) of ${_v_private_segment_fixed_size} bytes")
      endif()
      if(NOT _v_vgpr_spill_count EQUAL 0 OR NOT _v_sgpr_spill_count EQUAL 0)
        _uq_fail("${_v_name}: register spills (VGPR ${_v_vgpr_spill_count}, SGPR ${_v_sgpr_spill_count})")
      endif()
      if(_v_uses_dynamic_stack STREQUAL "true")
        _uq_fail("${_v_name}: uses a dynamic stack")
      endif()
    endif()
  endforeach()
  if(_checked EQUAL 0)
    _uq_fail("no kernel metadata found for '${KERNEL}' in ${OBJECT}")
  endif()
  if(NO_SCRATCH)
    foreach(_m IN LISTS _mnemonics)
      if(_m MATCHES "^scratch_")
        _uq_fail("scratch instruction '${_m}' is present")
      endif()
    endforeach()
  endif()

  list(LENGTH _insns _n_insns)
  # Self-tests of the checker decide here, on the list of failures itself: never on the
  # printed message, which CMake wraps at a width that depends on the path of the object.
  if(NOT EXPECT_FAILURE STREQUAL "")
    string(REPLACE "\n" " " _flat "${_failures}")
    if(_failures AND _flat MATCHES "${EXPECT_FAILURE}")
      message(STATUS "gfx950 ISA checker self-test passed: the check failed as expected "
                     "(${EXPECT_FAILURE})")
      cmake_policy(POP)
      return()
    endif()
    message(FATAL_ERROR "gfx950 ISA checker self-test FAILED: expected a failure matching "
                        "'${EXPECT_FAILURE}', the checker reported: '${_flat}'")
  endif()
  if(_failures)
    message(FATAL_ERROR "gfx950 ISA check of ${OBJECT} FAILED:\n${_failures}resources:\n${_summary}")
  endif()
  message(STATUS "gfx950 ISA check of ${OBJECT}: ${_n_insns} instructions, all checks passed\n"
                 "${_summary}")
  cmake_policy(POP)
  return()
endif()

# ============================================================== configure mode
set(_UQ_GFX950_CMAKE_FILE "${CMAKE_CURRENT_LIST_FILE}")
# (also for callers in other directories, where the variable above is not set)
set_property(GLOBAL PROPERTY UQ_GFX950_CMAKE_FILE "${CMAKE_CURRENT_LIST_FILE}")

# Finds clang-22 (with lld-22 for the device link) and the LLVM-22 binutils; a missing tool
# is a configure error, because UQ_BUILD_GFX950 asked for the gfx950 build.
function(uq_gfx950_find_tools)
  set(_hints /usr/lib/llvm-22/bin)
  find_program(UQ_GFX950_CLANG NAMES clang++-22 clang++ HINTS ${_hints} NO_DEFAULT_PATH)
  find_program(UQ_GFX950_CLANG NAMES clang++-22)
  # The other tools are looked for beside that clang first (-DUQ_GFX950_CLANG=<ROCm's or
  # another clang> then brings its own LLVM tools), then in LLVM 22's folder.
  if(UQ_GFX950_CLANG)
    get_filename_component(_clang_dir "${UQ_GFX950_CLANG}" DIRECTORY)
    set(_hints "${_clang_dir}" ${_hints})
  endif()
  find_program(UQ_GFX950_LLD NAMES ld.lld-22 ld.lld HINTS ${_hints} NO_DEFAULT_PATH)
  find_program(UQ_GFX950_LLD NAMES ld.lld-22)
  find_program(UQ_GFX950_OBJDUMP NAMES llvm-objdump-22 llvm-objdump HINTS ${_hints} NO_DEFAULT_PATH)
  find_program(UQ_GFX950_OBJDUMP NAMES llvm-objdump-22)
  find_program(UQ_GFX950_READELF NAMES llvm-readelf-22 llvm-readelf HINTS ${_hints} NO_DEFAULT_PATH)
  find_program(UQ_GFX950_READELF NAMES llvm-readelf-22)
  # Only for reading linked programs (uq_gfx950_linked_isa_checks): not required here.
  find_program(UQ_GFX950_BUNDLER NAMES clang-offload-bundler-22 clang-offload-bundler HINTS ${_hints}
               NO_DEFAULT_PATH)
  find_program(UQ_GFX950_BUNDLER NAMES clang-offload-bundler-22)
  find_program(UQ_GFX950_OBJCOPY NAMES llvm-objcopy-22 llvm-objcopy HINTS ${_hints} NO_DEFAULT_PATH)
  find_program(UQ_GFX950_OBJCOPY NAMES llvm-objcopy-22)
  foreach(_tool CLANG LLD OBJDUMP READELF)
    if(NOT UQ_GFX950_${_tool})
      message(FATAL_ERROR "UQ_BUILD_GFX950=ON needs clang-22, lld-22 and llvm-22 (missing: "
                          "${_tool}); install them with ./uq deps or apt-get install clang-22 "
                          "clang-tools-22 lld-22 llvm-22, or configure with -DUQ_BUILD_GFX950=OFF")
    endif()
  endforeach()
  execute_process(COMMAND "${UQ_GFX950_CLANG}" --version OUTPUT_VARIABLE _version)
  if(NOT _version MATCHES "clang version (2[2-9]|[3-9][0-9])\\.")
    message(FATAL_ERROR "UQ_BUILD_GFX950=ON needs clang 22 or newer for gfx950; "
                        "${UQ_GFX950_CLANG} is: ${_version}")
  endif()
  message(STATUS "uq: gfx950 compiler ${UQ_GFX950_CLANG}")
endfunction()

function(uq_gfx950_object name source)
  cmake_parse_arguments(ARG "" "" "INCLUDE_DIRECTORIES;DEFINITIONS;OPTIONS;DEPENDS" ${ARGN})
  if(NOT UQ_GFX950_CLANG)
    message(FATAL_ERROR "uq_gfx950_object: call uq_gfx950_find_tools() first")
  endif()
  get_filename_component(_source "${source}" ABSOLUTE)
  set(_out "${CMAKE_CURRENT_BINARY_DIR}/${name}.co")
  set(_dep "${CMAKE_CURRENT_BINARY_DIR}/${name}.co.d")
  set(_flags -x hip --offload-arch=gfx950 -nogpulib -nogpuinc --cuda-device-only
             --no-gpu-bundle-output -O2 -std=c++17 -Wall -Wextra)
  foreach(_dir IN LISTS ARG_INCLUDE_DIRECTORIES)
    list(APPEND _flags "-I${_dir}")
  endforeach()
  foreach(_def IN LISTS ARG_DEFINITIONS)
    list(APPEND _flags "-D${_def}")
  endforeach()
  list(APPEND _flags ${ARG_OPTIONS})
  set(_depfile_args "")
  if(CMAKE_VERSION VERSION_GREATER_EQUAL 3.20)
    set(_depfile_args DEPFILE "${_dep}")
  endif()
  add_custom_command(
    OUTPUT "${_out}"
    # (-MD/-MF are ignored by the HIP device-only driver; the cc1 options work.)
    COMMAND "${UQ_GFX950_CLANG}" ${_flags} -Xclang -dependency-file -Xclang "${_dep}" -Xclang -MT
            -Xclang "${_out}" -c "${_source}" -o "${_out}"
    DEPENDS "${_source}" ${ARG_DEPENDS}
    ${_depfile_args}
    COMMENT "gfx950: compiling ${name}"
    VERBATIM)
  add_custom_target(${name} ALL DEPENDS "${_out}")
  set_target_properties(${name} PROPERTIES UQ_GFX950_OBJECT "${_out}")
  set_property(GLOBAL APPEND PROPERTY UQ_GFX950_OBJECT_TARGETS ${name})
endfunction()

# uq_gfx950_isa_objects_target(<target>): one target that builds every code object made so far
# by uq_gfx950_object (what the ISA tests read), and nothing else.
function(uq_gfx950_isa_objects_target target)
  get_property(_objects GLOBAL PROPERTY UQ_GFX950_OBJECT_TARGETS)
  add_custom_target(${target} DEPENDS ${_objects})
endfunction()

function(uq_gfx950_isa_check test object_target)
  cmake_parse_arguments(ARG "NO_SCRATCH" "KERNEL;MAX_VGPRS;MAX_SGPRS;MAX_LDS;EXPECT_FAILURE"
                        "REQUIRE;FORBID;REQUIRE_MATCH" ${ARGN})
  get_target_property(_object ${object_target} UQ_GFX950_OBJECT)
  if(NOT _object)
    message(FATAL_ERROR "uq_gfx950_isa_check: ${object_target} is not a uq_gfx950_object target")
  endif()
  set(_settings "${CMAKE_CURRENT_BINARY_DIR}/${test}.isa-check.cmake")
  set(_text "set(OBJECT [==[${_object}]==])\nset(OBJDUMP [==[${UQ_GFX950_OBJDUMP}]==])\n")
  string(APPEND _text "set(READELF [==[${UQ_GFX950_READELF}]==])\n")
  string(APPEND _text "set(KERNEL [==[${ARG_KERNEL}]==])\n")
  foreach(_list REQUIRE FORBID REQUIRE_MATCH)
    string(APPEND _text "set(${_list} \"\")\n")
    foreach(_item IN LISTS ARG_${_list})
      string(APPEND _text "list(APPEND ${_list} [==[${_item}]==])\n")
    endforeach()
  endforeach()
  foreach(_value MAX_VGPRS MAX_SGPRS MAX_LDS EXPECT_FAILURE)
    string(APPEND _text "set(${_value} [==[${ARG_${_value}}]==])\n")
  endforeach()
  if(ARG_NO_SCRATCH)
    string(APPEND _text "set(NO_SCRATCH TRUE)\n")
  else()
    string(APPEND _text "set(NO_SCRATCH FALSE)\n")
  endif()
  file(WRITE "${_settings}" "${_text}")
  if("${ARG_EXPECT_FAILURE}" STREQUAL "")  # the checker's self-tests are not checks of a kernel
    set_property(GLOBAL APPEND PROPERTY UQ_GFX950_ISA_CHECKS "${test}|${object_target}|${_settings}")
  endif()
  add_test(NAME ${test}
           COMMAND "${CMAKE_COMMAND}" "-DUQ_GFX950_CHECK=${_settings}" -P "${_UQ_GFX950_CMAKE_FILE}")
endfunction()

function(uq_gfx950_linked_isa_checks program)
  cmake_parse_arguments(ARG "EXPECT_NOT_LINKED" "" "OBJECTS" ${ARGN})
  set(_name hip_linked_isa)
  set(_expect "")
  if(ARG_EXPECT_NOT_LINKED)
    set(_name hip_self_test.not_linked)
    set(_expect -DUQ_GFX950_EXPECT_NOT_LINKED=ON)
  endif()
  if(NOT UQ_GFX950_BUNDLER OR NOT UQ_GFX950_OBJCOPY)
    message(FATAL_ERROR "uq_gfx950_linked_isa_checks needs clang-offload-bundler-22 (clang-tools-22) "
                        "and llvm-objcopy-22 (llvm-22)")
  endif()
  get_property(_checks GLOBAL PROPERTY UQ_GFX950_ISA_CHECKS)
  get_property(_checker GLOBAL PROPERTY UQ_GFX950_CMAKE_FILE)
  set(_added 0)
  foreach(_check IN LISTS _checks)
    string(REPLACE "|" ";" _fields "${_check}")
    list(GET _fields 0 _test)
    list(GET _fields 1 _object)
    list(GET _fields 2 _settings)
    if(NOT _object IN_LIST ARG_OBJECTS)
      continue()
    endif()
    add_test(NAME ${_name}.${program}.${_test}
             COMMAND "${CMAKE_COMMAND}" "-DUQ_GFX950_CHECK=${_settings}" ${_expect}
                     "-DUQ_GFX950_LINKED=$<TARGET_FILE:${program}>" "-DUQ_GFX950_BUNDLER=${UQ_GFX950_BUNDLER}"
                     "-DUQ_GFX950_OBJCOPY=${UQ_GFX950_OBJCOPY}" -P "${_checker}")
    math(EXPR _added "${_added} + 1")
  endforeach()
  if(_added EQUAL 0)
    message(FATAL_ERROR "uq_gfx950_linked_isa_checks(${program}): no ISA check reads ${ARG_OBJECTS}")
  endif()
endfunction()

cmake_policy(POP)
