#include "property_tests/known_bad.h"

#include "property_tests/bad_rw_reader_preference.h"
#include "property_tests/known_bad_mongo.h"
#include "property_tests/known_bad_redis.h"
#include "property_tests/known_bad_redlock.h"
#include "scenarios/backend.h"
#include "scenarios/keyed_backend.h"
#include "scenarios/mongo_backend.h"
#include "scenarios/redis_backend.h"
#include "scenarios/redlock_backend.h"

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
    {"bad-setnx-expire", "liveness", "known-bad: SETNX, then PEXPIRE in a second call (a crash between leaks)"},
    {"bad-random-token", "fencing", "known-bad: random instead of monotonic fencing tokens"},
};

constexpr KnownBad kKnownBadRedlock[] = {
    {"bad-redlock-half-quorum", "mutual_exclusion", "known-bad: Redlock that counts N/2 grants as a majority"},
    {"bad-redlock-no-elapsed", "mutual_exclusion", "known-bad: Redlock whose validity ignores the time spent acquiring"},
    {"bad-redlock-no-cleanup", "liveness", "known-bad: Redlock that leaves partial locks after a failed attempt"},
};

// Registers a family of simulator-only known-bad adapters; make_sim(name) builds each backend.
template <size_t N>
void register_family(const KnownBad (&family)[N], const std::vector<OptionSpec>& options,
                     const std::function<BackendFactory(const std::string& name)>& make_sim) {
  for (const KnownBad& bad : family) {
    register_adapter({.name = bad.name,
                      .description = bad.description,
                      .worlds = {"sim"},
                      .known_bad = true,
                      .breaks = bad.breaks,
                      .options = options,
                      .make_sim = make_sim(bad.name)});
  }
}

void register_known_bad_redis() {
  register_family(kKnownBadRedis, redis_backend_options(), [](const std::string& name) -> BackendFactory {
    return [name](BackendEnv& env) {
      return make_redis_sim_backend(
          env, [name](RedisConnection& connection) { return make_known_bad_redis_adapter(name, connection); });
    };
  });
}

void register_known_bad_redlock() {
  register_family(kKnownBadRedlock, redlock_backend_options(), [](const std::string& name) -> BackendFactory {
    return [name](BackendEnv& env) {
      return make_redlock_sim_backend(
          env, [name](RedlockAdapterParts& parts) { return make_known_bad_redlock_adapter(name, parts); });
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
      .description = "known-bad: the in-memory lock whose release deletes whatever lock holds the key",
      .worlds = {"sim"},
      .known_bad = true,
      .breaks = "ownership",
      .make_sim = [](BackendEnv& env) { return make_memory_backend(env, /*bad_release_without_owner_check=*/true); },
  });
  register_adapter({
      .name = "bad-mongo-no-unique",
      .description = "known-bad: the Mongo lock without the unique index on key (two upserts both insert)",
      .worlds = {"sim"},
      .known_bad = true,
      .breaks = "mutual_exclusion",
      .options = mongo_backend_options(),
      .make_sim = [](BackendEnv& env) { return make_mongo_sim_backend(env, make_bad_mongo_no_unique); },
  });
  register_adapter({
      .name = "bad-rw-reader-preference",
      .description = "known-bad: keyed-rw whose readers pass a queued writer (reader preference starves writers)",
      .worlds = {"sim"},
      .known_bad = true,
      .breaks = "writer_preference",
      .make_sim = [](BackendEnv& env) { return make_keyed_rw_sim_backend(env, std::make_unique<ReaderPreferenceRwCore>()); },
  });
}

}  // namespace lockstep
