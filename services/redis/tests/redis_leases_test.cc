// The simulated Redis records leases for whatever keys an adapter uses, so a user's lock is judged
// whatever its keys are called; and a lease run in which no lease was recorded is an error.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <catch2/catch.hpp>

#include "harness/usage_error.h"
#include "lockstep/redis.h"
#include "lockstep/registry.h"
#include "report/report.h"
#include "run/runner.h"
#include "services/known_bad.h"
#include "services/redis/adapter/redis_adapter.h"
#include "services/redis/backend/lease_events.h"

namespace lockstep {
namespace {

// The production Redis lock with no key prefix (keys are just the hash tag "{k}"), and with its extend or its grant replaced by one
// with a bug. Everything else is the production adapter's.
class UnprefixedRedis final : public LockAdapter {
 public:
  enum class Bug { none, extend_without_owner_check, grant_without_ttl };

  UnprefixedRedis(RedisConnection& connection, Bug bug)
      : connection_(connection),
        inner_({.connection = &connection, .key_prefix = "", .fencing_prefix = "fence:"}),
        bug_(bug) {}

  std::string_view name() const override { return "unprefixed-redis"; }
  FencingSupport fencing() const override { return inner_.fencing(); }
  AdapterResult create_lock(const LockSpec& spec) override {
    if (bug_ != Bug::grant_without_ttl) return inner_.create_lock(spec);
    const RedisResult r = connection_.command({"SET", inner_.lock_key(spec.key), spec.value, "NX"});
    if (!r.ok()) return {.status = AdapterStatus::backend_error, .message = r.message};
    const bool set = r.reply.type == RedisReply::Type::status;
    return {.status = set ? AdapterStatus::ok : AdapterStatus::contended};
  }
  AdapterResult release_lock(const LockSpec& spec) override { return inner_.release_lock(spec); }
  AdapterResult extend_lock(const LockSpec& spec, int64_t ttl_ms) override {
    if (bug_ != Bug::extend_without_owner_check) return inner_.extend_lock(spec, ttl_ms);
    const RedisResult r =
        connection_.command({"PEXPIRE", inner_.lock_key(spec.key), std::to_string(ttl_ms)});
    if (!r.ok()) return {.status = AdapterStatus::backend_error, .message = r.message};
    const bool extended = r.reply.type == RedisReply::Type::integer && r.reply.integer == 1;
    return {.status = extended ? AdapterStatus::ok : AdapterStatus::not_owner};
  }
  AdapterResult is_valid_lock(const LockSpec& spec) override { return inner_.is_valid_lock(spec); }

 private:
  RedisConnection& connection_;
  RedisAdapter inner_;
  Bug bug_;
};

const std::string& registered(const std::string& name, UnprefixedRedis::Bug bug) {
  if (find_adapter(name) == nullptr) {
    register_adapter({.name = name,
                      .description = "test: the Redis lock on unprefixed keys",
                      .worlds = {WorldKind::sim},
                      .traits = kRedisTraits,
                      .options = redis_backend_options(),
                      .make_sim = [bug](BackendEnv& env) {
                        return make_redis_sim_backend(env, [bug](RedisConnection& connection) {
                          return std::make_unique<UnprefixedRedis>(connection, bug);
                        });
                      }});
  }
  return find_adapter(name)->name;
}

// A catalogue scenario, for an adapter no scenario names: it applies by the adapter's traits.
RunReport run_for(const std::string& scenario_name, const std::string& adapter) {
  return run_scenario({.scenario = scenario_name, .adapter = adapter, .keep_trace = false});
}

int grants_on(const RunReport& report, const std::string& key) {
  int grants = 0;
  for (const HistoryEvent& e : report.history.events()) {
    grants += e.kind == EventKind::grant && e.key == key ? 1 : 0;
  }
  return grants;
}

TEST_CASE("leases are recorded for unprefixed keys, and a correct lock on them holds", "[leases]") {
  const RunReport report =
      run_for("stolen-lock", registered("test-unprefixed", UnprefixedRedis::Bug::none));
  CHECK(report.end == RunEnd::complete);
  CHECK(grants_on(report, "resource") >= 2);  // A's lease, then B's after it expired
  // As for the production Redis lock: A's pause outlasts its lease (mutual_exclusion), and
  // nothing else.
  CHECK(report.violated() == Expectation{Invariant::mutual_exclusion});
}

TEST_CASE("an unprefixed extend without owner check is caught by stolen-lock", "[leases]") {
  const RunReport report = run_for(
      "stolen-lock",
      registered("test-unprefixed-pexpire", UnprefixedRedis::Bug::extend_without_owner_check));
  CHECK(report.end == RunEnd::complete);
  CHECK(report.violated().count(Invariant::ownership) == 1);
}

TEST_CASE("a lease run in which acquires succeeded but no lease was recorded is an error",
          "[leases]") {
  const RunReport report = run_for(
      "sequential", registered("test-unprefixed-no-ttl", UnprefixedRedis::Bug::grant_without_ttl));
  CHECK(report.stats.acquisitions >= 2);
  CHECK(report.end == RunEnd::no_leases);
  CHECK_FALSE(report.ok());
  CHECK(report.end_message.find("recorded no lease") != std::string::npos);
}

}  // namespace
}  // namespace lockstep

