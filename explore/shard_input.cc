#include "explore/shard_input.h"

#include <cstdint>

#include <fmt/format.h>

#include "explore/sweep.h"
#include "harness/option_bounds.h"
#include "harness/usage_error.h"
#include "history/json_input.h"

namespace lockstep {

namespace {

// Counts and sizes added across shards stay far from overflow: a sweep is at most
// kSweepSeedsMax seeds of at most 20 M events each.
constexpr int64_t kStatMax = INT64_C(1) << 52;

class ShardFields {
 public:
  explicit ShardFields(const std::string& name) : name_(name) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw UsageError(
        fmt::format("sweep-merge: {} is not a sweep shard report: \"{}\" {}", name_, field, what));
  }
  const nlohmann::json& at(const nlohmann::json& in, const std::string& path,
                           const char* field) const {
    if (!in.is_object() || !in.contains(field)) fail(path, "is missing");
    return in.at(field);
  }
  void integer(const nlohmann::json& in, const std::string& path, const char* field, int64_t min,
               int64_t max) const {
    if (!json_integer(at(in, path, field), min, max)) {
      fail(path, fmt::format("must be an integer in [{}, {}], got {}", min, max,
                             json_brief(in.at(field))));
    }
  }
  void unsigned_integer(const nlohmann::json& in, const std::string& path,
                        const char* field) const {
    if (!at(in, path, field).is_number_unsigned()) fail(path, "must be a non-negative integer");
  }
  void text(const nlohmann::json& in, const std::string& path, const char* field) const {
    if (!at(in, path, field).is_string()) fail(path, "must be a string");
  }
  // NAME -> count, each count in [0, max].
  void counts(const nlohmann::json& in, const std::string& path, const char* field,
              int64_t max) const {
    const nlohmann::json& v = at(in, path, field);
    if (!v.is_object()) fail(path, "must be an object of NAME: count");
    for (const auto& [name, n] : v.items()) {
      if (!json_integer(n, 0, max))
        fail(path + "." + name, fmt::format("must be a count in [0, {}]", max));
    }
  }
  void strings(const nlohmann::json& in, const std::string& path, const char* field) const {
    const nlohmann::json& v = at(in, path, field);
    if (!v.is_array()) fail(path, "must be an array of strings");
    for (const auto& item : v) {
      if (!item.is_string()) fail(path, "must be an array of strings");
    }
  }

 private:
  const std::string& name_;
};

}  // namespace

void check_shard_report(const std::string& name, const nlohmann::json& j) {
  const ShardFields f(name);
  if (!j.is_object()) f.fail("kind", "is missing (the file is not a JSON object)");
  f.text(j, "kind", "kind");
  if (j.at("kind") != "sweep") f.fail("kind", "must be \"sweep\"");
  f.text(j, "verdict", "verdict");
  f.text(j, "adapter", "adapter");
  f.unsigned_integer(j, "first_seed", "first_seed");
  const int64_t seeds_max = static_cast<int64_t>(kSweepSeedsMax);
  f.integer(j, "seeds", "seeds", 1, seeds_max);
  f.strings(j, "faults", "faults");
  f.text(j, "fencing", "fencing");
  if (j.contains("sets")) f.strings(j, "sets", "sets");
  const nlohmann::json& shard = f.at(j, "shard", "shard");
  f.integer(shard, "shard.count", "count", 1, static_cast<int64_t>(kShardCountMax));
  f.integer(shard, "shard.index", "index", 0, shard.at("count").get<int64_t>() - 1);
  const int64_t seeds = j.at("seeds").get<int64_t>();
  f.integer(j, "seeds_in_shard", "seeds_in_shard", 0, seeds);
  f.integer(j, "seeds_run", "seeds_run", 0, seeds);
  f.integer(j, "violating_seeds", "violating_seeds", 0, seeds);
  const nlohmann::json& list = f.at(j, "violating_seed_list", "violating_seed_list");
  if (!list.is_array() || list.size() > static_cast<size_t>(seeds)) {
    f.fail("violating_seed_list", "must be an array of at most \"seeds\" seeds");
  }
  for (const auto& seed : list) {
    if (!seed.is_number_unsigned()) f.fail("violating_seed_list", "must hold seeds");
  }
  f.counts(j, "violations", "violations", seeds);
  f.counts(j, "tolerated", "tolerated", seeds);
  f.counts(j, "excused_by", "excused_by", kStatMax);
  // Absent in reports written before it was counted.
  if (j.contains("excused_seeds_by")) f.counts(j, "excused_seeds_by", "excused_seeds_by", seeds);
  const nlohmann::json& drawn = f.at(j, "faults_drawn", "faults_drawn");
  if (!drawn.is_object()) f.fail("faults_drawn", "must be an object");
  for (const char* side : {"inside", "outside"}) {
    if (drawn.contains(side)) f.counts(drawn, std::string("faults_drawn.") + side, side, kStatMax);
  }
  const nlohmann::json& cxs = f.at(j, "counterexamples", "counterexamples");
  if (!cxs.is_array() || cxs.size() > kShrinkMax) {
    f.fail("counterexamples", fmt::format("must be an array of at most {}", kShrinkMax));
  }
  for (const auto& cx : cxs) {
    f.unsigned_integer(cx, "counterexamples[].seed", "seed");
    f.text(cx, "counterexamples[].invariant", "invariant");
    f.integer(cx, "counterexamples[].ops", "ops", 0, kStatMax);
    f.integer(cx, "counterexamples[].shrunk_ops", "shrunk_ops", 0, kStatMax);
    f.integer(cx, "counterexamples[].shrink_runs", "shrink_runs", 0, INT32_MAX);
    f.text(cx, "counterexamples[].replay", "replay");
  }
  const nlohmann::json& stats = f.at(j, "stats", "stats");
  for (const char* field : {"events", "ops", "sim_time_us", "wall_time_us"}) {
    f.integer(stats, std::string("stats.") + field, field, 0, kStatMax);
  }
}

nlohmann::json read_shard_report(const std::string& path) {
  nlohmann::json shard;
  try {
    shard = parse_json_bounded(read_input_file(path));
  } catch (const InputError& e) {
    throw UsageError(fmt::format("sweep-merge: {}", e.what()));
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(fmt::format("sweep-merge: {} is not a sweep report: {}", path, e.what()));
  }
  check_shard_report(path, shard);
  return shard;
}

}  // namespace lockstep
