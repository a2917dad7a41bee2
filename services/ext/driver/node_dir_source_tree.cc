// The build tree's default for the Node drivers: this source tree's services/ext/node (services/ext/driver/node_drivers.h).
#include "services/ext/driver/node_drivers.h"

namespace lockstep::ext {

std::string default_node_driver_dir() { return LOCKSTEP_SOURCE_DIR "/services/ext/node"; }

}  // namespace lockstep::ext
