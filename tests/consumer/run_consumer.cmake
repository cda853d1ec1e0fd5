# ctest driver: install uq, build the consumer against the installed tree, run it (not with
# -DRUN=OFF).
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "command failed (${rc}): ${ARGN}\n${out}")
  endif()
  message(STATUS "${out}")
endfunction()
run(${CMAKE_COMMAND} --install ${UQ_BUILD_DIR} --prefix ${prefix})
if(NOT EXISTS ${prefix}/lib/cmake/uq/uqConfig.cmake)
  message(FATAL_ERROR "uqConfig.cmake was not installed")
endif()
run(${CMAKE_COMMAND} -S ${CONSUMER_SOURCE} -B ${WORK_DIR}/build
    -DCMAKE_PREFIX_PATH=${prefix} -DKokkos_DIR=${KOKKOS_DIR}
    -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_BUILD_TYPE=${BUILD_TYPE})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
if(DEFINED RUN AND NOT RUN)  # a GPU build on a machine without that GPU: built, not run
  message(STATUS "consumer built against the installed package; not run (RUN=${RUN})")
  return()
endif()
run(${WORK_DIR}/build/consumer)
