// The build tree's default for the Node drivers: this source tree's ext/node (ext/node_drivers.h).
#include "ext/node_drivers.h"

namespace lockstep::ext {

std::string default_node_driver_dir() { return LOCKSTEP_SOURCE_DIR "/ext/node"; }

}  // namespace lockstep::ext
