// Files read back (a replay file's workload, a sweep shard) are checked at the reader with the
// command line's bounds (issue 34: each of these once reached the simulator or an allocation and
// ended as an internal error, or took gigabytes).
#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "explore/shard_input.h"
#include "explore/spec_input.h"
#include "explore/swarm.h"
#include "explore/sweep.h"
#include "harness/usage_error.h"
#include "lockstep/registry.h"

namespace lockstep {
namespace {

nlohmann::json drawn_workload() { return to_json(draw_swarm_spec(swarm_capabilities("redis"), 7)); }

std::string refusal(const nlohmann::json& workload) {
  try {
    check_swarm_workload(workload);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "accepted";
}

TEST_CASE("every drawn workload is within the replay reader's bounds", "[sweep][input]") {
  for (const char* adapter :
       {"memory", "redis", "redlock", "mongo", "keyed-rw", "fifo", "postgres-session"}) {
    const SwarmCapabilities caps = swarm_capabilities(adapter);
    for (uint64_t seed = 1; seed <= 400; ++seed) {
      INFO(adapter << " seed " << seed);
      CHECK(refusal(to_json(draw_swarm_spec(caps, seed))) == "accepted");
    }
  }
}

TEST_CASE("a workload's numbers past the command line's bounds are refused, named",
          "[sweep][input]") {
  nlohmann::json w = drawn_workload();
  REQUIRE(refusal(w) == "accepted");
  REQUIRE(!w["clients"].empty());
  w["clients"][0]["drift_ppm"] = 1'000'000;
  CHECK(refusal(w) ==
        "the report's workload cannot be replayed: \"clients[0].drift_ppm\" must be an integer "
        "in [-900000, 900000], got 1000000");
  w = drawn_workload();
  w["ttl_ms"] = 86'400'001;
  CHECK(refusal(w) ==
        "the report's workload cannot be replayed: \"ttl_ms\" must be an integer in [1, "
        "86400000], got 86400001");
  w = drawn_workload();
  w["retry_times"] = 4294967296;  // read as an int, it was 0
  CHECK(refusal(w).find("\"retry_times\" must be an integer in [0, 1000000]") != std::string::npos);
  w = drawn_workload();
  w["faults"] = nlohmann::json::array(
      {{{"kind", "pause"}, {"at_ms", 1}, {"duration_ms", -5}, {"client", 0}, {"amount", 0}}});
  CHECK(refusal(w).find("\"faults[0].duration_ms\" must be an integer in [0, 86400000]") !=
        std::string::npos);
  // A step's own TTLs and lateness, and a fault's server: read as int, 2^31 once reached the
  // client's TTL check as an internal error (exit 70).
  w = drawn_workload();
  REQUIRE(!w["clients"][0]["steps"].empty());
  w["clients"][0]["steps"][0]["ttl_ms"] = 2147483648;
  CHECK(refusal(w) ==
        "the report's workload cannot be replayed: \"clients[0].steps[0].ttl_ms\" must be an "
        "integer in [0, 86400000], got 2147483648");
  w = drawn_workload();
  w["clients"][0]["steps"][0]["extend_ttl_ms"] = -1;
  CHECK(refusal(w).find("\"clients[0].steps[0].extend_ttl_ms\" must be an integer in [0, "
                        "86400000]") != std::string::npos);
  w = drawn_workload();
  w["clients"][0]["steps"][0]["late_ms"] = -2;
  CHECK(refusal(w).find("\"clients[0].steps[0].late_ms\" must be an integer in [-1, "
                        "86400000]") != std::string::npos);
  w = drawn_workload();
  w["faults"] = nlohmann::json::array({{{"kind", "server-restart"},
                                        {"at_ms", 1},
                                        {"duration_ms", 0},
                                        {"client", 0},
                                        {"server", 4294967296},
                                        {"amount", 10}}});
  CHECK(refusal(w).find("\"faults[0].server\" must be an integer in [0, 1000]") !=
        std::string::npos);
  w = drawn_workload();
  w["clients"][0]["concurrent"] = "yes";
  CHECK(refusal(w).find("\"clients[0].concurrent\"") != std::string::npos);
  w = drawn_workload();
  w["keys"] = 1.5;
  CHECK(refusal(w).find("\"keys\" must be an integer") != std::string::npos);
}

// A sweep's --set replicas=0 overrode the replicas=1 the swarm sets for a seed that fails over:
// the run could not fail over and the sweep ended as an internal error (exit 70).
TEST_CASE("a sweep refuses --set of what the swarm sets for each seed", "[sweep][input]") {
  const auto refusal_of = [](const std::string& set) -> std::string {
    try {
      check_sweep_sets("redis", {set});
    } catch (const UsageError& e) {
      return e.what();
    }
    return "accepted";
  };
  CHECK(refusal_of("persistence=always") == "accepted");
  CHECK(refusal_of("replicas=0").find("--set replicas: the swarm sets it for each seed") == 0);
  CHECK(refusal_of("replication_delay_ms=5").find("--set replication_delay_ms: the swarm sets") ==
        0);
  CHECK(refusal_of("nope=1").find("not an option of adapter redis") != std::string::npos);
  // A matrix runs named scenarios: replicas is the adapter's option there.
  CHECK_NOTHROW(check_adapter_sets("redis", {"replicas=1"}));
}

nlohmann::json shard() {
  SweepConfig config{.adapter = "memory", .seeds = 4, .shard_count = 2, .jobs = 1};
  return to_json(run_sweep(config));
}

std::string shard_refusal(const nlohmann::json& j) {
  try {
    check_shard_report("s.json", j);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "accepted";
}

TEST_CASE("a shard report's fields are checked before the merge sizes anything from them",
          "[sweep][input]") {
  const nlohmann::json good = shard();
  REQUIRE(shard_refusal(good) == "accepted");
  nlohmann::json s = good;
  s["shard"]["count"] = 30'000'000;  // a 200-byte file once took 3.8 GB and printed 559 MB
  CHECK(shard_refusal(s) ==
        "sweep-merge: s.json is not a sweep shard report: \"shard.count\" must be an integer in "
        "[1, 1000000], got 30000000");
  s = good;
  s["shard"]["count"] = -1;
  CHECK(shard_refusal(s).find("\"shard.count\" must be an integer") != std::string::npos);
  s = good;
  s.erase("adapter");
  CHECK(shard_refusal(s) ==
        "sweep-merge: s.json is not a sweep shard report: \"adapter\" is missing");
  s = good;
  s.erase("fencing");
  CHECK(shard_refusal(s) ==
        "sweep-merge: s.json is not a sweep shard report: \"fencing\" is missing");
  s = good;
  s["stats"]["events"] = "many";
  CHECK(shard_refusal(s).find("\"stats.events\" must be an integer") != std::string::npos);
  s = good;
  s["violations"] = {{"mutual_exclusion", 4294967296}};
  CHECK(shard_refusal(s).find("\"violations.mutual_exclusion\" must be a count") !=
        std::string::npos);
}

TEST_CASE("merging names a few missing shards and how many more, on one short line",
          "[sweep][input]") {
  nlohmann::json s = shard();
  s["shard"] = {{"index", 0}, {"count", 1'000'000}};
  try {
    merge_sweeps({s});
    FAIL("merged");
  } catch (const UsageError& e) {
    const std::string what = e.what();
    CHECK(what ==
          "sweep-merge: missing shards: 1/1000000, 2/1000000, 3/1000000, 4/1000000, 5/1000000 "
          "and 999994 more");
  }
}

}  // namespace
}  // namespace lockstep
