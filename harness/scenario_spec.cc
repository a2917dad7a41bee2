#include "harness/scenario_spec.h"

#include <stdexcept>

#include <fmt/format.h>

namespace lockstep {

namespace {

// Formats its words only when the rule is broken: validate() runs before every run, a sweep's
// seeds included, over every step.
template <class... Args>
void require(bool holds, fmt::format_string<Args...> what, Args&&... args) {
  if (!holds) {
    throw std::invalid_argument("scenario spec: " + fmt::format(what, std::forward<Args>(args)...));
  }
}

nlohmann::ordered_json retry_json(const RetrySettings& retry) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  if (retry.retry_delay_ms) j["delay_ms"] = *retry.retry_delay_ms;
  if (retry.retry_times) j["times"] = *retry.retry_times;
  if (retry.total_time_ms) j["total_time_ms"] = *retry.total_time_ms;
  if (retry.retry_jitter_ms > 0) j["jitter_ms"] = retry.retry_jitter_ms;
  return j;
}

nlohmann::ordered_json hold_json(const HoldStep& h) {
  nlohmann::ordered_json j{
      {"key", h.key}, {"ttl_ms", h.ttl_ms}, {"hold_ms", h.hold_ms}, {"retry", retry_json(h.retry)}};
  if (h.careful) j["careful"] = true;
  if (h.pause_ms > 0) j["pause_ms"] = h.pause_ms;
  if (h.extend) j["extend_ttl_ms"] = h.extend_ttl_ms;
  if (h.late_ms >= 0) j["late_ms"] = h.late_ms;
  if (!h.release) j["release"] = false;
  if (h.auto_extend) j["auto_extend"] = true;
  if (h.release_pause_after_us >= 0) {
    j["release_pause_after_us"] = h.release_pause_after_us;
    j["release_pause_ms"] = h.release_pause_ms;
  }
  if (h.acquire_crash_after_us >= 0) j["acquire_crash_after_us"] = h.acquire_crash_after_us;
  if (h.acquire_pause_after_us >= 0) {
    j["acquire_pause_after_us"] = h.acquire_pause_after_us;
    j["acquire_pause_ms"] = h.acquire_pause_ms;
  }
  return j;
}

nlohmann::ordered_json step_json(const SpecStep& s) {
  nlohmann::ordered_json j{{"step", step_kind_name(s.kind)}};
  switch (s.kind) {
    case StepKind::acquire:
      j["key"] = s.key;
      j["ttl_ms"] = s.ttl_ms;
      if (s.retry) j["retry"] = retry_json(*s.retry);
      if (!s.end_if_refused) j["if_refused"] = "go on";
      break;
    case StepKind::extend:
    case StepKind::sleep_out_validity: j["ttl_ms"] = s.ttl_ms; break;
    case StepKind::work_until_lost:
      j["ms"] = s.ms;
      j["step_ms"] = s.step_ms;
      break;
    case StepKind::rw_hold:
      j["key"] = s.key;
      j["mode"] = s.shared ? "shared" : "exclusive";
      j["ms"] = s.ms;
      if (s.pause_ms > 0) j["pause_ms"] = s.pause_ms;
      break;
    case StepKind::hold: j["hold"] = hold_json(s.hold); break;
    case StepKind::stop_after: j["ms"] = s.ms; break;
    case StepKind::take_each_key:
      j["keys"] = s.keys;
      j["ttl_ms"] = s.ttl_ms;
      j["bound_us"] = s.bound_us;
      break;
    case StepKind::fifo_hold:
      j["key"] = s.key;
      j["ms"] = s.ms;
      if (s.max_wait_ms) j["max_wait_ms"] = *s.max_wait_ms;
      break;
    case StepKind::increment:
    case StepKind::careful_increment:
    case StepKind::pause:
    case StepKind::sleep:
    case StepKind::sleep_until:
    case StepKind::sleep_until_whole_ms:
    case StepKind::auto_extend: j["ms"] = s.ms; break;
    default: break;
  }
  return j;
}

nlohmann::ordered_json fault_json(const SpecFault& f) {
  nlohmann::ordered_json j{
      {"action", spec_action_name(f.action)}, {"at_us", f.at_us}, {"what", f.what}};
  if (f.after_grant_of >= 0) j["after_grant_of"] = f.after_grant_of;
  if (f.client >= 0) j["client"] = f.client;
  if (f.server >= 0) j["server"] = f.server;
  if (f.amount != 0) j["amount"] = f.amount;
  if (f.duration_us != 0) j["duration_us"] = f.duration_us;
  if (!f.recorded) j["recorded"] = false;
  if (f.crash_pair >= 0) j["crash_pair"] = f.crash_pair;
  for (const SpecFault& then : f.then) j["then"].push_back(fault_json(then));
  return j;
}

nlohmann::ordered_json entry_body_json(const SpecEntry& e) {
  switch (e.kind) {
    case SpecEntry::Kind::add: {
      nlohmann::ordered_json j{{"add", e.client.name}};
      if (e.client.clock_offset_us != 0) j["clock_offset_us"] = e.client.clock_offset_us;
      if (e.client.drift_ppm != 0) j["drift_ppm"] = e.client.drift_ppm;
      return j;
    }
    case SpecEntry::Kind::start: {
      nlohmann::ordered_json steps = nlohmann::ordered_json::array();
      for (const SpecStep& s : e.program.steps) steps.push_back(step_json(s));
      nlohmann::ordered_json j{{"start", e.program.client},
                               {"at_ms", e.program.start_ms},
                               {"jitter_us", e.program.jitter_us},
                               {"steps", steps}};
      if (e.program.repeat != 1) j["repeat"] = e.program.repeat;
      if (e.program.leave_when_killed) j["leave_when_killed"] = true;
      return j;
    }
    case SpecEntry::Kind::fault: return {{"fault", fault_json(e.fault)}};
    case SpecEntry::Kind::cut:
      return {{"cut", e.cut.client}, {"server", e.cut.server}, {"two_way", e.cut.two_way}};
  }
  return {};
}

nlohmann::ordered_json entry_json(const SpecEntry& e) {
  nlohmann::ordered_json j = entry_body_json(e);
  if (e.after.client >= 0) j["after"] = {{"client", e.after.client}, {"step", e.after.step}};
  return j;
}

bool strikes_client(SpecAction action) {
  switch (action) {
    case SpecAction::jump_client_clock:
    case SpecAction::client_drift:
    case SpecAction::stall_client:
    case SpecAction::pause_client:
    case SpecAction::kill_client:
    case SpecAction::partition_client:
    case SpecAction::end_session:
    case SpecAction::reset_connections: return true;
    default: return false;
  }
}

bool strikes_server(SpecAction action) {
  switch (action) {
    case SpecAction::jump_server_clock:
    case SpecAction::pause_server:
    case SpecAction::crash_server:
    case SpecAction::restart_server:
    case SpecAction::slow_server: return true;
    default: return false;
  }
}

// The client and server a fault's action strikes are named, and the client is known.
template <class Known>
void require_actors(const SpecFault& f, const Known& known) {
  if (f.client >= 0 || strikes_client(f.action)) known(f.client, "a fault");
  if (strikes_server(f.action)) require(f.server >= 0, "a fault names its server");
}

}  // namespace

