# cli.cmake - the tprof command's own dependency: jansson (Debian libjansson-dev) reads the small
# JSON artifacts of a run directory for `tprof check`. The library does not link it.
if(TARGET tprof_cli)
  pkg_check_modules(JANSSON REQUIRED IMPORTED_TARGET jansson)
  target_link_libraries(tprof_cli PRIVATE PkgConfig::JANSSON)
endif()