namespace lockstep {
namespace {

RunReport failover_run(const std::string& adapter, std::vector<std::string> sets) {
  return run_scenario({.scenario = "failover", .adapter = adapter, .sets = std::move(sets)});
}

TEST_CASE("leases follow the lock across a failover: a release on the promoted replica closes it",
          "[leases][failover]") {
  // A's grant reaches the replica 10 ms later, long before the primary dies at 100 ms: the
  // promoted replica holds A's lock, A's release there ends A's lease, and B's grant after it is
  // no overlap. Judged per node, A's lease on the dead primary stayed open (a cry of wolf).
  const RunReport safe = failover_run("redis", {"replication_delay_ms=10"});
  INFO(to_text(safe));
  CHECK(safe.ok());
  CHECK(safe.matches_expectation());
  bool revoked_on_replica = false;
  for (const HistoryEvent& e : safe.history.events()) {
    revoked_on_replica |= e.kind == EventKind::revoke && e.client == 0 && e.server == "redis" &&
                          e.detail.find("redis-1") != std::string::npos;
  }
  CHECK(revoked_on_replica);
  // A grant the replica never received is lost with the primary: that overlap is still judged,
  // and excused only by the failover.
  const RunReport lost = failover_run("redis", {});
  REQUIRE(lost.violated().count(Invariant::lease_exclusion) +
              lost.violated().count(Invariant::mutual_exclusion) >
          0);
  for (const ReportedViolation& rv : lost.violations) {
    CHECK(rv.violation.excused());
    CHECK(lost.history[*rv.violation.excused_by].fault == FaultKind::failover);
  }
}

}  // namespace
}  // namespace lockstep

