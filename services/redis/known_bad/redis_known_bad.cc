#include "services/redis/known_bad/redis_known_bad.h"

#include "harness/known_bad.h"
#include "services/redis/backend/redis_backend.h"
#include "services/redis/known_bad/known_bad_redis.h"

namespace lockstep {

namespace {

// Where the one bug of each shows, and where the correct sibling's safety must still show
// (docs/DESIGN.md, "Known-bad adapters").
const std::vector<std::string> kRedisScenarios = {
    "sequential",      "concurrent-race",     "crash-holder", "crash-in-acquire",
    "stolen-lock",     "extend-after-expiry", "gc-pause",     "clock-drift",
    "retry-storm",     "slow-acquire",        "failover",     "partition",
    "pause-in-release"};

const std::vector<KnownBad> kKnownBadRedis = {
    {"bad-del-release", "ownership", "known-bad: release by plain DEL",
     [](AdapterTraits& t) { t.release = OwnerCheck::none; }, kRedisScenarios},
    {"bad-get-del-release", "ownership", "known-bad: release by GET, then DEL in a second call",
     [](AdapterTraits& t) { t.release = OwnerCheck::check_then_act; }, kRedisScenarios},
    {"bad-pexpire-extend", "ownership", "known-bad: extend by plain PEXPIRE",
     [](AdapterTraits& t) { t.extend = OwnerCheck::none; }, kRedisScenarios},
    {"bad-setnx-expire", "liveness",
     "known-bad: SETNX, then PEXPIRE in a second call (a crash between leaks)",
     [](AdapterTraits& t) { t.expiry_with_grant = false; }, kRedisScenarios},
    {"bad-random-token",
     "fencing",
     "known-bad: random instead of monotonic fencing tokens",
     [](AdapterTraits& t) { t.tokens = TokenKind::random; },
     {"retry-storm"}},
    {"bad-late-loss-signal",
     "mutual_exclusion",
     "known-bad: a lock believed held until an extension fails (no validity of its own), so an "
     "auto-extending holder hears of a loss only when the failed extension times out",
     [](AdapterTraits& t) { t.validity = ValidityRule::until_extension_fails; },
     {"lost-extension"}},
};

}  // namespace

std::vector<AdapterEntry> redis_known_bad(const AdapterEntry& redis) {
  std::vector<AdapterEntry> entries;
  for (const KnownBad& bad : kKnownBadRedis) {
    entries.push_back(known_bad_entry(bad, redis, [name = bad.name](BackendEnv& env) {
      return make_redis_sim_backend(env, [name](RedisConnection& connection) {
        return make_known_bad_redis_adapter(name, connection);
      });
    }));
  }
  return entries;
}

}  // namespace lockstep
