# adgen's CMake package.
#
#   find_package(adgen CONFIG REQUIRED)     # with -Dadgen_DIR="$(adgen --cmake-dir)"
#   add_executable(app main.c kernel.c)
#   adgen_add_derivatives(TARGET app SOURCES kernel.c)
#
# adgen_add_derivatives(TARGET <target> SOURCES <files...> [OUTPUT_DIR <dir>] [OPENMP] [OPTIONS <adgen flags...>])
# runs `adgen build` on each source (one custom command per source), adds the resulting object
# to the target and the header directory to its include path. The target's include
# directories and compile definitions reach adgen through a response file. Each command
# reruns when its source, a header the source includes, or adgen itself changes.
#
# C++: the derivatives are compiled against the C++ library of CMAKE_CXX_COMPILER (adgen build
# --cxx), or the one -stdlib= names in CMAKE_CXX_FLAGS or the target's compile options.
#
# OpenMP: with OPENMP, or where the target already links OpenMP::OpenMP_C or compiles with
# -fopenmp when adgen_add_derivatives is called, the sources are built with -fopenmp and the
# target links the OpenMP runtime the objects call, LLVM's libomp (`adgen --openmp-library`):
# clang's own -fopenmp links it; with GCC, whose -fopenmp links libgomp, libomp is linked
# before it, and runs GCC's parallel code too (it implements libgomp's interface).

cmake_minimum_required(VERSION 3.20)

if(NOT ADGEN_EXECUTABLE)
  # <prefix>/lib/pythonX.Y/site-packages/adgen/cmake -> <prefix>/bin/adgen, else PATH
  find_program(ADGEN_EXECUTABLE adgen
    HINTS "${CMAKE_CURRENT_LIST_DIR}/../../../../../bin" "${CMAKE_CURRENT_LIST_DIR}/../../../../../Scripts"
    DOC "the adgen command")
endif()
if(NOT ADGEN_EXECUTABLE)
  set(adgen_FOUND FALSE)
  set(adgen_NOT_FOUND_MESSAGE "the adgen command was not found: activate the environment adgen is installed in, or pass -DADGEN_EXECUTABLE=/path/to/adgen")
  return()
endif()
execute_process(COMMAND "${ADGEN_EXECUTABLE}" --version OUTPUT_VARIABLE _adgen_version OUTPUT_STRIP_TRAILING_WHITESPACE)
string(REPLACE "adgen " "" adgen_VERSION "${_adgen_version}")
if(NOT DEFINED ADGEN_OPENMP_LIBRARY)
  execute_process(COMMAND "${ADGEN_EXECUTABLE}" --openmp-library OUTPUT_VARIABLE _adgen_omp OUTPUT_STRIP_TRAILING_WHITESPACE)
  set(ADGEN_OPENMP_LIBRARY "${_adgen_omp}" CACHE FILEPATH "the OpenMP runtime (libomp) adgen's objects built with -fopenmp call")
endif()

