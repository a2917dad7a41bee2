#include "explore/workload.h"

#include <stdexcept>

#include <fmt/format.h>

#include "explore/key_name.h"

namespace lockstep {

namespace {

void run_step(Client& c, const WorkloadSpec& spec, const WorkloadStep& step) {
  c.sleep_ms(step.gap_ms);
  std::optional<Lock> lock =
      c.acquire(key_name(step.key), spec.ttl_ms,
                {.retry_delay_ms = spec.retry_delay_ms, .retry_times = spec.retry_times});
  if (!lock) return;
  std::optional<int64_t> value = c.read(*lock);
  if (step.pause_ms > 0) c.pause(step.pause_ms);
  c.sleep_ms(step.hold_ms);
  if (value) c.write(*lock, *value + 1);
  if (step.release) {
    c.release(*lock);
  } else {
    c.leave(*lock);
  }
}

}  // namespace

void WorkloadSpec::validate() const {
  if (keys < 1 || keys > kKeysMax)
    throw std::invalid_argument(fmt::format("keys must be in [1, {}]", kKeysMax));
  if (ttl_ms < 1) throw std::invalid_argument("ttl_ms must be positive");
  if (clients.empty() || clients.size() > static_cast<size_t>(kClientsMax)) {
    throw std::invalid_argument(fmt::format("clients must be in [1, {}]", kClientsMax));
  }
  for (const auto& steps : clients) {
    if (steps.size() > static_cast<size_t>(kStepsMax)) {
      throw std::invalid_argument(fmt::format("a client has more than {} steps", kStepsMax));
    }
    for (const WorkloadStep& s : steps) {
      if (s.key < 0 || s.key >= keys)
        throw std::invalid_argument("a step names a key outside [0, keys)");
      if (s.gap_ms < 0 || s.hold_ms < 0 || s.pause_ms < 0)
        throw std::invalid_argument("negative duration in a step");
    }
  }
}

int64_t WorkloadSpec::longest_hold_ms() const {
  int64_t longest = 0;
  for (const auto& steps : clients) {
    for (const WorkloadStep& s : steps) longest = std::max(longest, s.hold_ms + s.pause_ms);
  }
  return longest;
}

std::string describe(const WorkloadSpec& spec) {
  std::string out = fmt::format("keys={} ttl_ms={} retry={}x{}ms\n", spec.keys, spec.ttl_ms,
                                spec.retry_times, spec.retry_delay_ms);
  for (size_t i = 0; i < spec.clients.size(); ++i) {
    out += fmt::format("  c{}:", i);
    for (const WorkloadStep& s : spec.clients[i]) {
      out += fmt::format(" [k{} gap={} hold={}{}{}]", s.key, s.gap_ms, s.hold_ms,
                         s.pause_ms > 0 ? fmt::format(" pause={}", s.pause_ms) : "",
                         s.release ? "" : " walk-away");
    }
    out += "\n";
  }
  return out;
}

Scenario make_workload_scenario(const WorkloadSpec& spec) {
  spec.validate();
  return {
      .name = "random-workload",
      .description = "a generated workload: " + describe(spec),
      .expected = [](const AdapterTraits&, const Options&, bool) { return Expectation{}; },
      .build =
          [spec](ScenarioEnv& env) {
            for (size_t i = 0; i < spec.clients.size(); ++i) {
              Client& client = env.add_client(fmt::format("c{}", i));
              env.start(
                  client, 0,
                  [spec, i](Client& c) {
                    for (const WorkloadStep& step : spec.clients[i]) run_step(c, spec, step);
                  },
                  1000);
            }
          },
  };
}

}  // namespace lockstep
