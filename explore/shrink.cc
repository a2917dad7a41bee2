#include "explore/shrink.h"

#include <algorithm>
#include <stdexcept>

#include "base/check.h"

namespace lockstep {

namespace {

// Smaller values of a non-negative number: zero first, then half.
std::vector<int64_t> smaller(int64_t v, int64_t floor = 0) {
  std::vector<int64_t> out;
  if (v > floor) out.push_back(floor);
  if (v / 2 > floor && v / 2 < v) out.push_back(v / 2);
  return out;
}

// Candidates that change one number of the spec, found through an accessor.
template <class Get>
void vary(std::vector<SwarmSpec>& out, const SwarmSpec& spec, Get get, int64_t floor = 0) {
  SwarmSpec copy = spec;
  for (int64_t v : smaller(get(copy), floor)) {
    SwarmSpec c = spec;
    get(c) = v;
    out.push_back(std::move(c));
  }
}

SwarmSpec without_client(const SwarmSpec& spec, size_t i) {
  SwarmSpec c = spec;
  c.clients.erase(c.clients.begin() + static_cast<std::ptrdiff_t>(i));
  std::vector<SwarmFault> kept;
  for (SwarmFault f : c.faults) {
    if (f.client == static_cast<int>(i)) continue;
    if (f.client > static_cast<int>(i)) --f.client;
    kept.push_back(f);
  }
  c.faults = std::move(kept);
  return c;
}

void removals(std::vector<SwarmSpec>& out, const SwarmSpec& spec) {
  for (size_t i = 0; spec.clients.size() > 1 && i < spec.clients.size(); ++i)
    out.push_back(without_client(spec, i));
  for (size_t i = 0; i < spec.faults.size(); ++i) {
    SwarmSpec c = spec;
    c.faults.erase(c.faults.begin() + static_cast<std::ptrdiff_t>(i));
    out.push_back(std::move(c));
  }
  for (size_t i = 0; i < spec.clients.size(); ++i) {
    for (size_t j = 0; spec.clients[i].steps.size() > 1 && j < spec.clients[i].steps.size(); ++j) {
      SwarmSpec c = spec;
      c.clients[i].steps.erase(c.clients[i].steps.begin() + static_cast<std::ptrdiff_t>(j));
      out.push_back(std::move(c));
    }
  }
  if (spec.heal_clients > 0) {
    SwarmSpec c = spec;
    --c.heal_clients;
    out.push_back(std::move(c));
  }
  if (spec.keys > 1) {
    SwarmSpec c = spec;  // the last key's steps move to key 0
    --c.keys;
    for (SwarmClient& client : c.clients) {
      for (SwarmStep& s : client.steps) s.key = s.key == c.keys ? 0 : s.key;
    }
    out.push_back(std::move(c));
  }
}

void step_simplifications(std::vector<SwarmSpec>& out, const SwarmSpec& spec, size_t i, size_t j) {
  auto step = [i, j](SwarmSpec& s) -> SwarmStep& { return s.clients[i].steps[j]; };
  const SwarmStep& s = spec.clients[i].steps[j];
  if (s.acquire_pause_after_us >= 0) {
    SwarmSpec c = spec;
    step(c).acquire_pause_after_us = -1;
    step(c).acquire_pause_ms = 0;
    out.push_back(std::move(c));
  }
  if (s.acquire_crash_after_us >= 0) {
    SwarmSpec c = spec;
    step(c).acquire_crash_after_us = -1;
    out.push_back(std::move(c));
  }
  if (s.release_pause_after_us >= 0) {
    SwarmSpec c = spec;
    step(c).release_pause_after_us = -1;
    step(c).release_pause_ms = 0;
    out.push_back(std::move(c));
  }
  if (s.extend) {
    SwarmSpec c = spec;
    step(c).extend = false;
    out.push_back(std::move(c));
  }
  if (s.auto_extend) {
    SwarmSpec c = spec;
    step(c).auto_extend = false;
    out.push_back(std::move(c));
  }
  if (s.shared) {
    SwarmSpec c = spec;
    step(c).shared = false;
    out.push_back(std::move(c));
  }
  if (s.clear) {
    SwarmSpec c = spec;
    step(c).clear = false;
    out.push_back(std::move(c));
  }
  vary(out, spec, [&](SwarmSpec& x) -> int64_t& { return step(x).pause_ms; });
  vary(out, spec, [&](SwarmSpec& x) -> int64_t& { return step(x).gap_ms; });
  vary(out, spec, [&](SwarmSpec& x) -> int64_t& { return step(x).hold_ms; });
  if (s.release_pause_after_us >= 0) {
    vary(
        out, spec, [&](SwarmSpec& x) -> int64_t& { return step(x).release_pause_ms; }, 1);
  }
  if (s.acquire_pause_after_us >= 0) {
    vary(
        out, spec, [&](SwarmSpec& x) -> int64_t& { return step(x).acquire_pause_ms; }, 1);
  }
}

void number_simplifications(std::vector<SwarmSpec>& out, const SwarmSpec& spec) {
  for (size_t i = 0; i < spec.clients.size(); ++i) {
    for (size_t j = 0; j < spec.clients[i].steps.size(); ++j) step_simplifications(out, spec, i, j);
    vary(out, spec, [i](SwarmSpec& x) -> int64_t& { return x.clients[i].start_ms; });
    if (spec.clients[i].drift_ppm != 0) {
      SwarmSpec c = spec;
      c.clients[i].drift_ppm = 0;
      out.push_back(std::move(c));
    }
  }
  for (size_t i = 0; i < spec.faults.size(); ++i) {
    vary(out, spec, [i](SwarmSpec& x) -> int64_t& { return x.faults[i].duration_ms; });
    vary(out, spec, [i](SwarmSpec& x) -> int64_t& { return x.faults[i].at_ms; });
  }
  if (spec.fixed_latency_us > 0) {
    SwarmSpec c = spec;
    c.fixed_latency_us = 0;
    out.push_back(std::move(c));
  }
  if (spec.slows_servers()) {
    SwarmSpec c = spec;
    c.server_delays_us.clear();
    out.push_back(std::move(c));
    for (size_t i = 0; i < spec.server_delays_us.size(); ++i) {
      if (spec.server_delays_us[i] == 0) continue;
      SwarmSpec one = spec;
      one.server_delays_us[i] = 0;
      out.push_back(std::move(one));
    }
  }
  if (spec.replication_delay_ms >= 0 && !spec.has_fault(FaultKind::failover)) {
    SwarmSpec c = spec;
    c.replication_delay_ms = -1;
    out.push_back(std::move(c));
  }
  vary(out, spec, [](SwarmSpec& x) -> int64_t& { return x.retry_jitter_ms; });
  vary(
      out, spec, [](SwarmSpec& x) -> int64_t& { return x.safety_ms; }, 1);
  if (spec.retry_times > 0) {
    SwarmSpec c = spec;
    c.retry_times /= 2;
    out.push_back(std::move(c));
  }
}

}  // namespace

std::vector<SwarmSpec> shrink_candidates(const SwarmSpec& spec) {
  std::vector<SwarmSpec> out;
  removals(out, spec);
  number_simplifications(out, spec);
  std::vector<SwarmSpec> valid;  // e.g. a shorter safety phase must still hold every fault
  for (SwarmSpec& c : out) {
    try {
      c.validate();
      valid.push_back(std::move(c));
    } catch (const std::invalid_argument&) {
    }
  }
  return valid;
}

ShrinkResult shrink(const SwarmSpec& failing,
                    const std::function<bool(const SwarmSpec&)>& still_fails,
                    const ShrinkOptions& options) {
  ShrinkResult result{.spec = failing};
  bool improved = true;
  while (improved && result.runs < options.runs_max) {
    improved = false;
    for (SwarmSpec& candidate : shrink_candidates(result.spec)) {
      if (result.runs >= options.runs_max) break;
      if (options.stop && options.stop()) {
        result.cut_short = true;
        return result;
      }
      ++result.runs;
      if (!still_fails(candidate)) continue;
      result.spec = std::move(candidate);
      ++result.steps;
      improved = true;
      break;
    }
  }
  LOCKSTEP_CHECK(result.spec.clients.size() <= failing.clients.size(),
                 "shrinking never adds clients");
  return result;
}

}  // namespace lockstep
