#include "services/postgres/backend/postgres_service.h"

#include <fmt/format.h>

#include "lockstep/options.h"
#include "services/postgres/backend/postgres_backend.h"

namespace lockstep {

std::vector<OptionSpec> postgres_backend_options(AdvisoryMode mode) {
  std::vector<OptionSpec> options{
      {.name = "command_timeout_ms",
       .default_value = "1000",
       .help = "client statement timeout (a timed-out session is closed)",
       .min = 1,
       .max = 60'000},
      {.name = "fencing_token",
       .default_value = "none",
       .help = "fencing tokens from a sequence, taken with the lock in one statement",
       .choices = {"none", "sequence"}},
      {.name = "keepalive_idle_s",
       .default_value = "2",
       .help = "tcp_keepalives_idle of the lock's sessions",
       .min = 1,
       .max = 7200},
      {.name = "keepalive_interval_s",
       .default_value = "1",
       .help = "tcp_keepalives_interval of the lock's sessions",
       .min = 1,
       .max = 600},
      {.name = "keepalive_count",
       .default_value = "2",
       .help = "tcp_keepalives_count of the lock's sessions",
       .min = 1,
       .max = 100},
  };
  for (OptionSpec& o : replica_options("streaming replicas (failover)")) options.push_back(o);
  if (mode == AdvisoryMode::session_blocking) {
    options.push_back({.name = "lock_wait_ms",
                       .default_value = "100",
                       .help = "how long one attempt waits in the server's queue (lock_timeout)",
                       .min = 1,
                       .max = 59'000});
  }
  return options;
}

AdvisoryAdapterOptions advisory_options(PgConnector& connector, Clock& clock, AdvisoryMode mode,
                                        const Options& options) {
  AdvisoryAdapterOptions out{.connector = &connector,
                             .clock = &clock,
                             .mode = mode,
                             .fencing_sequence = options.get("fencing_token") == "sequence"
                                                     ? std::string(kFencingSequence)
                                                     : "",
                             .keepalive_idle_s = options.get_int("keepalive_idle_s"),
                             .keepalive_interval_s = options.get_int("keepalive_interval_s"),
                             .keepalive_count = options.get_int("keepalive_count")};
  if (options.has("lock_wait_ms")) out.lock_wait_ms = options.get_int("lock_wait_ms");
  return out;
}

PostgresAdapterFactory production_postgres_adapter(AdvisoryMode mode) {
  return [mode](PgConnector& connector, Clock& clock,
                const Options& options) -> std::unique_ptr<LockAdapter> {
    return std::make_unique<AdvisoryAdapter>(advisory_options(connector, clock, mode, options));
  };
}

AdapterTraits refine_postgres_traits(AdapterTraits declared, const Options& options) {
  if (options.get("fencing_token") == "sequence") declared.tokens = TokenKind::monotonic;
  return declared;
}

namespace {

AdapterEntry entry(std::string name, std::string description, AdvisoryMode mode) {
  AdapterEntry e{
      .name = std::move(name),
      .description = std::move(description),
      .worlds = {WorldKind::sim, WorldKind::real},
      .traits = kPostgresTraits,
      .options = postgres_backend_options(mode),
      .refine = refine_postgres_traits,
      .make_sim =
          [mode](BackendEnv& env) {
            return make_postgres_sim_backend(env, production_postgres_adapter(mode));
          },
      .make_real = [mode](BackendEnv& env) { return make_postgres_real_backend(env, mode); }};
  if (mode == AdvisoryMode::session_blocking) {
    // One attempt waits lock_wait_ms in the server's queue: its statement must outlast that.
    e.check_options = [](const Options& options) {
      if (options.get_int("command_timeout_ms") <= options.get_int("lock_wait_ms")) {
        throw OptionError(fmt::format(
            "command_timeout_ms ({}) must exceed lock_wait_ms ({}): a statement waiting in the "
            "lock queue would time out first",
            options.get_int("command_timeout_ms"), options.get_int("lock_wait_ms")));
      }
    };
  }
  return e;
}

std::vector<AdapterEntry> postgres_adapters() {
  return {
      entry("postgres-session",
            "PostgreSQL session advisory lock: pg_try_advisory_lock on the client's session, held "
            "without expiry until pg_advisory_unlock or the session's end; optional fencing token "
            "from a sequence in the same statement",
            AdvisoryMode::session_try),
      entry("postgres-blocking",
            "PostgreSQL session advisory lock, blocking: pg_advisory_lock waits in the server's "
            "queue (lock_timeout = lock_wait_ms per attempt)",
            AdvisoryMode::session_blocking),
      entry("postgres-xact",
            "PostgreSQL transaction-level advisory lock: BEGIN, pg_try_advisory_xact_lock on a "
            "session of its own, released by COMMIT",
            AdvisoryMode::xact),
  };
}

}  // namespace

Service postgres_service() { return {.name = "postgres", .adapters = postgres_adapters}; }

}  // namespace lockstep
