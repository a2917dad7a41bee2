#include "scenarios/scenario.h"

#include <fmt/format.h>

namespace lockstep {

ScenarioEnv::ScenarioEnv(sim::World& world, Recorder& recorder, GuardedResource& resource, SimBackend& backend,
                         const Options& options)
    : world_(world), recorder_(recorder), resource_(resource), backend_(backend), options_(options) {}

Client& ScenarioEnv::add_client(const std::string& name, sim::ClockSpec clock) {
  const int id = static_cast<int>(clients_.size());
  const sim::NodeId node = world_.add_node(name, clock);
  clients_.push_back(std::make_unique<Client>(ClientSetup{.id = id,
                                                          .name = name,
                                                          .node = node,
                                                          .world = &world_,
                                                          .recorder = &recorder_,
                                                          .resource = &resource_,
                                                          .adapter = &backend_.adapter_for(id, node),
                                                          .random_seed = world_.prng().next_u64()}));
  recorder_.history().meta.clients = static_cast<int>(clients_.size());
  world_.trace_line(fmt::format("client c{} is {} on node {}", id, name, node));
  return *clients_.back();
}

void ScenarioEnv::start(Client& client, int64_t start_ms, std::function<void(Client&)> program, int64_t jitter_us) {
  const int64_t drawn_us = jitter_us > 0 ? world_.prng().between(0, jitter_us) : 0;
  const sim::TimeUs start_us = start_ms * sim::kUsPerMs + drawn_us;
  world_.trace_line(fmt::format("param {}.start_us={} (jitter {}us of at most {}us)", client.name(), start_us,
                                drawn_us, jitter_us));
  Client* target = &client;
  world_.spawn(client.node(), client.name(), [target, body = std::move(program)] { body(*target); }, start_us);
}

void ScenarioEnv::schedule_fault(int64_t at_ms, std::string what, std::function<void()> action, int64_t duration_ms) {
  const sim::TimeUs at_us = at_ms * sim::kUsPerMs;
  world_.scheduler().at(at_us, [this, at_us, duration_ms, what = std::move(what), act = std::move(action)] {
    recorder_.record({.kind = EventKind::fault, .end_us = at_us + duration_ms * sim::kUsPerMs, .detail = what});
    act();
  });
}

int ScenarioEnv::client_for_node(sim::NodeId node) const {
  for (const auto& client : clients_) {
    if (client->node() == node) return client->id();
  }
  return -1;
}

bool Scenario::applies_to(const std::string& adapter) const {
  if (adapters.empty()) return true;
  for (const std::string& candidate : adapters) {
    if (candidate == adapter) return true;
  }
  return false;
}

}  // namespace lockstep
