// The stock `lockstep` command: the production adapters, the known-bad ones (so calibrate and the
// suite can catch them by name), and the command line of include/lockstep/cli.h.
#include "lockstep/cli.h"
#include "services/known_bad.h"

int main(int argc, char** argv) {
  lockstep::register_known_bad_adapters();
  return lockstep::cli_main(argc, argv);
}
