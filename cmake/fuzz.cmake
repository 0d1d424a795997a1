# libFuzzer targets: each tests/fuzz/fuzz_*.c becomes build/fuzz/fuzz_<name> when -DTPROF_FUZZ=ON
# with clang (fuzz_csv, fuzz_rundir and fuzz_summaries, the tprof command's readers, with its sources too;
# fuzz_servepath with the server's request-path parser, src/serve/path.c). The library is
# compiled again for them with the fuzzer's coverage instrumentation
# and the sanitizers; the targets link the fuzzer's main. Run them with scripts/fuzz.
if(TPROF_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "TPROF_FUZZ needs clang (CC=clang cmake ...)")
  endif()
  set(TPROF_FUZZ_FLAGS -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
    -fno-sanitize-recover=undefined)
  add_library(tprof_fuzz_obj OBJECT ${TPROF_CORE_SOURCES})
  target_include_directories(tprof_fuzz_obj PUBLIC include src)
  target_compile_definitions(tprof_fuzz_obj PRIVATE _GNU_SOURCE TPROF_BUILDING)
  target_compile_options(tprof_fuzz_obj PRIVATE ${TPROF_FUZZ_FLAGS})
  target_link_libraries(tprof_fuzz_obj PUBLIC ZLIB::ZLIB PkgConfig::YAML Threads::Threads
    ${CMAKE_DL_LIBS} m)
  # The targets of the tprof command's readers (the CSV reader, the run-directory reader) also
  # take the command's sources, but its main, instrumented the same way, and jansson.
  set(TPROF_FUZZ_CLI_TARGETS fuzz_csv fuzz_rundir fuzz_summaries)
  set(TPROF_FUZZ_CLI_SOURCES ${TPROF_CLI_SOURCES})
  list(FILTER TPROF_FUZZ_CLI_SOURCES EXCLUDE REGEX "/src/cli/main\\.c$")
  if(NOT TARGET PkgConfig::JANSSON)
    pkg_check_modules(JANSSON REQUIRED IMPORTED_TARGET jansson)
  endif()
  add_library(tprof_fuzz_cli OBJECT ${TPROF_FUZZ_CLI_SOURCES})
  target_compile_definitions(tprof_fuzz_cli PRIVATE _GNU_SOURCE)
  target_compile_options(tprof_fuzz_cli PRIVATE ${TPROF_FUZZ_FLAGS})
  target_link_libraries(tprof_fuzz_cli PUBLIC tprof_fuzz_obj PkgConfig::JANSSON)
  file(GLOB TPROF_FUZZ_TARGETS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_*.c)
  foreach(src ${TPROF_FUZZ_TARGETS})
    get_filename_component(name ${src} NAME_WE)
    add_executable(${name} ${src} $<TARGET_OBJECTS:tprof_fuzz_obj>)
    if(name STREQUAL "fuzz_servepath") # the server's path parser: one file, no libmicrohttpd
      target_sources(${name} PRIVATE ${CMAKE_SOURCE_DIR}/src/serve/path.c)
    endif()
    if(name IN_LIST TPROF_FUZZ_CLI_TARGETS)
      target_sources(${name} PRIVATE $<TARGET_OBJECTS:tprof_fuzz_cli>)
      target_link_libraries(${name} PRIVATE PkgConfig::JANSSON)
    endif()
    target_compile_definitions(${name} PRIVATE _GNU_SOURCE)
    target_compile_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined
      -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
    target_link_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_libraries(${name} PRIVATE tprof_fuzz_obj)
    set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${TPROF_OUT}/fuzz)
  endforeach()
endif()
