# The Debian package: `cpack -G DEB` in a configured, built build dir (scripts/lib/make_deb.sh)
# makes lockstep_VERSION_amd64.deb of what a stripping `cmake --install` installs
# (cmake/install.cmake), under /usr. It is made from the build the test suite already made: cpack
# only installs, it compiles nothing.
#
# Depends: the runtime libraries the `lockstep` command loads, as dpkg-shlibdeps finds them
# (libboost-context1.74.0, libfmt9, libtcmalloc-minimal4, each service's client libraries, ...),
# and what find_package(lockstep) and a link against the static libraries need
# (lockstepConfig.cmake.in): their -dev packages and pkg-config. The servers of the real world are
# Recommends or Suggests: lockstep says what is missing when a run needs one.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME lockstep)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "lockstep maintainers <lockstep@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "testing and simulation harness for distributed lock algorithms")
set(CPACK_PACKAGE_DESCRIPTION
  "lockstep runs real lock clients unchanged in a deterministic simulator and against real servers, judges every run with invariant checkers, and shrinks failures to a replayable seed. This package holds the lockstep command, its headers and static libraries with a CMake package (find_package(lockstep)) for a lock's own binary, the Node drivers of the ext adapters and the Python driver kit.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)  # the command, and the static libraries' debug info (install.cmake)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # lockstep_VERSION_ARCH.deb
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Each lock service adds its own (lockstep_package_relations in its folder, cmake/helpers.cmake).
get_property(service_depends GLOBAL PROPERTY LOCKSTEP_DEB_DEPENDS)
get_property(service_recommends GLOBAL PROPERTY LOCKSTEP_DEB_RECOMMENDS)
get_property(service_suggests GLOBAL PROPERTY LOCKSTEP_DEB_SUGGESTS)
set(deb_depends pkg-config libboost-context-dev libfmt-dev nlohmann-json3-dev libcli11-dev
  ${service_depends})
set(deb_recommends cmake g++ python3 ${service_recommends})
list(JOIN deb_depends ", " CPACK_DEBIAN_PACKAGE_DEPENDS)
list(JOIN deb_recommends ", " CPACK_DEBIAN_PACKAGE_RECOMMENDS)
list(JOIN service_suggests ", " CPACK_DEBIAN_PACKAGE_SUGGESTS)
include(CPack)