int ScenarioSpec::add_client(std::string name, int64_t clock_offset_us, int64_t drift_ppm) {
  const int index = client_count();
  entries.push_back(
      {.kind = SpecEntry::Kind::add,
       .client = {
           .name = std::move(name), .clock_offset_us = clock_offset_us, .drift_ppm = drift_ppm}});
  return index;
}

SpecProgram& ScenarioSpec::start(int client, int64_t start_ms, std::vector<SpecStep> steps,
                                 int64_t jitter_us, int repeat) {
  entries.push_back({.kind = SpecEntry::Kind::start,
                     .program = {.client = client,
                                 .start_ms = start_ms,
                                 .jitter_us = jitter_us,
                                 .repeat = repeat,
                                 .steps = std::move(steps)}});
  return entries.back().program;
}

void ScenarioSpec::strike(SpecFault fault) {
  entries.push_back({.kind = SpecEntry::Kind::fault, .fault = std::move(fault)});
}

void ScenarioSpec::anchor_last(int client, int step) {
  entries.back().after = {.client = client, .step = step};
}

void ScenarioSpec::cut(int client, int server, bool two_way) {
  entries.push_back({.kind = SpecEntry::Kind::cut,
                     .cut = {.client = client, .server = server, .two_way = two_way}});
}

int ScenarioSpec::client_count() const {
  int clients = 0;
  for (const SpecEntry& e : entries) clients += e.kind == SpecEntry::Kind::add ? 1 : 0;
  return clients;
}

