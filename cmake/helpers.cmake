# Helpers every folder uses to declare its tests and benchmarks beside its code.

# What a test's own sources compile with. -O1: a test's code is set-up and assertions around the
# libraries it calls (built with the project's flags), and compiles in ~30% less time than at -O2;
# Catch2's large test functions are where GCC spends it. Under ASan + UBSan, -O0: their
# instrumentation of those functions at -O1 doubles a test file's compile time (24 s against 13
# for the sweep tests' batch), while the libraries the tests call keep -O1.
add_library(lockstep_test_code INTERFACE)
if(LOCKSTEP_SANITIZE)
  target_compile_options(lockstep_test_code INTERFACE $<$<CONFIG:RelWithDebInfo,Release>:-O0>)
else()
  target_compile_options(lockstep_test_code INTERFACE $<$<CONFIG:RelWithDebInfo,Release>:-O1>)
endif()

# A Catch2 test executable, its test cases discovered by ctest. Optional: PROPERTIES followed by
# test properties for every discovered test case; NOT_SANITIZED for an executable whose tests
# scripts/test.sh runs in the plain tree only (see lockstep_not_sanitized below).
function(lockstep_test_executable name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "NOT_SANITIZED" "" "PROPERTIES")
  add_executable(${name} ${arg_UNPARSED_ARGUMENTS})
  target_link_libraries(${name} PRIVATE Catch2::Catch2WithMain lockstep_allocator lockstep_warnings
    lockstep_test_code)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})  # tests/*_support.h
  set(properties ${arg_PROPERTIES})
  if(arg_NOT_SANITIZED)
    list(APPEND properties LABELS not_sanitized)
    set_property(GLOBAL APPEND PROPERTY LOCKSTEP_NOT_SANITIZED_TARGETS ${name})
    if(LOCKSTEP_SANITIZE OR LOCKSTEP_SANITIZE_THREAD)
      # Never run in a sanitizer tree (scripts/test.sh), so not built there either.
      set_target_properties(${name} PROPERTIES EXCLUDE_FROM_ALL TRUE)
      return()
    endif()
  endif()
  if(properties)
    catch_discover_tests(${name} EXTRA_ARGS -w NoTests PROPERTIES ${properties})
  else()
    catch_discover_tests(${name} EXTRA_ARGS -w NoTests)
  endif()
endfunction()

# Tests labelled not_sanitized are run by scripts/test.sh in the plain tree only: their time goes
# to other processes (a real etcd or PostgreSQL answering a differential table, the Node drivers'
# handle table) or to repeating, for a statistic, paths the sanitized tests cover (calibrate's
# 1,000 seeds of every known-bad, every cell of the matrix). Every other test runs once, in the
# sanitizer tree. An add_test() joins them with this; a Catch2 executable with NOT_SANITIZED.
function(lockstep_not_sanitized test)
  set_property(TEST ${test} APPEND PROPERTY LABELS not_sanitized)
endfunction()

# A folder's Google Benchmark cases (names are part of the contract, docs/DESIGN.md), compiled as
# an object library that bench/ links into lockstep_bench: the cases register themselves. LIBRARIES
# are what they benchmark. Nothing when the benchmarks are not built.
function(lockstep_bench_sources name)
  if(NOT LOCKSTEP_BUILD_BENCH)
    return()
  endif()
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "LIBRARIES")
  add_library(${name} OBJECT ${arg_UNPARSED_ARGUMENTS})
  target_link_libraries(${name} PUBLIC ${arg_LIBRARIES} benchmark::benchmark PRIVATE lockstep_warnings)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})  # bench/*.h
  set_property(GLOBAL APPEND PROPERTY LOCKSTEP_BENCH_OBJECTS ${name})
endfunction()
