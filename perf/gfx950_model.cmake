# The gfx950 performance model: included by arch/CMakeLists.txt (UQ_BUILD_GFX950).
#
#   gfx950_plan          the library's launch plan of a shape (perf/gfx950_plan*.cpp, plain C++)
#   gfx950_lds_banks     the decode kernels' LDS bank-conflict degrees, from every lane's address
#                        in the wavefront emulator (perf/gfx950_lds_banks.cpp)
#   uq_gfx950_model      target: the code objects and gfx950_plan, what ./uq model needs
#   gfx950_perf_model    ctest: regenerates the model's tables from the code objects the suite
#                        builds anyway (perf/gfx950_model.py --check: fails if the script errors
#                        or a kernel or one of its loops cannot be found); the report is left
#                        in <build>/perf/gfx950_model.md
find_package(Python3 3.11 COMPONENTS Interpreter)
find_program(UQ_GFX950_MCA NAMES llvm-mca-22 llvm-mca HINTS /usr/lib/llvm-22/bin)

add_executable(gfx950_plan ${PROJECT_SOURCE_DIR}/perf/gfx950_plan.cpp ${PROJECT_SOURCE_DIR}/perf/gfx950_plan_score.cpp)
target_include_directories(gfx950_plan PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/arch)
target_compile_features(gfx950_plan PRIVATE cxx_std_17)
add_executable(gfx950_lds_banks ${PROJECT_SOURCE_DIR}/perf/gfx950_lds_banks.cpp)
target_link_libraries(gfx950_lds_banks PRIVATE uq::gfx950_emu)
target_compile_options(gfx950_lds_banks PRIVATE -O2)
add_custom_target(uq_gfx950_model DEPENDS gfx950_plan gfx950_lds_banks uq_gfx950_decode_isa uq_gfx950_decode_queries_isa
                  uq_gfx950_reduce_isa uq_gfx950_score_isa)

get_target_property(_uq_model_objects uq_gfx950_decode_isa UQ_GFX950_OBJECT)
get_filename_component(_uq_model_objects "${_uq_model_objects}" DIRECTORY)
set(UQ_GFX950_MODEL_ARGS
    ${PROJECT_SOURCE_DIR}/perf/gfx950_model.py --check --objects ${_uq_model_objects}
    --objdump ${UQ_GFX950_OBJDUMP} --readelf ${UQ_GFX950_READELF})
if(UQ_GFX950_MCA)
  list(APPEND UQ_GFX950_MODEL_ARGS --mca ${UQ_GFX950_MCA})
else()
  list(APPEND UQ_GFX950_MODEL_ARGS --no-mca)
endif()
if(Python3_Interpreter_FOUND)
  add_test(NAME gfx950_perf_model
           COMMAND ${Python3_EXECUTABLE} ${UQ_GFX950_MODEL_ARGS} --plan $<TARGET_FILE:gfx950_plan>
                   --banks $<TARGET_FILE:gfx950_lds_banks>
                   --markdown ${CMAKE_BINARY_DIR}/perf/gfx950_model.md)
  set_tests_properties(gfx950_perf_model PROPERTIES TIMEOUT 300)
else()
  message(WARNING "uq: python3 >= 3.11 not found: the gfx950_perf_model test is not added")
endif()

# The MI355X suite (perf/mi355x_suite.sh) cannot run here: its --dry-run prints every command it
# would run (and must not fail), shellcheck reads it where installed, and its comparison step
# (perf/gfx950_compare.py) is run on a made-up benchmark file: one row inside the 0.7-1.5x band of
# the model, one outside. Together well under a second.
add_test(NAME gfx950_mi355x_suite_dry_run
         COMMAND bash ${PROJECT_SOURCE_DIR}/perf/mi355x_suite.sh --dry-run --build ${CMAKE_BINARY_DIR}/mi355x-dry-run)
set_tests_properties(gfx950_mi355x_suite_dry_run PROPERTIES
                     PASS_REGULAR_EXPRESSION "dry run done"
                     FAIL_REGULAR_EXPRESSION "unknown option|No such file")
find_program(UQ_SHELLCHECK shellcheck)
if(UQ_SHELLCHECK)
  add_test(NAME gfx950_mi355x_suite_shellcheck COMMAND ${UQ_SHELLCHECK} ${PROJECT_SOURCE_DIR}/perf/mi355x_suite.sh)
endif()
if(Python3_Interpreter_FOUND)
  add_test(NAME gfx950_compare_verdicts
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/perf/gfx950_compare.py
                   --model ${PROJECT_SOURCE_DIR}/docs/perf-log/2026-12-05-gfx950-speed/3-partition-rule.json
                   --bench ${PROJECT_SOURCE_DIR}/perf/gfx950/testdata/bench_sample.json)
  set_tests_properties(gfx950_compare_verdicts PROPERTIES
                       PASS_REGULAR_EXPRESSION "4x75000 QG6 Hk1 BS64 .* PASS .*\n.*16x131072 QG6 Hk1 BS64 .* INVESTIGATE")
endif()
