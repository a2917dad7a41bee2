// An installed package's default for the Node drivers: none, so LOCKSTEP_EXT_NODE_DIR must say
// where they are (services/ext/driver/node_drivers.h): the source tree may be gone or another version.
#include "services/ext/driver/node_drivers.h"

namespace lockstep::ext {

std::string default_node_driver_dir() { return ""; }

}  // namespace lockstep::ext
