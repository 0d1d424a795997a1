# serve.cmake - `tprof serve`, the live dashboard: src/serve/ built into the tprof command with
# libmicrohttpd (Debian libmicrohttpd-dev). Without it the command is built without the server
# (the verb then says so); the library never links it. -DTPROF_SERVE=OFF leaves it out on purpose.
# The wheel's command (TPROF_PYTHON_PACKAGE) links libmicrohttpd as a shared library too: `pip wheel`
# gives a wheel that needs it installed, and `auditwheel repair` grafts it and what it needs
# (GnuTLS...) into the wheel, which then runs on any manylinux system (docs/PYTHON.md).
option(TPROF_SERVE "Build tprof serve (needs libmicrohttpd)" ON)
if(TARGET tprof_cli AND NOT TPROF_SERVE)
  message(STATUS "tprof: the tprof command is built without `tprof serve` (TPROF_SERVE=OFF)")
elseif(TARGET tprof_cli)
  pkg_check_modules(MHD IMPORTED_TARGET libmicrohttpd>=0.9.73)
  if(MHD_FOUND)
    file(GLOB TPROF_SERVE_SOURCES CONFIGURE_DEPENDS src/serve/*.c)
    add_library(tprof_serve STATIC ${TPROF_SERVE_SOURCES})
    target_compile_definitions(tprof_serve PRIVATE _GNU_SOURCE)
    target_link_libraries(tprof_serve PUBLIC tprof_static PkgConfig::MHD)
    target_link_libraries(tprof_cli PRIVATE tprof_serve)
    target_compile_definitions(tprof_cli PRIVATE TPROF_HAVE_SERVE)
    message(STATUS "tprof: `tprof serve` built with libmicrohttpd ${MHD_VERSION}")
  else()
    message(WARNING "tprof: libmicrohttpd (>= 0.9.73) not found: the tprof command is built "
      "WITHOUT `tprof serve` (Debian: apt-get install libmicrohttpd-dev, or scripts/install-deps)")
  endif()
endif()
