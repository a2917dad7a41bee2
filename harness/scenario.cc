#include "harness/scenario.h"

#include <algorithm>

#include <fmt/format.h>

#include "base/check.h"
#include "harness/spec_engine.h"

namespace lockstep {

ScenarioEnv::ScenarioEnv(ScenarioWorld& world, Recorder& recorder, GuardedResource& resource,
                         Backend& backend, const AdapterEntry& adapter, const Options& options,
                         ClientSideLeases* leases, sim::World* sim)
    : world_(world),
      recorder_(recorder),
      resource_(resource),
      backend_(backend),
      adapter_(adapter),
      options_(options),
      leases_(leases),
      sim_(sim) {}

Client& ScenarioEnv::add_client(const std::string& name, int64_t clock_offset_us,
                                int64_t drift_ppm) {
  const int id = static_cast<int>(clients_.size());
  const int node = world_.add_client_node(name, clock_offset_us, drift_ppm);
  clients_.push_back(
      std::make_unique<Client>(ClientSetup{.id = id,
                                           .name = name,
                                           .node = node,
                                           .world = &world_,
                                           .recorder = &recorder_,
                                           .resource = &resource_,
                                           .adapter = &backend_.adapter_for(id, node),
                                           .random_seed = world_.draw_u64(),
                                           .leases = leases_}));
  recorder_.history().meta.clients = static_cast<int>(clients_.size());
  LOCKSTEP_CHECK(node >= 0, "a client node has an id");
  if (static_cast<size_t>(node) >= client_of_node_.size())
    client_of_node_.resize(static_cast<size_t>(node) + 1, -1);
  LOCKSTEP_CHECK(client_of_node_[node] == -1, "one client per node");
  client_of_node_[node] = id;
  world_.trace_linef("client c{} is {} on node {}", id, name, node);
  // A clock that starts off true time, or runs at another rate, is a fault of this client.
  auto record_clock_fault = [&](FaultKind kind, int64_t amount, std::string detail) {
    recorder_.record({.kind = EventKind::fault,
                      .client = id,
                      .end_us = world_.now_us(),
                      .fault = kind,
                      .amount = amount,
                      .detail = std::move(detail)});
  };
  if (clock_offset_us != 0) {
    record_clock_fault(FaultKind::clock_offset, clock_offset_us,
                       fmt::format("{}'s clock is {:+}us off", name, clock_offset_us));
  }
  if (drift_ppm != 0) {
    record_clock_fault(FaultKind::clock_drift, drift_ppm,
                       fmt::format("{}'s clock drifts {:+}ppm", name, drift_ppm));
  }
  return *clients_.back();
}

int64_t ScenarioEnv::start(Client& client, int64_t start_ms, std::function<void(Client&)> program,
                           int64_t jitter_us) {
  const int64_t drawn_us = jitter_us > 0 ? world_.draw_between(0, jitter_us) : 0;
  const TimeUs start_us = start_ms * 1000 + drawn_us;
  world_.trace_linef("param {}.start_us={} (jitter {}us of at most {}us)", client.name(), start_us,
                     drawn_us, jitter_us);
  Client* target = &client;
  world_.spawn(
      client.node(), client.name(), [target, body = std::move(program)] { body(*target); },
      start_us);
  return start_us;
}

void ScenarioEnv::schedule_fault_us(int64_t at_us, FaultTag tag, std::string what,
                                    std::function<void()> action, int64_t duration_us) {
  world_.at(at_us, [this, at_us, duration_us, tag = std::move(tag), what = std::move(what),
                    act = std::move(action)] {
    recorder_.record({.kind = EventKind::fault,
                      .client = tag.client,
                      .server = tag.server,
                      .end_us = at_us + duration_us,
                      .fault = tag.kind,
                      .amount = tag.amount,
                      .detail = what});
    act();
  });
}

void ScenarioEnv::schedule_failover_us(int64_t at_us, std::string what) {
  world_.at(at_us, [this, at_us, what = std::move(what)] {
    const int64_t lost = backend_.failover();
    recorder_.record({.kind = EventKind::fault,
                      .end_us = at_us,
                      .fault = FaultKind::failover,
                      .amount = lost,
                      .detail = lost >= 0
                                    ? fmt::format("{} ({} acknowledged write(s) lost)", what, lost)
                                    : what});
  });
}

void ScenarioEnv::schedule_client_kill_us(int64_t at_us, const Client& client, std::string what,
                                          std::function<void()> action) {
  world_.at(at_us,
            [this, at_us, id = client.id(), what = std::move(what), act = std::move(action)] {
              recorder_.record({.kind = EventKind::fault,
                                .client = id,
                                .kills_client = true,
                                .end_us = at_us,
                                .fault = FaultKind::crash,
                                .detail = what});
              act();
            });
}

void ScenarioEnv::require_sim(const std::string& why) const {
  if (world_.kind() != WorldKind::sim)
    throw WorldUnsupported(fmt::format("needs the simulator: {}", why));
}

int ScenarioEnv::client_for_node(int node) const {
  if (node < 0 || static_cast<size_t>(node) >= client_of_node_.size()) return -1;
  return client_of_node_[node];
}

bool Scenario::runs_in(WorldKind world) const {
  for (WorldKind candidate : worlds) {
    if (candidate == world) return true;
  }
  return false;
}

void Scenario::build_in(ScenarioEnv& env) const {
  if (spec) return run_spec(env, spec(env.options(), env.adapter(), env.world().kind()));
  build(env);
}

bool Scenario::applies_to(const AdapterEntry& adapter) const {
  return !fits || fits(adapter.traits);
}

bool Scenario::judges_in_matrix(const AdapterEntry& adapter) const {
  if (!applies_to(adapter)) return false;
  if (adapter.judged_in.empty()) return true;
  return std::find(adapter.judged_in.begin(), adapter.judged_in.end(), name) !=
         adapter.judged_in.end();
}

}  // namespace lockstep
