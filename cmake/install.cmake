# install.cmake - `make install PREFIX=...` (cmake --install): the public header, libtprof.a and
# libtprof.so, the tprof command, a pkg-config file (tprof.pc) and a CMake package
# (find_package(tprof): targets tprof::tprof, the shared library, and tprof::tprof_static).
# The wheel installs something else (cmake/python.cmake), so none of this applies there.
if(TPROF_PYTHON_PACKAGE)
  return()
endif()
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(FILES ${CMAKE_SOURCE_DIR}/include/tprof.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS tprof_static tprof_shared
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
if(TARGET tprof_cli)
  install(TARGETS tprof_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

# pkg-config: the shared library by default; Libs.private lists what the static one needs. The
# prefix is found from the file's own place, so `cmake --install --prefix P` and DESTDIR work.
file(RELATIVE_PATH TPROF_PC_TO_PREFIX ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" TPROF_PC_TO_PREFIX "${TPROF_PC_TO_PREFIX}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/tprof.pc.in ${TPROF_OUT}/tprof.pc @ONLY)
install(FILES ${TPROF_OUT}/tprof.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The CMake package. Its targets are written by hand (cmake/tprofConfig.cmake.in) rather than
# exported: the build's targets carry source-tree include paths that an export would refuse.
set(TPROF_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tprof)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/tprofConfig.cmake.in
  ${TPROF_OUT}/tprofConfig.cmake INSTALL_DESTINATION ${TPROF_CMAKE_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_LIBDIR)
write_basic_package_version_file(${TPROF_OUT}/tprofConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${TPROF_OUT}/tprofConfig.cmake ${TPROF_OUT}/tprofConfigVersion.cmake
  DESTINATION ${TPROF_CMAKE_DIR})
