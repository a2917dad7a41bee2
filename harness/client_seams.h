#pragma once
// ClientSeamsSource: the ClientSeams (include/lockstep/client_seams.h) of each client of a backend,
// made from its world: the node's clock, and a random source seeded by the run's seed and the
// client in the simulator (the system's in the real world). They live as long as the backend.
#include <map>
#include <memory>

#include "harness/backend.h"
#include "lockstep/client_seams.h"

namespace lockstep {

class ClientSeamsSource {
 public:
  explicit ClientSeamsSource(BackendEnv& env) : env_(env) {}

  // The seams of the client `client` on node `node` (ScenarioWorld's numbering).
  ClientSeams for_client(int client, int node);

 private:
  BackendEnv& env_;
  std::map<int, std::unique_ptr<Random>> random_by_client_;  // bounded by the run's clients
};

}  // namespace lockstep
