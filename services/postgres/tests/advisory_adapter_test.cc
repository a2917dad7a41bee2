// AdvisoryAdapter against a private PostgreSQL 15 cluster: each mode grants one owner at a time,
// refuses a second owner as contention, checks the owner on release and extend, hands out rising
// tokens from a sequence, and finds a session the server ended (its locks gone with it).
#include <catch2/catch.hpp>

#include "lockstep/clock.h"
#include "services/postgres/adapter/advisory_adapter.h"
#include "services/postgres/adapter/libpq_connection.h"
#include "services/postgres/tests/pg_test_support.h"

namespace lockstep {
namespace {

using testing::must;

constexpr const char* kSequence = "lockstep_fencing";

struct Fixture {
  real::PgServerProcess server;
  LibpqConnector connector_a{LibpqOptions{.port = server.port()}};
  LibpqConnector connector_b{LibpqOptions{.port = server.port()}};
  LibpqConnection admin{LibpqOptions{.port = server.port()}};
  SystemClock clock;

  Fixture() {
    REQUIRE(admin.open().ok());
    must(admin, std::string("CREATE SEQUENCE ") + kSequence);
  }
  AdvisoryAdapter adapter(LibpqConnector& connector, AdvisoryMode mode, bool tokens) {
    return AdvisoryAdapter(AdvisoryAdapterOptions{.connector = &connector,
                                                  .clock = &clock,
                                                  .mode = mode,
                                                  .fencing_sequence = tokens ? kSequence : ""});
  }
  // Whether any session holds the advisory lock of `key` (pg_locks, the server's own word).
  bool held_on_server(const AdvisoryAdapter& adapter, const std::string& key) {
    const PgResult r =
        must(admin,
             "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND "
             "((classid::bigint << 32) | objid::bigint) = " +
                 std::to_string(adapter.lock_key(key)));
    return r.scalar() != "0";
  }
};

const char* mode_name(AdvisoryMode mode) {
  switch (mode) {
    case AdvisoryMode::session_try: return "session_try";
    case AdvisoryMode::session_blocking: return "session_blocking";
    case AdvisoryMode::xact: return "xact";
  }
  return "?";
}

TEST_CASE("each mode grants one owner at a time and checks the owner", "[postgres][real]") {
  testing::require_postgres();
  Fixture f;
  for (AdvisoryMode mode :
       {AdvisoryMode::session_try, AdvisoryMode::session_blocking, AdvisoryMode::xact}) {
    for (bool tokens : {false, true}) {
      INFO(mode_name(mode) << (tokens ? " with tokens" : ""));
      AdvisoryAdapter a = f.adapter(f.connector_a, mode, tokens);
      AdvisoryAdapter b = f.adapter(f.connector_b, mode, tokens);
      const std::string key = std::string("k-") + mode_name(mode) + (tokens ? "-t" : "");
      const LockSpec a_spec{.key = key, .value = "a1", .ttl_ms = 1000};
      const LockSpec b_spec{.key = key, .value = "b1", .ttl_ms = 1000};

      const AdapterResult a_got = a.create_lock(a_spec);
      REQUIRE(a_got.status == AdapterStatus::ok);
      CHECK(f.held_on_server(a, key));
      CHECK(a.create_lock(LockSpec{.key = key, .value = "a2", .ttl_ms = 1000}).status ==
            AdapterStatus::contended);  // re-entry on its own session is refused
      CHECK(b.create_lock(b_spec).status == AdapterStatus::contended);
      CHECK(b.release_lock(a_spec).status == AdapterStatus::not_owner);
      CHECK(a.release_lock(b_spec).status == AdapterStatus::not_owner);
      CHECK(a.extend_lock(a_spec, 1000).status == AdapterStatus::ok);
      CHECK(a.is_valid_lock(a_spec).status == AdapterStatus::ok);
      CHECK(a.release_lock(a_spec).status == AdapterStatus::ok);
      CHECK_FALSE(f.held_on_server(a, key));
      CHECK(a.release_lock(a_spec).status == AdapterStatus::not_owner);

      const AdapterResult b_got = b.create_lock(b_spec);
      REQUIRE(b_got.status == AdapterStatus::ok);
      if (tokens) {
        CHECK(a_got.fencing_token > 0);
        CHECK(b_got.fencing_token > a_got.fencing_token);
      } else {
        CHECK(b_got.fencing_token == 0);  // 0: no token
      }
      CHECK(b.release_lock(b_spec).status == AdapterStatus::ok);
    }
  }
}

TEST_CASE("a terminated session takes its lock, and the holder learns at its next request",
          "[postgres][real]") {
  testing::require_postgres();
  Fixture f;
  for (AdvisoryMode mode :
       {AdvisoryMode::session_try, AdvisoryMode::session_blocking, AdvisoryMode::xact}) {
    INFO(mode_name(mode));
    AdvisoryAdapter a = f.adapter(f.connector_a, mode, false);
    AdvisoryAdapter b = f.adapter(f.connector_b, mode, false);
    const std::string key = std::string("t-") + mode_name(mode);
    const LockSpec a_spec{.key = key, .value = "a1", .ttl_ms = 1000};
    REQUIRE(a.create_lock(a_spec).status == AdapterStatus::ok);
    const std::vector<int64_t> pids = f.connector_a.session_pids();
    REQUIRE(pids.size() == 1);
    must(f.admin, "SELECT pg_terminate_backend(" + std::to_string(pids[0]) + ", 5000)");
    CHECK_FALSE(f.held_on_server(a, key));
    // B gets in while A still believes it holds.
    const LockSpec b_spec{.key = key, .value = "b1", .ttl_ms = 1000};
    CHECK(b.create_lock(b_spec).status == AdapterStatus::ok);
    CHECK(a.extend_lock(a_spec, 1000).status == AdapterStatus::not_owner);
    CHECK(a.release_lock(a_spec).status == AdapterStatus::not_owner);
    CHECK(b.release_lock(b_spec).status == AdapterStatus::ok);
    // A's next acquire opens a new session.
    CHECK(a.create_lock(a_spec).status == AdapterStatus::ok);
    CHECK(a.release_lock(a_spec).status == AdapterStatus::ok);
  }
}

TEST_CASE("a blocking acquire waits in the queue for lock_wait_ms, then is contention",
          "[postgres][real]") {
  testing::require_postgres();
  Fixture f;
  AdvisoryAdapter a = f.adapter(f.connector_a, AdvisoryMode::session_try, false);
  AdvisoryAdapter b(AdvisoryAdapterOptions{.connector = &f.connector_b,
                                           .clock = &f.clock,
                                           .mode = AdvisoryMode::session_blocking,
                                           .lock_wait_ms = 50});
  const LockSpec a_spec{.key = "q", .value = "a1", .ttl_ms = 1000};
  REQUIRE(a.create_lock(a_spec).status == AdapterStatus::ok);
  const AdapterResult waited = b.create_lock(LockSpec{.key = "q", .value = "b1", .ttl_ms = 1000});
  INFO(waited.message);
  CHECK(waited.status == AdapterStatus::contended);
  CHECK(a.release_lock(a_spec).status == AdapterStatus::ok);
  CHECK(b.create_lock(LockSpec{.key = "q", .value = "b2", .ttl_ms = 1000}).status ==
        AdapterStatus::ok);
}

TEST_CASE("validity is the TTL, cut to what keepalive allows a cut-off holder", "[postgres]") {
  LibpqConnector unused{LibpqOptions{}};
  SystemClock clock;
  AdvisoryAdapter a(AdvisoryAdapterOptions{.connector = &unused,
                                           .clock = &clock,
                                           .keepalive_idle_s = 2,
                                           .keepalive_interval_s = 1,
                                           .keepalive_count = 2});
  CHECK(a.session_loss_bound_us() == 4'000'000);
  CHECK(a.validity_end_us(LockSpec{}, 100, 1000) == 100 + 1'000'000);
  CHECK(a.validity_end_us(LockSpec{}, 100, 10'000) == 100 + 4'000'000);
}

}  // namespace
}  // namespace lockstep
