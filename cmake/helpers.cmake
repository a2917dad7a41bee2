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

# lockstep_export_libraries(LIB...): installs a folder's libraries with the others
# (cmake/install.cmake's export set, lockstepTargets), each as lockstep::NAME (lockstep_etcd_backend
# -> lockstep::etcd_backend), and adds them to what the package builds. A service exports its own
# from its folder, so adding one touches no list outside it.
function(lockstep_export_libraries)
  include(GNUInstallDirs)
  foreach(library IN LISTS ARGN)
    string(REGEX REPLACE "^lockstep_" "" export_name "${library}")
    set_target_properties(${library} PROPERTIES EXPORT_NAME ${export_name})
    add_library(lockstep::${export_name} ALIAS ${library})
  endforeach()
  set_property(GLOBAL APPEND PROPERTY LOCKSTEP_PACKAGE_TARGETS ${ARGN})
  install(TARGETS ${ARGN}
    EXPORT lockstepTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endfunction()

# lockstep_package_relations([CONFIG_DEPENDENCIES FILE] [DEPENDS PKG...] [RECOMMENDS PKG...]
#                            [SUGGESTS PKG...]): what a folder adds to the installed package. FILE
# is CMake the package's lockstepConfig.cmake runs before importing the libraries, to find a
# dependency they link (find_dependency, pkg-config targets; it sets lockstep_FOUND to FALSE with
# lockstep_NOT_FOUND_MESSAGE when one is missing). The Debian relations are package names
# (cmake/package.cmake): DEPENDS what a build against the static libraries needs, RECOMMENDS and
# SUGGESTS the servers and tools of the real world.
function(lockstep_package_relations)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "CONFIG_DEPENDENCIES" "DEPENDS;RECOMMENDS;SUGGESTS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "lockstep_package_relations: unknown arguments ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(arg_CONFIG_DEPENDENCIES)
    get_filename_component(folder "${CMAKE_CURRENT_SOURCE_DIR}" NAME)
    install(FILES ${arg_CONFIG_DEPENDENCIES}
      DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/lockstep/dependencies
      RENAME ${folder}.cmake)
  endif()
  foreach(relation DEPENDS RECOMMENDS SUGGESTS)
    if(arg_${relation})
      set_property(GLOBAL APPEND PROPERTY LOCKSTEP_DEB_${relation} ${arg_${relation}})
    endif()
  endforeach()
endfunction()
