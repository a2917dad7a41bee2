#include "scenarios/backend.h"

#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "adapters/memory/memory_adapter.h"

namespace lockstep {

namespace {

// The in-memory lock: one store shared by every client, on a server node of its own so that
// clock faults can be aimed at "the server". Calls reach it without network latency.
class MemorySimBackend final : public SimBackend {
 public:
  MemorySimBackend(BackendEnv& env, bool bad_release)
      : server_(env.world.add_node("memory")),
        servers_{server_},
        adapter_({.clock = &env.world.clock(server_),
                  .observer = &env.recorder,
                  .server_name = "memory",
                  .bad_release_without_owner_check = bad_release}) {}

  LockAdapter& adapter_for(int, sim::NodeId) override { return adapter_; }
  const std::vector<sim::NodeId>& server_nodes() const override { return servers_; }

 private:
  sim::NodeId server_;
  std::vector<sim::NodeId> servers_;
  MemoryAdapter adapter_;
};

std::vector<AdapterEntry>& registry() {
  static std::vector<AdapterEntry> entries = {
      {.name = "memory",
       .description = "in-process TTL lease table with owner-checked release/extend and monotonic fencing tokens",
       .worlds = {"sim"},
       .make_sim = [](BackendEnv& env) { return make_memory_sim_backend(env); }},
  };
  return entries;
}

}  // namespace

std::unique_ptr<SimBackend> make_memory_sim_backend(BackendEnv& env, bool bad_release_without_owner_check) {
  return std::make_unique<MemorySimBackend>(env, bad_release_without_owner_check);
}

const std::vector<AdapterEntry>& adapters() { return registry(); }

const AdapterEntry* find_adapter(const std::string& name) {
  for (const AdapterEntry& entry : registry()) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

void register_adapter(AdapterEntry entry) {
  if (find_adapter(entry.name) != nullptr) {
    throw std::logic_error(fmt::format("adapter {} registered twice", entry.name));
  }
  registry().push_back(std::move(entry));
}

std::string adapter_names() {
  std::vector<std::string> names;
  for (const AdapterEntry& entry : registry()) names.push_back(entry.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace lockstep
