# python.cmake - the Python package `tprof`: the extension tprof._tprof (the library's objects plus
# python/ext/*.c) and the package's Python files (python/tprof/**.py).
#
# In a normal build, build/python/tprof/ holds the extension and a copy of the Python files, so
# that tests run it with PYTHONPATH=build/python and no installation. With TPROF_PYTHON_PACKAGE
# (set by pyproject.toml, when pip builds a wheel through scikit-build-core) the extension goes
# into the wheel's tprof/ and the tprof command into the wheel's scripts (the venv's bin/); the
# wheel takes the Python files from python/tprof itself (the .pyi stub and py.typed included).
#
# The interpreter: pip's (scikit-build-core passes Python3_EXECUTABLE), else -DTPROF_PY_INTERPRETER,
# else the project's (.venv/bin/python, else python3 from the PATH: CMakeLists.txt). Without its
# headers the package is not built and says so.
if(NOT SKBUILD)
  if(TPROF_PY_INTERPRETER)
    set(Python3_EXECUTABLE ${TPROF_PY_INTERPRETER})
  elseif(TPROF_DEFAULT_PYTHON)
    set(Python3_EXECUTABLE ${TPROF_DEFAULT_PYTHON})
  endif()
endif()
find_package(Python3 COMPONENTS Interpreter Development.Module)
if(NOT Python3_Development.Module_FOUND)
  if(TPROF_PYTHON_PACKAGE)
    message(FATAL_ERROR "tprof: no Python development headers for ${Python3_EXECUTABLE}")
  endif()
  message(STATUS "tprof: no Python development headers (python3-dev); the Python package is not built")
  return()
endif()
message(STATUS "tprof: the Python package builds for ${Python3_EXECUTABLE}")

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

if(TPROF_PYTHON_PACKAGE)
  # The wheel links libyaml and jansson from their archives (Debian builds them position-
  # independent), so that it needs only libc and zlib at run time, present on every Debian.
  foreach(dep YAML JANSSON)
    string(TOLOWER ${dep} name)
    find_library(TPROF_${dep}_ARCHIVE NAMES lib${name}.a HINTS ${${dep}_LIBRARY_DIRS})
    if(TPROF_${dep}_ARCHIVE AND TARGET PkgConfig::${dep})
      set_property(TARGET PkgConfig::${dep} PROPERTY INTERFACE_LINK_LIBRARIES
        ${TPROF_${dep}_ARCHIVE})
    endif()
  endforeach()
  # The wheel: the extension beside the package's Python files, the command in the scripts
  # directory (pip puts it on the venv's PATH as it is: the same C program, not a wrapper).
  install(TARGETS tprof_python LIBRARY DESTINATION tprof)
  install(TARGETS tprof_cli RUNTIME DESTINATION ${SKBUILD_SCRIPTS_DIR})
  return()
endif()

# The package's Python files, copied at build time so an edit reaches the tests with a rebuild:
# the modules, the extension's stub (_tprof.pyi) and the PEP 561 marker py.typed, so that a type
# checker pointed at build/python sees what an installed wheel gives it.
file(GLOB_RECURSE TPROF_PY_FILES CONFIGURE_DEPENDS RELATIVE ${CMAKE_SOURCE_DIR}/python/tprof
  ${CMAKE_SOURCE_DIR}/python/tprof/*.py ${CMAKE_SOURCE_DIR}/python/tprof/*.pyi
  ${CMAKE_SOURCE_DIR}/python/tprof/py.typed)
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