void ScenarioSpec::validate() const {
  int added = 0;
  auto known = [&added](int client, const char* what) {
    require(client >= 0 && client < added, "{} names client {}, of {} added so far", what, client,
            added);
  };
  for (const SpecEntry& e : entries) {
    if (e.after.client >= 0) {
      known(e.after.client, "an anchor");
      require(e.kind == SpecEntry::Kind::start || e.kind == SpecEntry::Kind::fault,
              "only a start or a fault waits for an anchor");
      require(e.after.step >= 0, "an anchor names a step");
    }
    switch (e.kind) {
      case SpecEntry::Kind::add:
        require(!e.client.name.empty(), "a client has a name");
        ++added;
        require(added <= kClientsMax, "at most {} clients", kClientsMax);
        break;
      case SpecEntry::Kind::start:
        known(e.program.client, "a program");
        require(e.program.start_ms >= 0 && e.program.jitter_us >= 0,
                "a program starts at a time not negative");
        require(e.program.repeat >= 1 && e.program.repeat <= kRepeatMax,
                "a program repeats 1 to {} times", kRepeatMax);
        require(e.program.steps.size() <= static_cast<size_t>(kStepsMax),
                "a program has at most {} steps", kStepsMax);
        for (const SpecStep& s : e.program.steps)
          require(s.ms >= 0 && s.ttl_ms >= 0 && s.step_ms >= 0, "a step's times are not negative");
        break;
      case SpecEntry::Kind::fault:
        require(e.fault.at_us >= 0 && e.fault.duration_us >= 0,
                "a fault's time and duration are not negative");
        if (e.fault.after_grant_of >= 0) known(e.fault.after_grant_of, "a fault's grant");
        require_actors(e.fault, known);
        for (const SpecFault& then : e.fault.then) {
          require(then.then.empty(), "a fault's further actions have none of their own");
          require_actors(then, known);
        }
        break;
      case SpecEntry::Kind::cut:
        known(e.cut.client, "a cut");
        require(e.cut.server >= 0, "a cut names a server");
        break;
    }
  }
  require(fixed_latency_us >= 0, "a fixed latency is not negative");
}

SpecStep acquire_step(int64_t ttl_ms, std::optional<RetrySettings> retry, std::string key) {
  return {.kind = StepKind::acquire, .key = std::move(key), .ttl_ms = ttl_ms, .retry = retry};
}

SpecStep step(StepKind kind, int64_t ms) { return {.kind = kind, .ms = ms}; }

SpecStep extend_step(int64_t ttl_ms) { return {.kind = StepKind::extend, .ttl_ms = ttl_ms}; }

std::vector<SpecStep> take_work_release_steps(int64_t ttl_ms, int64_t hold_ms,
                                              std::optional<RetrySettings> retry) {
  return {acquire_step(ttl_ms, std::move(retry)), step(StepKind::increment, hold_ms),
          step(StepKind::release)};
}

SpecFault pause_client_fault(int client, int64_t at_us, int64_t pause_us, std::string what) {
  return {.action = SpecAction::pause_client,
          .at_us = at_us,
          .client = client,
          .amount = pause_us,
          .duration_us = pause_us,
          .tag = {.kind = FaultKind::pause, .client = client, .amount = pause_us},
          .what = std::move(what)};
}

