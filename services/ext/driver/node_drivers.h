#pragma once
// Where lockstep's Node drivers (services/ext/node) are, and whether this machine can run them.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lockstep::ext {

// $LOCKSTEP_EXT_NODE_DIR if set, else default_node_driver_dir().
std::string node_driver_dir();
// Where the drivers are when LOCKSTEP_EXT_NODE_DIR is not set. Two libraries define it, and a
// binary links one: in the build tree lockstep_ext_dir_source_tree (the source tree's services/ext/node,
// fixed at build time); in an installed package lockstep::ext_dir_installed, which answers "" (no
// default): an installed lockstep must not quietly read the source tree it was built from.
std::string default_node_driver_dir();
// The absolute path of node on PATH. Throws real::ServerUnavailable, saying how to get it, when
// node is missing or older than 20, or services/ext/node/node_modules lacks a pinned package.
std::string require_node_drivers();
// argv[1..] for `node driver.js --lib LIB [--redis HOST:PORT,...] [--command-timeout-ms MS]`
// (0: the Redis client's default, no command timeout); a PostgreSQL library's server goes in
// endpoints_flag "--postgres".
std::vector<std::string> node_driver_args(const std::string& lib, const std::vector<int>& ports,
                                          int64_t command_timeout_ms = 0,
                                          std::string_view endpoints_flag = "--redis");

}  // namespace lockstep::ext
