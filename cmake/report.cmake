# The HTML report (`tprof report`, report.html in run directories, `tprof serve`'s page): the
# template's files under src/report/html/ and the charting library of Debian's libjs-chart.js
# package are embedded into libtprof as C arrays when the library is built (cmake/embed.cmake
# writes them), so the report is one file that needs no network and nothing beside it.
#
# Chart.js is Debian's: chart.min.js (Debian 12, Chart.js 3.9) or chart.umd.js (later
# packages, Chart.js 4), searched under CMAKE_PREFIX_PATH first (a package unpacked elsewhere, as
# bench/gpu/deps.sh does), then /usr. Without it the configuration stops with one line naming it.
set(tprof_chartjs_dirs)
foreach(prefix ${CMAKE_PREFIX_PATH} /usr)
  list(APPEND tprof_chartjs_dirs ${prefix}/share/javascript/chart.js)
endforeach()
find_file(TPROF_CHARTJS NAMES chart.min.js chart.umd.js chart.umd.min.js
  PATHS ${tprof_chartjs_dirs} NO_DEFAULT_PATH NO_CACHE)
if(NOT TPROF_CHARTJS)
  message(FATAL_ERROR "tprof: the HTML report embeds Chart.js from Debian's libjs-chart.js "
    "package, and /usr/share/javascript/chart.js/chart.min.js is missing: "
    "apt-get install libjs-chart.js (make deps does it)")
endif()
message(STATUS "tprof: the HTML report embeds ${TPROF_CHARTJS}")

set(TPROF_HTML_DIR ${CMAKE_CURRENT_SOURCE_DIR}/src/report/html)
set(TPROF_HTML_ASSETS_C ${CMAKE_BINARY_DIR}/generated/html_assets.c)
add_custom_command(OUTPUT ${TPROF_HTML_ASSETS_C}
  COMMAND ${CMAKE_COMMAND} -DOUT=${TPROF_HTML_ASSETS_C}
    -DPAGE=${TPROF_HTML_DIR}/report.html -DSTYLE=${TPROF_HTML_DIR}/report.css
    "-DAPP=${TPROF_HTML_DIR}/stacks.js|${TPROF_HTML_DIR}/modules.js|${TPROF_HTML_DIR}/trace.js|${TPROF_HTML_DIR}/report.js"
    -DCHARTJS=${TPROF_CHARTJS}
    -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/embed.cmake
  DEPENDS ${TPROF_HTML_DIR}/report.html ${TPROF_HTML_DIR}/report.css ${TPROF_HTML_DIR}/report.js
    ${TPROF_HTML_DIR}/stacks.js ${TPROF_HTML_DIR}/modules.js ${TPROF_HTML_DIR}/trace.js
    ${TPROF_CHARTJS} ${CMAKE_CURRENT_SOURCE_DIR}/cmake/embed.cmake
  COMMENT "Embedding the HTML report's template and Chart.js"
  VERBATIM)
# One target runs the command; the libraries that compile its output wait for it. Listed as a
# source of two targets alone (the fuzz build has both), make would run it twice at once, and
# one run's rename would fail.
add_custom_target(tprof_html_assets DEPENDS ${TPROF_HTML_ASSETS_C})
target_sources(tprof_obj PRIVATE ${TPROF_HTML_ASSETS_C})
add_dependencies(tprof_obj tprof_html_assets)
# The fuzz targets' instrumented copy of the library (cmake/fuzz.cmake) needs the same assets.
if(TARGET tprof_fuzz_obj)
  target_sources(tprof_fuzz_obj PRIVATE ${TPROF_HTML_ASSETS_C})
  add_dependencies(tprof_fuzz_obj tprof_html_assets)
endif()