SpecFault partition_fault(int client, int64_t at_ms, int64_t length_ms, bool two_way,
                          std::string what) {
  return {.action = SpecAction::partition_client,
          .at_us = at_ms * 1000,
          .client = client,
          .amount = two_way ? 1 : 0,
          .duration_us = length_ms * 1000,
          .tag = {.kind = FaultKind::partition, .client = client, .amount = two_way ? 1 : 0},
          .what = std::move(what)};
}

SpecFault heal_fault(int64_t at_ms, std::string what) {
  return {.action = SpecAction::heal, .at_us = at_ms * 1000, .what = std::move(what)};
}

std::vector<SpecStep> joined(std::vector<SpecStep> first, const std::vector<SpecStep>& then) {
  first.insert(first.end(), then.begin(), then.end());
  return first;
}

std::string step_kind_name(StepKind kind) {
  switch (kind) {
    case StepKind::acquire: return "acquire";
    case StepKind::read: return "read";
    case StepKind::write_next: return "write-next";
    case StepKind::increment: return "increment";
    case StepKind::careful_increment: return "careful-increment";
    case StepKind::pause: return "pause";
    case StepKind::sleep: return "sleep";
    case StepKind::sleep_until: return "sleep-until";
    case StepKind::sleep_until_whole_ms: return "sleep-until-whole-ms";
    case StepKind::sleep_out_validity: return "sleep-out-validity";
    case StepKind::extend: return "extend";
    case StepKind::release: return "release";
    case StepKind::leave: return "leave";
    case StepKind::is_locked: return "is-locked";
    case StepKind::crash: return "crash";
    case StepKind::auto_extend: return "auto-extend";
    case StepKind::work_until_lost: return "work-until-lost";
    case StepKind::rw_hold: return "rw-hold";
    case StepKind::fifo_hold: return "fifo-hold";
    case StepKind::fifo_clear: return "fifo-clear";
    case StepKind::hold: return "hold";
    case StepKind::stop_after: return "stop-after";
    case StepKind::take_each_key: return "take-each-key";
  }
  return "?";
}

std::string spec_action_name(SpecAction action) {
  switch (action) {
    case SpecAction::none: return "none";
    case SpecAction::pause_client: return "pause-client";
    case SpecAction::kill_client: return "kill-client";
    case SpecAction::partition_client: return "partition-client";
    case SpecAction::heal: return "heal";
    case SpecAction::server_drift: return "server-drift";
    case SpecAction::jump_server_clocks: return "jump-server-clocks";
    case SpecAction::jump_server_clock: return "jump-server-clock";
    case SpecAction::pause_server: return "pause-server";
    case SpecAction::crash_server: return "crash-server";
    case SpecAction::restart_server: return "restart-server";
    case SpecAction::end_session: return "end-session";
    case SpecAction::reset_connections: return "reset-connections";
    case SpecAction::failover: return "failover";
    case SpecAction::fifo_clear: return "fifo-clear";
    case SpecAction::slow_server: return "slow-server";
    case SpecAction::jump_client_clock: return "jump-client-clock";
    case SpecAction::client_drift: return "client-drift";
    case SpecAction::network_latency: return "network-latency";
    case SpecAction::network_loss: return "network-loss";
    case SpecAction::network_restore: return "network-restore";
    case SpecAction::stall_client: return "stall-client";
  }
  return "?";
}

nlohmann::ordered_json to_json(const ScenarioSpec& spec) {
  nlohmann::ordered_json entries = nlohmann::ordered_json::array();
  for (const SpecEntry& e : spec.entries) entries.push_back(entry_json(e));
  nlohmann::ordered_json j{{"timeline", entries}};
  if (spec.servers_required > 0) j["servers_required"] = spec.servers_required;
  if (spec.fixed_latency_us > 0) j["fixed_latency_us"] = spec.fixed_latency_us;
  if (spec.server_drift_ppm != 0) j["server_drift_ppm"] = spec.server_drift_ppm;
  if (!spec.needs_sim.empty()) j["needs_sim"] = spec.needs_sim;
  if (spec.liveness_bound_us) j["liveness_bound_us"] = *spec.liveness_bound_us;
  return j;
}

}  // namespace lockstep
