# record.cmake - the recorder's extra test rules: the compile-time switch TPROF_DISABLE.
#
# tests/unit/test_record_disable.c is built a second time with -DTPROF_DISABLE and run, and the
# compiler's output is checked with nm: the disabled object must not reference tprof_begin_,
# the enabled one (built alike, only without the switch) must.
if(TPROF_TESTS)
  # tests/CMakeLists.txt finds cmocka for its own directory; this file runs at the top level.
  pkg_check_modules(TP_RECORD_CMOCKA REQUIRED IMPORTED_TARGET cmocka)
  foreach(variant on off)
    add_library(test_record_disable_${variant}_obj OBJECT
      ${CMAKE_CURRENT_SOURCE_DIR}/tests/unit/test_record_disable.c)
    target_compile_definitions(test_record_disable_${variant}_obj PRIVATE _GNU_SOURCE)
    target_link_libraries(test_record_disable_${variant}_obj PRIVATE tprof_static PkgConfig::TP_RECORD_CMOCKA)
  endforeach()
  target_compile_definitions(test_record_disable_off_obj PRIVATE TPROF_DISABLE)

  add_executable(test_record_disable_off $<TARGET_OBJECTS:test_record_disable_off_obj>)
  target_link_libraries(test_record_disable_off PRIVATE tprof_static PkgConfig::TP_RECORD_CMOCKA)
  set_target_properties(test_record_disable_off PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  add_test(NAME unit/test_record_disable_off COMMAND test_record_disable_off)
  set_tests_properties(unit/test_record_disable_off PROPERTIES LABELS unit TIMEOUT 60)

  add_test(NAME unit/test_record_disable_symbols
    COMMAND sh -c "if ${CMAKE_NM} -u \"$1\" | grep -qw tprof_begin_; then echo \"$1 references tprof_begin_\"; exit 1; fi; ${CMAKE_NM} -u \"$2\" | grep -qw tprof_begin_ || { echo \"$2 lacks tprof_begin_\"; exit 1; }"
      sh $<TARGET_OBJECTS:test_record_disable_off_obj> $<TARGET_OBJECTS:test_record_disable_on_obj>)
  set_tests_properties(unit/test_record_disable_symbols PROPERTIES LABELS unit TIMEOUT 60)
endif()
