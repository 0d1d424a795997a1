# observer.cmake - tprof._observer, torch's C++ op observer (python/observer/observer.cpp): the
# project's only C++, built against the headers and libraries of the torch that the Python
# package's interpreter imports (the .venv's in a normal build, pip's environment in a wheel).
#
# Built when that interpreter imports torch, a C++ compiler exists, and the build is neither a
# sanitizer nor a fuzz build (an instrumented module cannot load into an uninstrumented
# Python). Otherwise the package works without it: tprof.torch says so once and records ops
# through its dispatch mode (docs/PYTHON.md). TPROF_OBSERVER=OFF leaves it out on purpose.
option(TPROF_OBSERVER "Build tprof._observer when the Python package's interpreter has torch" ON)
if(NOT TARGET tprof_python OR NOT TPROF_OBSERVER OR TPROF_SANITIZE OR TPROF_FUZZ)
  return()
endif()

# torch's include folders, library folder, version and C++ ABI, from torch itself.
execute_process(
  COMMAND ${Python3_EXECUTABLE} -c "import torch, torch.utils.cpp_extension as c, os
print(';'.join(c.include_paths()))
print(os.path.join(os.path.dirname(torch.__file__), 'lib'))
print(torch.__version__)
print(int(torch._C._GLIBCXX_USE_CXX11_ABI))"
  OUTPUT_VARIABLE torch_info RESULT_VARIABLE torch_rc ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT torch_rc EQUAL 0)
  message(STATUS "tprof: ${Python3_EXECUTABLE} has no torch; tprof._observer is not built")
  return()
endif()
include(CheckLanguage)
check_language(CXX)
if(NOT CMAKE_CXX_COMPILER)
  message(STATUS "tprof: no C++ compiler; tprof._observer is not built")
  return()
endif()
enable_language(CXX)
string(REPLACE "\n" ";" torch_info "${torch_info}")
list(GET torch_info -1 TORCH_CXX11_ABI)
list(GET torch_info -2 TORCH_VERSION)
list(GET torch_info -3 TORCH_LIB_DIR)
list(REMOVE_AT torch_info -1 -2 -3)
set(TORCH_INCLUDE_DIRS ${torch_info})
find_library(TORCH_CPU_LIB torch_cpu PATHS ${TORCH_LIB_DIR} NO_DEFAULT_PATH)
find_library(TORCH_C10_LIB c10 PATHS ${TORCH_LIB_DIR} NO_DEFAULT_PATH)
if(NOT TORCH_CPU_LIB OR NOT TORCH_C10_LIB)
  message(STATUS "tprof: torch ${TORCH_VERSION} has no libtorch_cpu/libc10; tprof._observer is not built")
  return()
endif()
message(STATUS "tprof: tprof._observer builds against torch ${TORCH_VERSION}")

Python3_add_library(tprof_observer MODULE WITH_SOABI ${CMAKE_SOURCE_DIR}/python/observer/observer.cpp)
set_target_properties(tprof_observer PROPERTIES OUTPUT_NAME _observer CXX_STANDARD 20
  CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF CXX_VISIBILITY_PRESET hidden
  LIBRARY_OUTPUT_DIRECTORY ${TPROF_PY_OUT}
  # torch/lib beside tprof in site-packages (a wheel), else the folder it was built against
  BUILD_RPATH "${TORCH_LIB_DIR}" INSTALL_RPATH "$ORIGIN/../torch/lib;${TORCH_LIB_DIR}")
target_include_directories(tprof_observer PRIVATE ${CMAKE_SOURCE_DIR}/python/ext ${CMAKE_SOURCE_DIR}/src)
target_include_directories(tprof_observer SYSTEM PRIVATE ${TORCH_INCLUDE_DIRS})
target_compile_definitions(tprof_observer PRIVATE
  _GLIBCXX_USE_CXX11_ABI=${TORCH_CXX11_ABI} TPROF_TORCH_VERSION="${TORCH_VERSION}")
target_link_libraries(tprof_observer PRIVATE ${TORCH_CPU_LIB} ${TORCH_C10_LIB})
add_dependencies(tprof_observer tprof_python)
if(TPROF_PYTHON_PACKAGE)
  install(TARGETS tprof_observer LIBRARY DESTINATION tprof)
endif()
