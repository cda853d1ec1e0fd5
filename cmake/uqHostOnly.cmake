# uq_host_only_sources(<sources...>): sources that include no Kokkos header (directly or through
# another header) compile with the host compiler alone when the C++ compiler is Kokkos'
# nvcc_wrapper. nvcc runs its front end twice over every file, device code or not: about 8 s a
# file on a CI core for the float64 reference, the uq program's file handling and its tests.
# A source listed here that comes to include Kokkos fails to compile in the CUDA build (Kokkos'
# CUDA headers need nvcc), which says to take it off the list. Call it in the directory that
# adds the sources' target (source properties are per directory).
function(uq_host_only_sources)
  if(CMAKE_CXX_COMPILER MATCHES "nvcc_wrapper$")
    set_source_files_properties(${ARGN} PROPERTIES COMPILE_OPTIONS "--host-only")
  endif()
endfunction()
