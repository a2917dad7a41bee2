# What the installed lockstep package finds for the redis libraries (cmake/lockstepConfig.cmake.in
# runs it): hiredis and Lua 5.1 have no CMake packages on Debian, so the targets pkg-config made
# at build time are made again under the same names.
find_dependency(PkgConfig)
if(NOT TARGET PkgConfig::HIREDIS)
  pkg_check_modules(HIREDIS QUIET IMPORTED_TARGET hiredis)
  if(NOT HIREDIS_FOUND)
    set(lockstep_FOUND FALSE)
    set(lockstep_NOT_FOUND_MESSAGE
      "lockstep needs hiredis through pkg-config: apt-get install libhiredis-dev pkg-config")
    return()
  endif()
endif()
if(NOT TARGET PkgConfig::LUA51)
  pkg_check_modules(LUA51 QUIET IMPORTED_TARGET lua5.1)
  if(NOT LUA51_FOUND)
    set(lockstep_FOUND FALSE)
    set(lockstep_NOT_FOUND_MESSAGE
      "lockstep needs Lua 5.1 through pkg-config: apt-get install liblua5.1-0-dev pkg-config")
    return()
  endif()
endif()
