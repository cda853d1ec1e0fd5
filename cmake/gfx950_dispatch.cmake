# Checks that a linked Kokkos HIP program calls the gfx950 launchers from uq's HIP dispatch,
# by reading its machine code (no AMD GPU is needed, and nothing is run).
#
#   include(gfx950_dispatch)
#   uq_gfx950_dispatch_check(<test> <program-target>
#                            CALLS <launcher> <caller regex> [<launcher> <caller regex>]...
#                            [EXPECT_FAILURE])
#       Adds the ctest test <test>: in `llvm-objdump-22 -d -C <program>`, each <launcher>
#       (a function of namespace uq::gfx950, e.g. launch_decode_partitions) must be called
#       from at least one function whose demangled name matches <caller regex>; a call
#       resolves to a name only when the launcher is defined in the program, so this also
#       proves that the launcher (and with it its kernels' code objects) was linked.
#       EXPECT_FAILURE: a self-test that passes only if no launcher is called as described.
#
# Script mode: cmake -DUQ_GFX950_DISPATCH=<settings file> -P gfx950_dispatch.cmake
#              (the settings set PROGRAM, OBJDUMP and CALLS)

cmake_policy(PUSH)
cmake_policy(VERSION 3.16...3.25)

if(CMAKE_SCRIPT_MODE_FILE AND DEFINED UQ_GFX950_DISPATCH)
  include("${CMAKE_CURRENT_LIST_DIR}/uqText.cmake")
  include("${UQ_GFX950_DISPATCH}")
  # Only function headers and calls into uq::gfx950, to keep the text small.
  execute_process(COMMAND "${OBJDUMP}" -d -C --no-show-raw-insn "${PROGRAM}"
                  COMMAND grep -E "^[0-9a-f]+ <|call.*<uq::gfx950::"
                  OUTPUT_VARIABLE _dis RESULT_VARIABLE _rc)
  list(GET _rc 0 _objdump_rc)
  if(NOT _objdump_rc EQUAL 0)
    message(FATAL_ERROR "gfx950 dispatch check: ${OBJDUMP} failed on ${PROGRAM}")
  endif()
  uq_text_lines(_lines "${_dis}")
  # "caller|launcher" for every call into uq::gfx950
  set(_calls "")
  set(_function "")
  foreach(_line IN LISTS _lines)
    if(_line MATCHES "^[0-9a-f]+ <(.*)>:$")
      set(_function "${CMAKE_MATCH_1}")
    elseif(_line MATCHES "call[a-z]*[ \t]+(0x)?[0-9a-f]+ <uq::gfx950::([A-Za-z0-9_]+)\\(")
      list(APPEND _calls "${_function}|${CMAKE_MATCH_2}")
    endif()
  endforeach()

  set(_failures "")
  set(_report "")
  list(LENGTH CALLS _n)
  math(EXPR _last "${_n} - 1")
  foreach(_i RANGE 0 ${_last} 2)
    math(EXPR _j "${_i} + 1")
    list(GET CALLS ${_i} _launcher)
    list(GET CALLS ${_j} _caller_re)
    set(_callers "")
    set(_others "")
    foreach(_call IN LISTS _calls)
      string(REGEX MATCH "^(.*)\\|([^|]*)$" _m "${_call}")
      set(_function "${CMAKE_MATCH_1}")
      if(NOT CMAKE_MATCH_2 STREQUAL _launcher)
        continue()
      endif()
      string(REGEX REPLACE "\\(.*$" "" _caller "${_function}")  # drop the parameter list
      if(_function MATCHES "${_caller_re}")
        list(APPEND _callers "${_caller}")
      else()
        list(APPEND _others "${_caller}")
      endif()
    endforeach()
    list(LENGTH _callers _k)
    if(_k EQUAL 0)
      string(APPEND _failures "  - uq::gfx950::${_launcher} is called from no function matching "
                              "'${_caller_re}' (other callers: ${_others})\n")
    else()
      list(GET _callers 0 _example)
      string(APPEND _report "  uq::gfx950::${_launcher}: ${_k} call site(s), e.g. from ${_example}\n")
    endif()
  endforeach()
  if(EXPECT_FAILURE)  # decided on the list of failures, never on the printed message
    if(_report)
      message(FATAL_ERROR "gfx950 dispatch self-test FAILED: ${PROGRAM} makes calls it should not:\n${_report}")
    endif()
    message(STATUS "gfx950 dispatch self-test passed: as expected, ${PROGRAM} makes none of the calls")
    cmake_policy(POP)
    return()
  endif()
  if(_failures)
    message(FATAL_ERROR "gfx950 dispatch check of ${PROGRAM} FAILED:\n${_failures}")
  endif()
  message(STATUS "gfx950 dispatch check of ${PROGRAM} (machine code read, nothing run): passed\n${_report}")
  cmake_policy(POP)
  return()
endif()

set(_UQ_GFX950_DISPATCH_FILE "${CMAKE_CURRENT_LIST_FILE}")

function(uq_gfx950_dispatch_check test program)
  cmake_parse_arguments(ARG "EXPECT_FAILURE" "" "CALLS" ${ARGN})
  list(LENGTH ARG_CALLS _n)
  math(EXPR _odd "${_n} % 2")
  if(_n EQUAL 0 OR _odd)
    message(FATAL_ERROR "uq_gfx950_dispatch_check(${test}): CALLS takes pairs <launcher> <caller regex>")
  endif()
  if(NOT UQ_GFX950_OBJDUMP)
    message(FATAL_ERROR "uq_gfx950_dispatch_check: call uq_gfx950_find_tools() first")
  endif()
  # A settings file, as for the ISA checks: the regexes stay out of the command line.
  set(_settings "${CMAKE_CURRENT_BINARY_DIR}/${test}.dispatch-check.cmake")
  set(_text "set(PROGRAM [==[$<TARGET_FILE:${program}>]==])\nset(OBJDUMP [==[${UQ_GFX950_OBJDUMP}]==])\n")
  string(APPEND _text "set(CALLS \"\")\nset(EXPECT_FAILURE ${ARG_EXPECT_FAILURE})\n")
  foreach(_item IN LISTS ARG_CALLS)
    string(APPEND _text "list(APPEND CALLS [==[${_item}]==])\n")
  endforeach()
  file(GENERATE OUTPUT "${_settings}" CONTENT "${_text}")  # GENERATE: for $<TARGET_FILE>
  add_test(NAME ${test}
           COMMAND "${CMAKE_COMMAND}" "-DUQ_GFX950_DISPATCH=${_settings}" -P "${_UQ_GFX950_DISPATCH_FILE}")
endfunction()

cmake_policy(POP)