namespace lockstep {
namespace {

TEST_CASE("Mongo tokens are judged in the order the counter issued them", "[leases][mongo]") {
  // Two upserts without the unique index both win; the counter issues 1 then 2, but the second
  // client learns its token first. The bug loses exclusion, not fencing.
  register_known_bad_adapters();
  const RunReport r =
      run_scenario({.scenario = "concurrent-race", .adapter = "bad-mongo-no-unique", .seed = 2});
  INFO(to_text(r));
  CHECK(r.violated().count(Invariant::mutual_exclusion) == 1);
  CHECK(r.violated().count(Invariant::fencing) == 0);
  int issues = 0;
  for (const HistoryEvent& e : r.history.events()) issues += e.kind == EventKind::token ? 1 : 0;
  CHECK(issues == 2);
}

// A lock says once whether it has tokens (AdapterTraits::tokens); its adapter's fencing() tells
// the Locker to keep them. Two answers that disagree were silently accepted: the checkers judged
// the adapter's tokens while the expectations followed the traits. Now the run refuses it as bad
// usage, naming both, before anything is judged.
TEST_CASE("a lock whose traits and adapter disagree on its tokens is refused before it runs",
          "[leases][tokens]") {
  const std::string name = "test-tokens-twice";
  if (find_adapter(name) == nullptr) {
    AdapterTraits traits = kRedisTraits;
    traits.tokens = TokenKind::none;  // while the adapter hands out monotonic tokens
    register_adapter({.name = name,
                      .description = "test: tokens declared twice, differently",
                      .worlds = {WorldKind::sim},
                      .traits = traits,
                      .options = redis_backend_options(),
                      .make_sim = [](BackendEnv& env) {
                        return make_redis_sim_backend(env, [](RedisConnection& connection) {
                          return std::make_unique<UnprefixedRedis>(connection,
                                                                   UnprefixedRedis::Bug::none);
                        });
                      }});
  }
  try {
    run_for("sequential", name);
    FAIL("the run was not refused");
  } catch (const UsageError& e) {
    const std::string message = e.what();
    CHECK(message.find("declares tokens=none in its traits") != std::string::npos);
    CHECK(message.find("fencing() says monotonic") != std::string::npos);
  }
  // Declared alike, the same adapter runs.
  CHECK(run_for("sequential", registered("unprefixed-redis", UnprefixedRedis::Bug::none)).end ==
        RunEnd::complete);
}

// A user's lock reads time and draws randomness through the seams its factory is given: in the
// simulator, its client's simulated clock (which a clock fault reaches) and a source seeded by the
// run's seed and the client, so its runs reproduce. Before, a Redis factory got only a connection.
class SeamsRedis final : public LockAdapter {
 public:
  SeamsRedis(RedisConnection& connection, ClientSeams seams, std::vector<std::string>& seen)
      : inner_({.connection = &connection}), seams_(seams), seen_(seen) {}

  std::string_view name() const override { return "seams-redis"; }
  FencingSupport fencing() const override { return inner_.fencing(); }
  AdapterResult create_lock(const LockSpec& spec) override {
    seen_.push_back(
        fmt::format("{} {} {}", spec.key, seams_.clock.monotonic_us(), seams_.random.next_u64()));
    return inner_.create_lock(spec);
  }
  AdapterResult release_lock(const LockSpec& spec) override { return inner_.release_lock(spec); }
  AdapterResult extend_lock(const LockSpec& spec, int64_t ttl_ms) override {
    return inner_.extend_lock(spec, ttl_ms);
  }
  AdapterResult is_valid_lock(const LockSpec& spec) override { return inner_.is_valid_lock(spec); }

 private:
  RedisAdapter inner_;
  ClientSeams seams_;
  std::vector<std::string>& seen_;
};

TEST_CASE("a user's Redis lock gets its client's simulated clock and seeded random source",
          "[leases][seams]") {
  static std::vector<std::string> seen;
  const std::string name = "test-seams-redis";
  if (find_adapter(name) == nullptr) {
    register_adapter({.name = name,
                      .description = "test: a Redis lock that reads its seams",
                      .worlds = {WorldKind::sim},
                      .traits = kRedisTraits,
                      .options = redis_backend_options(),
                      .make_sim = [](BackendEnv& env) {
                        return make_redis_sim_backend(
                            env, [](RedisConnection& connection, ClientSeams seams) {
                              return std::make_unique<SeamsRedis>(connection, seams, seen);
                            });
                      }});
  }
  const auto draws = [&](uint64_t seed) {
    seen.clear();
    const RunReport r = run_scenario(
        {.scenario = "sequential", .adapter = name, .seed = seed, .keep_trace = false});
    CHECK(r.end == RunEnd::complete);
    return seen;
  };
  const std::vector<std::string> first = draws(1);
  REQUIRE(first.size() >= 2);
  // The same run reads the same clock readings and draws the same values: the machine's clocks
  // or the OS's randomness would never repeat.
  CHECK(draws(1) == first);
  CHECK(draws(2) != first);  // another seed, other values
}

}  // namespace
}  // namespace lockstep

