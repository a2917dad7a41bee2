#include "explore/spec_input.h"

#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "adapters/core/locker.h"
#include "adapters/core/retry.h"
#include "explore/swarm.h"
#include "harness/option_bounds.h"
#include "harness/usage_error.h"
#include "history/json_input.h"

namespace lockstep {

namespace {

constexpr int64_t kDurationMaxUs = kTtlMaxMs * 1000;
// A fault's server is taken modulo the servers there are (swarm.cc): the sweep draws 0..6, and a
// bound keeps a number from the file from being cut to fit an int.
constexpr int64_t kFaultServerMax = 1000;

class Fields {
 public:
  Fields(const nlohmann::json& j, std::string path) : j_(j), path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw UsageError(
        fmt::format("the report's workload cannot be replayed: \"{}{}\" {}", path_, field, what));
  }
  const nlohmann::json& at(const char* field) const {
    if (!j_.is_object() || !j_.contains(field)) fail(field, "is missing");
    return j_.at(field);
  }
  void integer(const char* field, int64_t min, int64_t max, bool optional = false) const {
    if (optional && (!j_.is_object() || !j_.contains(field))) return;
    if (!json_integer(at(field), min, max)) {
      fail(field, fmt::format("must be an integer in [{}, {}], got {}", min, max,
                              json_brief(j_.at(field))));
    }
  }
  void flag(const char* field, bool optional = false) const {
    if (optional && (!j_.is_object() || !j_.contains(field))) return;
    if (!at(field).is_boolean()) fail(field, "must be true or false");
  }
  void text(const char* field) const {
    if (!at(field).is_string()) fail(field, "must be a string");
  }
  const nlohmann::json& array(const char* field, size_t size_max) const {
    const nlohmann::json& v = at(field);
    if (!v.is_array() || v.size() > size_max) {
      fail(field, fmt::format("must be an array of at most {}", size_max));
    }
    return v;
  }
  std::string item(const char* field, size_t i) const {
    return fmt::format("{}{}[{}].", path_, field, i);
  }

 private:
  const nlohmann::json& j_;
  std::string path_;
};

void check_fault(const nlohmann::json& jf, const std::string& path) {
  const Fields f(jf, path);
  f.text("kind");
  f.integer("at_ms", 0, kTtlMaxMs);
  f.integer("duration_ms", 0, kTtlMaxMs);
  f.integer("client", 0, SwarmSpec::kClientsMax - 1);
  f.integer("server", 0, kFaultServerMax, true);
  const std::string kind = jf.at("kind").get<std::string>();
  if (kind == "server-drift" || kind == "clock-drift") {
    f.integer("amount", -kDriftPpmMax, kDriftPpmMax);
  } else if (kind == "clock-jump" || kind == "server-clock-jump") {
    f.integer("amount", -kTtlMaxMs, kTtlMaxMs);
  } else if (kind == "loss") {
    f.integer("amount", 0, 100);
  } else if (kind == "partition") {
    f.integer("amount", 0, 1);
  } else {
    f.integer("amount", 0, kDurationMaxUs);
  }
}

void check_step(const nlohmann::json& js, const std::string& path) {
  const Fields f(js, path);
  f.integer("key", 0, SwarmSpec::kKeysMax - 1);
  for (const char* field : {"gap_ms", "hold_ms", "pause_ms", "release_pause_ms"}) {
    f.integer(field, 0, kTtlMaxMs);
  }
  f.integer("acquire_pause_ms", 0, kTtlMaxMs, true);
  // A step's own TTLs (0: the spec's) and how late it comes back after its validity (-1: never).
  f.integer("ttl_ms", 0, kTtlMaxMs, true);
  f.integer("extend_ttl_ms", 0, kTtlMaxMs, true);
  f.integer("late_ms", -1, kTtlMaxMs, true);
  f.integer("release_pause_after_us", -1, kDurationMaxUs);
  f.integer("acquire_crash_after_us", -1, kDurationMaxUs);
  f.integer("acquire_pause_after_us", -1, kDurationMaxUs, true);
  for (const char* field : {"extend", "release", "shared"}) f.flag(field);
  f.flag("clear", true);
}

}  // namespace

void check_swarm_workload(const nlohmann::json& workload) {
  const Fields f(workload, "");
  if (!workload.is_object()) f.fail("kind", "is missing (the workload is not a JSON object)");
  f.text("kind");
  f.text("family");
  f.integer("keys", 1, SwarmSpec::kKeysMax);
  f.integer("ttl_ms", 1, kTtlMaxMs);
  f.integer("retry_delay_ms", 1, kRetryDelayMaxMs);
  f.integer("retry_times", 0, kMaxRetryTimes);
  f.integer("retry_jitter_ms", 0, kRetryDelayMaxMs);
  f.integer("fixed_latency_us", 0, kDurationMaxUs);
  f.integer("replication_delay_ms", -1, kTtlMaxMs);
  f.integer("safety_ms", 1, kTtlMaxMs);
  f.integer("heal_clients", 0, SwarmSpec::kClientsMax);
  f.flag("careful", true);
  const nlohmann::json& clients = f.array("clients", SwarmSpec::kClientsMax);
  for (size_t i = 0; i < clients.size(); ++i) {
    const Fields c(clients[i], f.item("clients", i));
    c.integer("start_ms", 0, kTtlMaxMs);
    c.integer("drift_ppm", -kDriftPpmMax, kDriftPpmMax);
    c.flag("concurrent", true);
    const nlohmann::json& steps = c.array("steps", SwarmSpec::kStepsMax);
    for (size_t s = 0; s < steps.size(); ++s) check_step(steps[s], c.item("steps", s));
  }
  const nlohmann::json& faults = f.array("faults", SwarmSpec::kFaultsMax);
  for (size_t i = 0; i < faults.size(); ++i) check_fault(faults[i], f.item("faults", i));
}

}  // namespace lockstep
