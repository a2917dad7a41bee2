#include "services/known_bad.h"

#include <functional>

#include "services/keyed/backend/keyed_backend.h"
#include "services/keyed/known_bad/bad_fifo_clear_admits.h"
#include "services/keyed/known_bad/bad_rw_lost_wakeup.h"
#include "services/keyed/known_bad/bad_rw_reader_preference.h"
#include "services/memory/backend/memory_backend.h"
#include "services/memory/known_bad/known_bad_memory.h"
#include "services/mongo/backend/mongo_backend.h"
#include "services/mongo/known_bad/known_bad_mongo.h"
#include "services/redis/backend/redis_backend.h"
#include "services/redis/known_bad/known_bad_redis.h"
#include "services/redlock/backend/redlock_backend.h"
#include "services/redlock/known_bad/known_bad_redlock.h"
#include "services/registry.h"

namespace lockstep {

namespace {

// The scenarios whose cells judge each family of known-bad locks: where the one bug shows, and
// where the correct sibling's safety must still show (docs/DESIGN.md, "Known-bad adapters").
const std::vector<std::string> kLeaseScenarios = {
    "sequential",          "concurrent-race", "crash-holder", "stolen-lock",
    "extend-after-expiry", "gc-pause",        "clock-drift",  "retry-storm"};
const std::vector<std::string> kRedisScenarios = {
    "sequential",      "concurrent-race",     "crash-holder", "crash-in-acquire",
    "stolen-lock",     "extend-after-expiry", "gc-pause",     "clock-drift",
    "retry-storm",     "slow-acquire",        "failover",     "partition",
    "pause-in-release"};
const std::vector<std::string> kRedlockScenarios = {"clock-jump", "crash-restart", "split-vote",
                                                    "slow-acquire", "slow-grant"};

// A known-bad lock: its sibling's traits with the one thing it gets wrong.
struct KnownBad {
  const char* name;
  const char* breaks;
  const char* description;
  void (*wrong)(AdapterTraits& traits);
  const std::vector<std::string>* judged_in;
};

const KnownBad kKnownBadRedis[] = {
    {"bad-del-release", "ownership", "known-bad: release by plain DEL",
     [](AdapterTraits& t) { t.release = OwnerCheck::none; }, &kRedisScenarios},
    {"bad-get-del-release", "ownership", "known-bad: release by GET, then DEL in a second call",
     [](AdapterTraits& t) { t.release = OwnerCheck::check_then_act; }, &kRedisScenarios},
    {"bad-pexpire-extend", "ownership", "known-bad: extend by plain PEXPIRE",
     [](AdapterTraits& t) { t.extend = OwnerCheck::none; }, &kRedisScenarios},
    {"bad-setnx-expire", "liveness",
     "known-bad: SETNX, then PEXPIRE in a second call (a crash between leaks)",
     [](AdapterTraits& t) { t.expiry_with_grant = false; }, &kRedisScenarios},
};

const std::vector<std::string> kRandomTokenScenarios = {"retry-storm"};
const std::vector<std::string> kLossSignalScenarios = {"lost-extension"};
const KnownBad kBadLateLossSignal = {
    "bad-late-loss-signal", "mutual_exclusion",
    "known-bad: a lock believed held until an extension fails (no validity of its own), so an "
    "auto-extending holder hears of a loss only when the failed extension times out",
    [](AdapterTraits& t) { t.validity = ValidityRule::until_extension_fails; },
    &kLossSignalScenarios};
const KnownBad kBadRandomToken = {
    "bad-random-token", "fencing", "known-bad: random instead of monotonic fencing tokens",
    [](AdapterTraits& t) { t.tokens = TokenKind::random; }, &kRandomTokenScenarios};

const KnownBad kKnownBadRedlock[] = {
    {"bad-redlock-half-quorum", "mutual_exclusion",
     "known-bad: Redlock that counts N/2 grants as a majority",
     [](AdapterTraits& t) { t.majority_quorum = false; }, &kRedlockScenarios},
    {"bad-redlock-no-elapsed", "mutual_exclusion",
     "known-bad: Redlock whose validity ignores the time spent acquiring",
     [](AdapterTraits& t) { t.validity = ValidityRule::ttl_ignoring_elapsed; }, &kRedlockScenarios},
    {"bad-redlock-double-elapsed", "valid_on_return",
     "known-bad: Redlock that subtracts the time spent acquiring twice (returns expired locks)",
     [](AdapterTraits& t) { t.validity = ValidityRule::ttl_minus_elapsed_twice; },
     &kRedlockScenarios},
    {"bad-redlock-no-cleanup", "liveness",
     "known-bad: Redlock that leaves partial locks after a failed attempt",
     [](AdapterTraits& t) { t.releases_partial_grants = false; }, &kRedlockScenarios},
};

AdapterTraits with_wrong(AdapterTraits traits, const KnownBad& bad) {
  bad.wrong(traits);
  return traits;
}

// A known-bad lock over its correct sibling's backend: the sibling's traits and options, with its
// one thing wrong, and a backend built by make_sim(name).
void register_bad(const KnownBad& bad, const std::string& sibling_name,
                  const AdapterTraits& sibling, const std::vector<OptionSpec>& options,
                  const std::function<BackendFactory(const std::string& name)>& make_sim) {
  register_adapter({.name = bad.name,
                    .description = bad.description,
                    .worlds = {WorldKind::sim},
                    .traits = with_wrong(sibling, bad),
                    .known_bad = true,
                    .breaks = bad.breaks,
                    .judged_in = *bad.judged_in,
                    .sibling = sibling_name,
                    .options = options,
                    .make_sim = make_sim(bad.name)});
}

void register_redis(const KnownBad& bad) {
  register_bad(bad, "redis", kRedisTraits, redis_backend_options(), [](const std::string& name) {
    return [name](BackendEnv& env) {
      return make_redis_sim_backend(env, [name](RedisConnection& connection) {
        return make_known_bad_redis_adapter(name, connection);
      });
    };
  });
}

void register_redlock(const KnownBad& bad) {
  register_bad(bad, "redlock", kRedlockTraits, redlock_backend_options(),
               [](const std::string& name) {
                 return [name](BackendEnv& env) {
                   return make_redlock_sim_backend(env, [name](RedlockAdapterParts& parts) {
                     return make_known_bad_redlock_adapter(name, parts);
                   });
                 };
               });
}

}  // namespace

void register_known_bad_adapters() {
  if (find_adapter("bad-memory-no-owner-check") != nullptr) return;
  for (const KnownBad& bad : kKnownBadRedis) register_redis(bad);
  register_redis(kBadRandomToken);
  register_redis(kBadLateLossSignal);
  for (const KnownBad& bad : kKnownBadRedlock) register_redlock(bad);
  register_adapter({
      .name = "bad-memory-no-owner-check",
      .description =
          "known-bad: the in-memory lock whose release deletes whatever lock holds the key",
      .worlds = {WorldKind::sim},
      .traits = with_wrong(kMemoryTraits,
                           {.wrong = [](AdapterTraits& t) { t.release = OwnerCheck::none; }}),
      .known_bad = true,
      .breaks = "ownership",
      .judged_in = kLeaseScenarios,
      .sibling = "memory",
      .make_sim =
          [](BackendEnv& env) {
            return make_memory_backend(env, [](MemoryAdapter& store) {
              return std::make_unique<BadMemoryNoOwnerCheck>(store);
            });
          },
  });
  register_adapter({
      .name = "bad-wall-clock-expiry",
      .description = "known-bad: the in-memory lock whose store times its leases on the wall "
                     "clock (a forward jump ends them early)",
      .worlds = {WorldKind::sim},
      .traits = with_wrong(
          kMemoryTraits, {.wrong = [](AdapterTraits& t) { t.server_expiry = ExpiryClock::wall; }}),
      .known_bad = true,
      .breaks = "mutual_exclusion",
      .judged_in = {"sequential", "stolen-lock", "server-clock-jump"},
      .sibling = "memory",
      .make_sim =
          [](BackendEnv& env) {
            return make_memory_backend(env, {}, [](Clock& node_clock) {
              return std::make_unique<WallClockAsMonotonic>(node_clock);
            });
          },
  });
  register_adapter({
      .name = "bad-mongo-no-unique",
      .description =
          "known-bad: the Mongo lock without the unique index on key (two upserts both insert)",
      .worlds = {WorldKind::sim},
      .traits =
          with_wrong(kMongoTraits, {.wrong = [](AdapterTraits& t) { t.exclusive_grant = false; }}),
      .known_bad = true,
      .breaks = "mutual_exclusion",
      .judged_in = {"concurrent-race"},
      .sibling = "mongo",
      .options = mongo_backend_options(),
      .make_sim =
          [](BackendEnv& env) { return make_mongo_sim_backend(env, make_bad_mongo_no_unique); },
  });
  register_adapter({
      .name = "bad-rw-reader-preference",
      .description = "known-bad: keyed-rw whose readers pass a queued writer (reader preference "
                     "starves writers)",
      .worlds = {WorldKind::sim},
      .traits =
          with_wrong(kKeyedRwTraits, {.wrong = [](AdapterTraits& t) { t.writers_first = false; }}),
      .known_bad = true,
      .breaks = "writer_preference",
      .sibling = "keyed-rw",
      .make_sim =
          [](BackendEnv& env) {
            return make_keyed_rw_sim_backend(env, std::make_unique<ReaderPreferenceRwCore>());
          },
  });
  register_adapter({
      .name = "bad-rw-lost-wakeup",
      .description = "known-bad: keyed-rw whose last release forgets to wake a queued writer (it "
                     "stays parked for good)",
      .worlds = {WorldKind::sim},
      .traits =
          with_wrong(kKeyedRwTraits, {.wrong = [](AdapterTraits& t) { t.wakes_waiters = false; }}),
      .known_bad = true,
      .breaks = "liveness",
      .judged_in = {"writer-starvation"},
      .sibling = "keyed-rw",
      .make_sim =
          [](BackendEnv& env) {
            return make_keyed_rw_sim_backend(env, std::make_unique<LostWakeupRwCore>());
          },
  });
  register_adapter({
      .name = "bad-fifo-clear-admits",
      .description = "known-bad: the FIFO keyed lock whose clear() drops the running holders, so a "
                     "caller after it runs beside one",
      .worlds = {WorldKind::sim},
      .traits = with_wrong(kFifoTraits,
                           {.wrong = [](AdapterTraits& t) { t.clear_keeps_exclusion = false; }}),
      .known_bad = true,
      .breaks = "mutual_exclusion",
      .judged_in = {"fifo-queue"},
      .sibling = "fifo",
      .options = fifo_backend_options(),
      .make_sim =
          [](BackendEnv& env) {
            return make_fifo_sim_backend(env, [](keyed::FifoLimits limits) {
              return std::unique_ptr<keyed::FifoCore>(
                  std::make_unique<ClearAdmitsFifoCore>(limits));
            });
          },
  });
}

}  // namespace lockstep
