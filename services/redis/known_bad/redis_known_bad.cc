#include "services/redis/known_bad/redis_known_bad.h"

#include "harness/known_bad.h"
#include "lockstep/redis.h"
#include "services/redis/known_bad/known_bad_redis.h"
#include "services/service.h"

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
    {"bad-del-release", "ownership",
     // a lease must end while its holder works, and another take the key before its DEL.
     0.2, "known-bad: release by plain DEL", [](AdapterTraits& t) { t.release = OwnerCheck::none; },
     kRedisScenarios},
    {"bad-get-del-release", "ownership",
     // the lease must end and change hands between one release's GET and DEL: a narrow window.
     0.005, "known-bad: release by GET, then DEL in a second call",
     [](AdapterTraits& t) { t.release = OwnerCheck::check_then_act; }, kRedisScenarios},
    {"bad-pexpire-extend", "ownership",
     // a holder must extend after its lease ended and another client took the key.
     0.06, "known-bad: extend by plain PEXPIRE",
     [](AdapterTraits& t) { t.extend = OwnerCheck::none; }, kRedisScenarios},
    {"bad-setnx-expire", "liveness",
     // a client must die between its SETNX and its PEXPIRE (a crash while acquiring).
     0.12, "known-bad: SETNX, then PEXPIRE in a second call (a crash between leaks)",
     [](AdapterTraits& t) { t.expiry_with_grant = false; }, kRedisScenarios},
    {"bad-random-token",
     "fencing",
     // a key held twice with fenced writes: a random token goes backwards half the time.
     0.77,
     "known-bad: random instead of monotonic fencing tokens",
     [](AdapterTraits& t) { t.tokens = TokenKind::random; },
     {"retry-storm"}},
    {"bad-late-loss-signal",
     "mutual_exclusion",
     // an auto-extending holder's extension must fail while it works and another take the key.
     0.62,
     "known-bad: a lock believed held until an extension fails (no validity of its own), so an "
     "auto-extending holder hears of a loss only when the failed extension times out",
     [](AdapterTraits& t) { t.validity = ValidityRule::until_extension_fails; },
     {"lost-extension"}},
    {"bad-refused-extend-ok",
     "valid_on_return",
     // an extend must be refused (its lease ended first) or lose its reply: 26% of seeds 1..1000.
     0.15,
     "known-bad: an extend reported done though the server refused it or its reply never came, "
     "so the holder's validity moves on and lost() stays false",
     [](AdapterTraits& t) { t.validity = ValidityRule::extends_even_when_refused; },
     {"extend-after-expiry"}},
    {"bad-unknown-as-error",
     "error_not_applied",
     // a write must be applied and its reply lost (a one-way cut, a loss, a timeout).
     0.05,
     "known-bad: a write whose reply never came reported as an error (nothing happened) instead "
     "of an unknown outcome",
     [](AdapterTraits& t) { t.unknown_outcomes_reported = false; },
     {"lost-reply"}},
    {"bad-ungated-watchdog",
     "fencing",
     // a renewal and a concurrent client's acquire must wait on the connection at once, and the
     // acquire read the renewal's 1 as a grant with token 1 (5.7% of seeds 1..1000; the named
     // scenario shared-client catches it in every seed of 1..30).
     0.04,
     "known-bad: renews its own leases on a background task over the caller's connection, "
     "without taking turns with the caller's calls, so a reply can reach the wrong caller",
     [](AdapterTraits& t) { t.calls_take_turns = false; },
     {"shared-client"}},
};

}  // namespace

std::vector<AdapterEntry> redis_known_bad() {
  const AdapterEntry& redis = production_adapter("redis");
  std::vector<AdapterEntry> entries;
  for (const KnownBad& bad : kKnownBadRedis) {
    entries.push_back(known_bad_entry(bad, redis, [name = bad.name](BackendEnv& env) {
      return make_redis_sim_backend(env, [name](RedisConnection& connection, ClientSeams seams) {
        return make_known_bad_redis_adapter(name, connection, seams);
      });
    }));
  }
  return entries;
}

}  // namespace lockstep
