# The installable package: `cmake --install build --prefix P` puts the public headers under
# P/include/lockstep (#include "lockstep/registry.h"; lockstep/lockstep.h lists them), the static
# libraries under P/lib, the `lockstep` command under P/bin, the Node drivers and the Python
# driver kit under P/share/lockstep, and a CMake package, so an outside project does
#   find_package(lockstep CONFIG REQUIRED)
#   target_link_libraries(app PRIVATE lockstep::lockstep)
# `cmake --install --strip` (and the Debian package, cmake/package.cmake) also strips the debug
# info from the static libraries: a user's binary linked with them is then ~6 MB, not ~150 MB.
# Every library is exported as lockstep::NAME (lockstep_core -> lockstep::core); lockstep::lockstep
# is what a binary with its own adapters and the whole command line needs (examples/own-adapter).
include(CMakePackageConfigHelpers)

# What a user's own lockstep binary links: the command line (include/lockstep/cli.h), the registry and the
# backends to plug an adapter into (services/), the production and known-bad adapters.
add_library(lockstep_all INTERFACE)
target_link_libraries(lockstep_all INTERFACE
  lockstep_cli lockstep_explore lockstep_services lockstep_known_bad)
set_target_properties(lockstep_all PROPERTIES EXPORT_NAME lockstep)
add_library(lockstep::lockstep ALIAS lockstep_all)

# Every library outside services/, in stage order (each service exports its own from its folder,
# lockstep_export_libraries in cmake/helpers.cmake). lockstep_warnings is exported only because
# static libraries carry their private links; it adds no compile options to a user's code
# (link-only).
lockstep_export_libraries(
  lockstep_warnings
  lockstep_base
  lockstep_core
  lockstep_sim
  lockstep_real
  lockstep_history lockstep_checkers lockstep_harness
  lockstep_services lockstep_known_bad
  lockstep_catalogue lockstep_run lockstep_report lockstep_explore
  lockstep_cli)
# lockstep_all is an interface: nothing to build, so not among what the package builds.
install(TARGETS lockstep_all EXPORT lockstepTargets)
install(EXPORT lockstepTargets
  NAMESPACE lockstep::
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/lockstep)

# Headers: the public API alone (include/lockstep, lockstep/lockstep.h lists it). Everything a
# user's code includes is there; lockstep's own headers stay private to its libraries.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/lockstep
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h")

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/lockstepConfig.cmake.in
  ${PROJECT_BINARY_DIR}/lockstepConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/lockstep)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/lockstepConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/lockstepConfig.cmake
  ${PROJECT_BINARY_DIR}/lockstepConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/lockstep)

# The command: the build tree's `lockstep` without its default of this source tree's Node drivers
# (cli/CMakeLists.txt, lockstep_installed; not made in a sanitizer build).
if(TARGET lockstep_installed)
  install(TARGETS lockstep_installed RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  set_property(GLOBAL APPEND PROPERTY LOCKSTEP_PACKAGE_TARGETS lockstep_installed)
endif()

# The Python driver kit (examples/python-driver): the module where Debian's python3 imports it
# from, the reference driver and its README beside the Node drivers. The path is Debian's
# dist-packages under the prefix (not LIBDIR: python3 looks in lib/python3, never a multiarch dir).
install(FILES ${PROJECT_SOURCE_DIR}/examples/python-driver/lockstep_driver.py
  DESTINATION lib/python3/dist-packages)
install(PROGRAMS ${PROJECT_SOURCE_DIR}/examples/python-driver/driver.py
  DESTINATION ${CMAKE_INSTALL_DATADIR}/lockstep/python-driver)
install(FILES ${PROJECT_SOURCE_DIR}/examples/python-driver/README.md
  DESTINATION ${CMAKE_INSTALL_DATADIR}/lockstep/python-driver)

# CMake strips executables and shared libraries when asked (--strip, CPACK_STRIP_FILES), never a
# static library. Their debug info is 95% of them (RelWithDebInfo: 427 MB of libraries, 21 MB
# without) and of every binary a user links with them, so a stripping install drops it here,
# after every library is installed (install rules run in the order they are declared, and
# services/ installs its own before this file is included). Symbols stay: they are what links.
set(strip_archives [[
  if(CMAKE_INSTALL_DO_STRIP)
    file(GLOB archives "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/@lockstep_strip_libdir@/liblockstep_*.a")
    if(NOT archives)
      message(FATAL_ERROR "no liblockstep_*.a under $ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/@lockstep_strip_libdir@ to strip")
    endif()
    foreach(archive IN LISTS archives)
      execute_process(COMMAND "@lockstep_strip@" --strip-debug "${archive}" RESULT_VARIABLE stripped)
      if(NOT stripped EQUAL 0)
        message(FATAL_ERROR "@lockstep_strip@ --strip-debug ${archive} failed: ${stripped}")
      endif()
    endforeach()
  endif()
]])
set(lockstep_strip_libdir ${CMAKE_INSTALL_LIBDIR})
set(lockstep_strip ${CMAKE_STRIP})
string(CONFIGURE "${strip_archives}" strip_archives @ONLY)
install(CODE "${strip_archives}")

include(${PROJECT_SOURCE_DIR}/cmake/package.cmake)
