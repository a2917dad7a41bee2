# The installable package: `cmake --install build --prefix P` puts the headers under
# P/include/lockstep (repository-rooted: #include "services/registry.h"), the static
# libraries under P/lib, and a CMake package, so an outside project does
#   find_package(lockstep CONFIG REQUIRED)
#   target_link_libraries(app PRIVATE lockstep::lockstep)
# Every library is exported as lockstep::NAME (lockstep_core -> lockstep::core); lockstep::lockstep
# is what a binary with its own adapters and the whole command line needs (examples/own-adapter).
include(CMakePackageConfigHelpers)

# What a user's own lockstep binary links: the command line (cli/cli.h), the registry and the
# backends to plug an adapter into (services/), the production and known-bad adapters.
add_library(lockstep_all INTERFACE)
target_link_libraries(lockstep_all INTERFACE
  lockstep_cli lockstep_explore lockstep_services lockstep_known_bad)
set_target_properties(lockstep_all PROPERTIES EXPORT_NAME lockstep)
add_library(lockstep::lockstep ALIAS lockstep_all)

# Every library, in stage order. lockstep_warnings is exported only because static libraries
# carry their private links; it adds no compile options to a user's code (link-only).
set(lockstep_exported_libraries
  lockstep_warnings
  lockstep_base
  lockstep_core
  lockstep_sim
  lockstep_real
  lockstep_history lockstep_checkers lockstep_harness
  lockstep_memory lockstep_memory_backend lockstep_memory_known_bad
  lockstep_redis_client lockstep_redis lockstep_sim_redis lockstep_real_redis lockstep_redis_backend
  lockstep_redis_known_bad
  lockstep_redlock_client lockstep_redlock lockstep_sim_redlock lockstep_redlock_backend
  lockstep_redlock_known_bad
  lockstep_mongo_client lockstep_mongo lockstep_sim_mongo lockstep_real_mongo lockstep_mongo_backend
  lockstep_mongo_known_bad
  lockstep_keyed lockstep_keyed_backend lockstep_keyed_known_bad
  lockstep_ext lockstep_ext_dir_installed lockstep_ext_backend
  lockstep_services lockstep_known_bad
  lockstep_catalogue lockstep_run lockstep_report lockstep_explore
  lockstep_cli)
foreach(library IN LISTS lockstep_exported_libraries)
  string(REGEX REPLACE "^lockstep_" "" export_name "${library}")
  set_target_properties(${library} PROPERTIES EXPORT_NAME ${export_name})
  add_library(lockstep::${export_name} ALIAS ${library})
endforeach()

install(TARGETS ${lockstep_exported_libraries} lockstep_all
  EXPORT lockstepTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/lockstep)
install(EXPORT lockstepTargets
  NAMESPACE lockstep::
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/lockstep)

# Headers, keeping their repository paths. services/ext/node is the Node drivers (and their node_modules),
# not C++.
foreach(folder base adapters sim real history checkers harness services scenarios run report explore cli)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${folder}
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/lockstep
    FILES_MATCHING PATTERN "*.h"
    PATTERN "node" EXCLUDE)
endforeach()

# The Node drivers of the ext: adapters, without node_modules: an installed lockstep finds them
# only through LOCKSTEP_EXT_NODE_DIR (services/ext/driver/node_drivers.h), after `npm ci` in that directory.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/services/ext/node/
  DESTINATION ${CMAKE_INSTALL_DATADIR}/lockstep/ext/node
  PATTERN "node_modules" EXCLUDE)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/lockstepConfig.cmake.in
  ${PROJECT_BINARY_DIR}/lockstepConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/lockstep)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/lockstepConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/lockstepConfig.cmake
  ${PROJECT_BINARY_DIR}/lockstepConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/lockstep)
