# python.cmake - the Python package in the build tree: build/python/tprof/ holds the extension
# tprof._tprof (the library's objects plus python/ext/*.c) and a copy of python/tprof/**.py, so
# that tests run it with PYTHONPATH=build/python and no installation. pip installs the same
# package from python/setup.py.
#
# The interpreter is the system's /usr/bin/python3 (the one Debian's python3-torch belongs to),
# found before any other python3 on the PATH. Without its headers (python3-dev) the package is
# not built and says so.
find_program(TPROF_PY_INTERPRETER NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(TPROF_PY_INTERPRETER)
  set(Python3_EXECUTABLE ${TPROF_PY_INTERPRETER})
endif()
find_package(Python3 COMPONENTS Interpreter Development.Module)
if(NOT Python3_Development.Module_FOUND)
  message(STATUS "tprof: no Python development headers (python3-dev); the Python package is not built")
  return()
endif()

set(TPROF_PY_OUT ${TPROF_OUT}/python/tprof)
file(GLOB TPROF_PY_EXT_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/python/ext/*.c)
Python3_add_library(tprof_python MODULE WITH_SOABI ${TPROF_PY_EXT_SOURCES}
  $<TARGET_OBJECTS:tprof_obj>)
target_compile_definitions(tprof_python PRIVATE _GNU_SOURCE)
target_include_directories(tprof_python PRIVATE ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(tprof_python PRIVATE ZLIB::ZLIB PkgConfig::YAML Threads::Threads
  ${CMAKE_DL_LIBS} m)
set_target_properties(tprof_python PROPERTIES OUTPUT_NAME _tprof
  LIBRARY_OUTPUT_DIRECTORY ${TPROF_PY_OUT})

# The package's Python files, copied at build time so an edit reaches the tests with a rebuild.
file(GLOB_RECURSE TPROF_PY_FILES CONFIGURE_DEPENDS RELATIVE ${CMAKE_SOURCE_DIR}/python/tprof
  ${CMAKE_SOURCE_DIR}/python/tprof/*.py)
set(TPROF_PY_COPIES)
foreach(rel ${TPROF_PY_FILES})
  add_custom_command(OUTPUT ${TPROF_PY_OUT}/${rel}
    COMMAND ${CMAKE_COMMAND} -E copy_if_different ${CMAKE_SOURCE_DIR}/python/tprof/${rel}
      ${TPROF_PY_OUT}/${rel}
    DEPENDS ${CMAKE_SOURCE_DIR}/python/tprof/${rel})
  list(APPEND TPROF_PY_COPIES ${TPROF_PY_OUT}/${rel})
endforeach()
add_custom_target(tprof_python_files ALL DEPENDS ${TPROF_PY_COPIES})
add_dependencies(tprof_python tprof_python_files)