namespace lockstep {
namespace {

// A lock whose lease lives in its value (ExpiryClock::client_value): its writes without a TTL are
// read as the leases they promise. The writer's clock is a stand-in here: deadline 5000 ms is
// 3000 ms of true time away for client 0, 1000 ms for client 1.
RedisLeaseEvents value_leases() {
  RedisLeaseEvents leases{"", /*hash_tagged=*/false, "redis"};
  leases.read_values([](int client, int64_t deadline_ms) {
    return (deadline_ms - (client == 0 ? 2000 : 4000)) * 1000;
  });
  return leases;
}

sim::KeyspaceEvent set_value(int client, std::string value) {
  return {.kind = sim::KeyspaceEvent::Kind::set,
          .key = "k",
          .value = std::move(value),
          .ttl_ms = -1,
          .client = client};
}

TEST_CASE("a value lease is granted to its owner for the writer's deadline", "[leases][value]") {
  RedisLeaseEvents leases = value_leases();
  const std::optional<HistoryEvent> grant = leases.on_event("redis-0", set_value(0, "a:1:5000"));
  REQUIRE(grant.has_value());
  CHECK(grant->kind == EventKind::grant);
  CHECK(grant->value == "a:1");  // the owner, as the client knows its lock
  CHECK(grant->ttl_us == 3'000'000);
  CHECK(grant->client == 0);

  // The owner's new deadline is an extend; another owner's write a grant over it (a takeover:
  // the checkers judge the overlap), read on the new writer's clock.
  const std::optional<HistoryEvent> extend = leases.on_event("redis-0", set_value(0, "a:1:6000"));
  REQUIRE(extend.has_value());
  CHECK(extend->kind == EventKind::extend);
  CHECK(extend->ttl_us == 4'000'000);
  const std::optional<HistoryEvent> takeover = leases.on_event("redis-0", set_value(1, "b:2:5000"));
  REQUIRE(takeover.has_value());
  CHECK(takeover->kind == EventKind::grant);
  CHECK(takeover->value == "b:2");
  CHECK(takeover->ttl_us == 1'000'000);

  // A compare-and-delete by the owner revokes the owner's lease.
  const std::optional<HistoryEvent> revoke = leases.on_event(
      "redis-0",
      {.kind = sim::KeyspaceEvent::Kind::del, .key = "k", .value = "b:2:5000", .client = 1});
  REQUIRE(revoke.has_value());
  CHECK(revoke->kind == EventKind::revoke);
  CHECK(revoke->value == "b:2");
}

TEST_CASE("a value lease's revoke names the owner of the value removed, as the node held it",
          "[leases][value]") {
  // The node's record of the key is stale (a replica that lost writes over a restart): the DEL
  // removes b's value, so it is b's revoke, not a removal of a's lease by b.
  RedisLeaseEvents leases = value_leases();
  REQUIRE(leases.on_event("redis-1", set_value(0, "a:1:5000")).has_value());
  const std::optional<HistoryEvent> revoke = leases.on_event(
      "redis-1",
      {.kind = sim::KeyspaceEvent::Kind::del, .key = "k", .value = "b:2:5000", .client = 1});
  REQUIRE(revoke.has_value());
  CHECK(revoke->value == "b:2");
}

TEST_CASE("a deadline already past is a lease of no length, never a negative one",
          "[leases][value]") {
  RedisLeaseEvents leases = value_leases();
  const std::optional<HistoryEvent> grant = leases.on_event("redis-0", set_value(1, "a:1:3000"));
  REQUIRE(grant.has_value());
  CHECK(grant->ttl_us == 0);
}

TEST_CASE("values are read as leases only when the lock declares so, and only in their form",
          "[leases][value]") {
  RedisLeaseEvents keys_only{"", /*hash_tagged=*/false, "redis"};
  CHECK_FALSE(keys_only.on_event("redis-0", set_value(0, "a:1:5000")).has_value());
  RedisLeaseEvents leases = value_leases();
  CHECK_FALSE(leases.on_event("redis-0", set_value(0, "no-deadline")).has_value());
  // A key written with a TTL is a TTL lease, whatever its value says.
  sim::KeyspaceEvent with_ttl = set_value(0, "a:1:5000");
  with_ttl.ttl_ms = 700;
  const std::optional<HistoryEvent> grant = leases.on_event("redis-0", with_ttl);
  REQUIRE(grant.has_value());
  CHECK(grant->ttl_us == 700'000);
}

}  // namespace
}  // namespace lockstep