function(adgen_add_derivatives)
  cmake_parse_arguments(PARSE_ARGV 0 ARG "OPENMP" "TARGET;OUTPUT_DIR" "SOURCES;OPTIONS")
  if(NOT ARG_TARGET OR NOT ARG_SOURCES)
    message(FATAL_ERROR "adgen_add_derivatives needs TARGET <target> and SOURCES <files...>")
  endif()
  if(NOT TARGET ${ARG_TARGET})
    message(FATAL_ERROR "adgen_add_derivatives: '${ARG_TARGET}' is not a target")
  endif()
  if(NOT ARG_OUTPUT_DIR)
    set(ARG_OUTPUT_DIR "${CMAKE_CURRENT_BINARY_DIR}/adgen")
  endif()
  file(MAKE_DIRECTORY "${ARG_OUTPUT_DIR}")
  get_target_property(_links ${ARG_TARGET} LINK_LIBRARIES)
  get_target_property(_options ${ARG_TARGET} COMPILE_OPTIONS)
  if("OpenMP::OpenMP_C" IN_LIST _links OR "-fopenmp" IN_LIST _options)
    set(ARG_OPENMP TRUE)
  endif()
  if(ARG_OPENMP)
    if("--" IN_LIST ARG_OPTIONS)
      list(APPEND ARG_OPTIONS -fopenmp)
    else()
      list(APPEND ARG_OPTIONS -- -fopenmp)
    endif()
    if(NOT ADGEN_OPENMP_LIBRARY)
      message(FATAL_ERROR "adgen_add_derivatives(${ARG_TARGET} ... OPENMP): the derivatives call LLVM's OpenMP runtime, libomp, and this machine has none (Debian: apt install libomp-dev), or pass -DADGEN_OPENMP_LIBRARY=/path/to/libomp.so")
    endif()
    if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang" OR NOT "OpenMP::OpenMP_C" IN_LIST _links)
      # first among the target's libraries, before the runtime GCC's -fopenmp adds at the end
      target_link_libraries(${ARG_TARGET} PRIVATE "${ADGEN_OPENMP_LIBRARY}")
    endif()
  endif()
  # C++ sources: compiled against the C++ library of the project's C++ compiler (libstdc++ with
  # g++ or a Linux clang++, libc++ where -stdlib=libc++ says so), as the target's code is.
  if(CMAKE_CXX_COMPILER)
    set(_cxx_flags "${CMAKE_CXX_FLAGS};${_options}")
    if(_cxx_flags MATCHES "-stdlib=(libc\\+\\+|libstdc\\+\\+)")
      list(PREPEND ARG_OPTIONS "--cxx-library=${CMAKE_MATCH_1}")
    endif()
    list(PREPEND ARG_OPTIONS "--cxx=${CMAKE_CXX_COMPILER}")
  endif()
  # The target's include directories and definitions, one argument per line, for `adgen @file`.
  set(_includes "$<TARGET_PROPERTY:${ARG_TARGET},INCLUDE_DIRECTORIES>")
  set(_defines "$<TARGET_PROPERTY:${ARG_TARGET},COMPILE_DEFINITIONS>")
  set(_rsp "${ARG_OUTPUT_DIR}/${ARG_TARGET}.adgen.rsp")
  file(GENERATE OUTPUT "${_rsp}" CONTENT
    "$<$<BOOL:${_includes}>:-I$<JOIN:${_includes},\n-I>\n>$<$<BOOL:${_defines}>:-D$<JOIN:${_defines},\n-D>\n>")
  set(_objects "")
  set(_headers "")
  foreach(_src IN LISTS ARG_SOURCES)
    get_filename_component(_abs "${_src}" ABSOLUTE)
    get_filename_component(_stem "${_src}" NAME_WE)
    set(_out "${ARG_OUTPUT_DIR}/${_stem}.adgen")
    add_custom_command(
      OUTPUT "${_out}.o" "${_out}.h" "${_out}.c" "${_out}.json"
      COMMAND "${ADGEN_EXECUTABLE}" build -q "${_abs}" -o "${ARG_OUTPUT_DIR}" "@${_rsp}" --depfile "${_out}.d"
              ${ARG_OPTIONS}
      DEPENDS "${_abs}" "${ADGEN_EXECUTABLE}" "${_rsp}"
      DEPFILE "${_out}.d"
      COMMENT "adgen: derivatives of ${_src}"
      VERBATIM)
    list(APPEND _objects "${_out}.o")
    list(APPEND _headers "${_out}.h")
  endforeach()
  set_source_files_properties(${_objects} PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
  target_sources(${ARG_TARGET} PRIVATE ${_objects} ${_headers})
  target_include_directories(${ARG_TARGET} PRIVATE "${ARG_OUTPUT_DIR}")
  if(UNIX AND NOT APPLE)
    target_link_libraries(${ARG_TARGET} PRIVATE m)
  endif()
endfunction()
