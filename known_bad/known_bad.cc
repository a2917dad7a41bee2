#include "known_bad/known_bad.h"

#include "known_bad/bad_rw_reader_preference.h"
#include "known_bad/known_bad_memory.h"
#include "known_bad/known_bad_mongo.h"
#include "known_bad/known_bad_redis.h"
#include "known_bad/known_bad_redlock.h"
#include "scenarios/backends/keyed.h"
#include "scenarios/backends/memory.h"
#include "scenarios/backends/mongo.h"
#include "scenarios/backends/redis.h"
#include "scenarios/backends/redlock.h"
#include "scenarios/backends/registry.h"

namespace lockstep {

namespace {

struct KnownBad {
  const char* name;
  const char* breaks;
  const char* description;
};

constexpr KnownBad kKnownBadRedis[] = {
    {"bad-del-release", "ownership", "known-bad: release by plain DEL"},
    {"bad-get-del-release", "ownership", "known-bad: release by GET, then DEL in a second call"},
    {"bad-pexpire-extend", "ownership", "known-bad: extend by plain PEXPIRE"},
    {"bad-setnx-expire", "liveness",
     "known-bad: SETNX, then PEXPIRE in a second call (a crash between leaks)"},
    {"bad-random-token", "fencing", "known-bad: random instead of monotonic fencing tokens"},
};

constexpr KnownBad kKnownBadRedlock[] = {
    {"bad-redlock-half-quorum", "mutual_exclusion",
     "known-bad: Redlock that counts N/2 grants as a majority"},
    {"bad-redlock-no-elapsed", "mutual_exclusion",
     "known-bad: Redlock whose validity ignores the time spent acquiring"},
    {"bad-redlock-no-cleanup", "liveness",
     "known-bad: Redlock that leaves partial locks after a failed attempt"},
};

// Registers a family of simulator-only known-bad adapters; make_sim(name) builds each backend.
template <size_t N>
void register_family(const KnownBad (&family)[N], FaultCapabilities sim_faults,
                     const std::vector<OptionSpec>& options,
                     const std::function<BackendFactory(const std::string& name)>& make_sim) {
  for (const KnownBad& bad : family) {
    register_adapter({.name = bad.name,
                      .description = bad.description,
                      .worlds = {"sim"},
                      .sim_faults = sim_faults,
                      .known_bad = true,
                      .breaks = bad.breaks,
                      .options = options,
                      .make_sim = make_sim(bad.name)});
  }
}

void register_known_bad_redis() {
  register_family(kKnownBadRedis, kRedisSimFaults, redis_backend_options(),
                  [](const std::string& name) -> BackendFactory {
                    return [name](BackendEnv& env) {
                      return make_redis_sim_backend(env, [name](RedisConnection& connection) {
                        return make_known_bad_redis_adapter(name, connection);
                      });
                    };
                  });
}

void register_known_bad_redlock() {
  register_family(kKnownBadRedlock, kRedlockSimFaults, redlock_backend_options(),
                  [](const std::string& name) -> BackendFactory {
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
  register_known_bad_redis();
  register_known_bad_redlock();
  register_adapter({
      .name = "bad-memory-no-owner-check",
      .description =
          "known-bad: the in-memory lock whose release deletes whatever lock holds the key",
      .worlds = {"sim"},
      .sim_faults = kMemorySimFaults,
      .known_bad = true,
      .breaks = "ownership",
      .make_sim =
          [](BackendEnv& env) {
            return make_memory_backend(env, [](MemoryAdapter& store) {
              return std::make_unique<BadMemoryNoOwnerCheck>(store);
            });
          },
  });
  register_adapter({
      .name = "bad-mongo-no-unique",
      .description =
          "known-bad: the Mongo lock without the unique index on key (two upserts both insert)",
      .worlds = {"sim"},
      .sim_faults = kMongoSimFaults,
      .known_bad = true,
      .breaks = "mutual_exclusion",
      .options = mongo_backend_options(),
      .make_sim =
          [](BackendEnv& env) { return make_mongo_sim_backend(env, make_bad_mongo_no_unique); },
  });
  register_adapter({
      .name = "bad-rw-reader-preference",
      .description = "known-bad: keyed-rw whose readers pass a queued writer (reader preference "
                     "starves writers)",
      .worlds = {"sim"},
      .family = LockFamily::keyed_rw,
      .known_bad = true,
      .breaks = "writer_preference",
      .make_sim =
          [](BackendEnv& env) {
            return make_keyed_rw_sim_backend(env, std::make_unique<ReaderPreferenceRwCore>());
          },
  });
}

}  // namespace lockstep
