# What the installed lockstep package finds for the mongo libraries (cmake/lockstepConfig.cmake.in
# runs it): libmongoc 1.23's CMake package.
find_dependency(mongoc-1.0 1.23 CONFIG)
