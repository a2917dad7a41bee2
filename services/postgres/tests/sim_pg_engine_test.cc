// PgEngine without time or network: the statements, advisory locks, transaction blocks and
// sequences of the simulated server, and the lease facts it reports.
#include <catch2/catch.hpp>

#include "services/postgres/sim/pg_engine.h"

namespace lockstep::sim {
namespace {

struct Recorded final : PgLockObserver {
  std::vector<PgLockEvent> events;
  void on_lock_event(const PgLockEvent& event) override { events.push_back(event); }
};

PgResult run(PgEngine& engine, int64_t pid, const std::string& sql, PgTag tag = {}) {
  PgEngine::Outcome out = engine.execute(pid, sql, tag);
  REQUIRE(!out.waiting);
  return out.result;
}

std::optional<std::string> value(PgEngine& engine, int64_t pid, const std::string& sql) {
  const PgResult result = run(engine, pid, sql);
  INFO(sql << ": " << describe(result));
  REQUIRE(result.sqlstate.empty());
  return result.scalar();
}

TEST_CASE("parse: the statement forms and refusals", "[postgres][sim]") {
  CHECK(parse_statement("select pg_try_advisory_lock(-5);").statement->first.args[0].number == -5);
  const PgParse when =
      parse_statement("SELECT CASE WHEN pg_try_advisory_lock(1) THEN nextval('f') END");
  REQUIRE(when.statement);
  CHECK(when.statement->shape == PgStatement::Shape::case_when);
  CHECK(when.statement->second.args[0].text == "f");
  const PgParse from = parse_statement("SELECT nextval('f') FROM pg_advisory_lock(9)");
  REQUIRE(from.statement);
  CHECK(from.statement->first.function == PgFunction::advisory_lock);
  CHECK(from.statement->second.function == PgFunction::nextval);
  CHECK(parse_statement("SELECT 1/0").sqlstate == "42601");
  CHECK(parse_statement("SELECT now()").sqlstate == "0A000");
  CHECK(parse_statement("VACUUM").sqlstate == "0A000");
  CHECK(parse_statement("SELECT pg_try_advisory_lock(1, 2)").statement.has_value());
  CHECK(parse_statement("SELECT pg_try_advisory_lock(4294967296, 2)").sqlstate == "0A000");
  CHECK(parse_statement("SELECT pg_try_advisory_lock(1, 2, 3)").sqlstate == "0A000");
  CHECK(parse_statement("SELECT pg_try_advisory_lock(99999999999999999999)").sqlstate == "42601");
}

TEST_CASE("session locks are exclusive, re-entrant and owner-checked", "[postgres][sim]") {
  Recorded seen;
  PgEngine engine(&seen);
  engine.open_session(1, {});
  engine.open_session(2, {});
  CHECK(value(engine, 1, "SELECT pg_try_advisory_lock(7)") == "t");
  CHECK(value(engine, 1, "SELECT pg_try_advisory_lock(7)") == "t");  // re-entrant: count 2
  CHECK(value(engine, 2, "SELECT pg_try_advisory_lock(7)") == "f");
  const PgResult not_mine = run(engine, 2, "SELECT pg_advisory_unlock(7)");
  CHECK(not_mine.scalar() == "f");
  CHECK(not_mine.notices ==
        std::vector<std::string>{"WARNING: you don't own a lock of type ExclusiveLock"});
  CHECK(value(engine, 1, "SELECT pg_advisory_unlock(7)") == "t");
  CHECK(engine.holder(7) == 1);
  CHECK(value(engine, 1, "SELECT pg_advisory_unlock(7)") == "t");
  CHECK(engine.holder(7) == 0);
  REQUIRE(seen.events.size() == 2);  // one grant, one release: re-entry is no new lease
  CHECK(seen.events[0].kind == PgLockEvent::Kind::granted);
  CHECK(seen.events[1].cause == "unlock");
}

TEST_CASE("a blocking lock waits in order and lock_timeout ends a wait", "[postgres][sim]") {
  PgEngine engine;
  engine.open_session(1, {});
  engine.open_session(2, {});
  engine.open_session(3, {{"lock_timeout", "50"}});
  CHECK(value(engine, 1, "SELECT pg_advisory_lock(5)") == "");
  CHECK(engine.execute(2, "SELECT pg_advisory_lock(5)", {}).waiting);
  CHECK(engine.execute(3, "SELECT nextval('none') FROM pg_advisory_lock(5)", {}).waiting);
  CHECK(engine.lock_timeout_ms(3) == 50);
  const PgEngine::Outcome timed_out = engine.wait_timed_out(3);
  CHECK(timed_out.result.sqlstate == "55P03");
  CHECK(value(engine, 1, "SELECT pg_advisory_unlock(5)") == "t");
  const std::vector<PgEngine::Woken> woken = engine.take_woken();
  REQUIRE(woken.size() == 1);
  CHECK(woken[0].pid == 2);
  CHECK(woken[0].result.scalar() == "");
  CHECK(engine.holder(5) == 2);
}

TEST_CASE("transaction blocks: xact locks end with them, errors abort them", "[postgres][sim]") {
  PgEngine engine;
  engine.open_session(1, {{"lock_timeout", "10"}});
  engine.open_session(2, {});
  CHECK(run(engine, 1, "BEGIN").command_tag == "BEGIN");
  CHECK(run(engine, 1, "BEGIN").notices ==
        std::vector<std::string>{"WARNING: there is already a transaction in progress"});
  CHECK(value(engine, 1, "SELECT pg_try_advisory_xact_lock(3)") == "t");
  CHECK(value(engine, 2, "SELECT pg_try_advisory_lock(3)") == "f");
  CHECK(run(engine, 1, "COMMIT").command_tag == "COMMIT");
  CHECK(engine.holder(3) == 0);
  // Outside a block a transaction-level lock lasts one statement.
  CHECK(value(engine, 1, "SELECT pg_try_advisory_xact_lock(3)") == "t");
  CHECK(engine.holder(3) == 0);
  // An error in a block: 25P02 until it ends, and COMMIT then rolls back.
  value(engine, 2, "SELECT pg_advisory_lock(4)");
  run(engine, 1, "BEGIN");
  CHECK(engine.execute(1, "SELECT pg_advisory_xact_lock(4)", {}).waiting);
  CHECK(engine.wait_timed_out(1).result.sqlstate == "55P03");
  CHECK(run(engine, 1, "SELECT pg_backend_pid()").sqlstate == "25P02");
  CHECK(run(engine, 1, "COMMIT").command_tag == "ROLLBACK");
  CHECK(run(engine, 1, "COMMIT").notices ==
        std::vector<std::string>{"WARNING: there is no transaction in progress"});
}

TEST_CASE("terminate ends another session, or the caller's with 57P01", "[postgres][sim]") {
  Recorded seen;
  PgEngine engine(&seen);
  engine.open_session(1, {});
  engine.open_session(2, {});
  value(engine, 2, "SELECT pg_advisory_lock(1)");
  CHECK(value(engine, 1, "SELECT pg_terminate_backend(2, 5000)") == "t");
  CHECK(!engine.has_session(2));
  CHECK(engine.holder(1) == 0);
  CHECK(run(engine, 1, "SELECT pg_terminate_backend(2)").notices ==
        std::vector<std::string>{"WARNING: PID 2 is not a PostgreSQL backend process"});
  CHECK(run(engine, 1, "SELECT pg_terminate_backend(2, -1)").sqlstate == "22003");
  const PgEngine::Outcome self = engine.execute(1, "SELECT pg_terminate_backend(1)", {});
  CHECK(self.session_ended);
  CHECK(self.result.sqlstate == "57P01");
  CHECK(!engine.has_session(1));
  REQUIRE(seen.events.size() == 2);
  CHECK(seen.events[1].cause == "terminated by pid 1");
}

TEST_CASE("sequences log 32 ahead and come back from the log after a crash", "[postgres][sim]") {
  Recorded seen;
  PgEngine engine(&seen);
  engine.create_sequence("f");
  engine.open_session(1, {});
  CHECK(value(engine, 1, "SELECT nextval('f')") == "1");
  CHECK(value(engine, 1, "SELECT CASE WHEN pg_try_advisory_lock(2) THEN nextval('f') END") == "2");
  REQUIRE(seen.events.size() == 1);
  CHECK(seen.events[0].token == 2u);  // the grant carries the statement's token
  engine.crash("crash");
  CHECK(seen.events.back().cause == "crash");
  engine.open_session(2, {});
  CHECK(value(engine, 2, "SELECT nextval('f')") == "34");
  CHECK(value(engine, 2, "SELECT nextval('f')") == "35");
  CHECK(run(engine, 2, "SELECT nextval('g')").sqlstate == "42P01");
}

}  // namespace
TEST_CASE("a two-integer key is a lock of its own, apart from the bigint ones", "[postgres][sim]") {
  PgEngine engine;
  engine.open_session(1, {});
  engine.open_session(2, {});
  CHECK(value(engine, 1, "SELECT pg_try_advisory_lock(0, 1)") == "t");
  CHECK(value(engine, 2, "SELECT pg_try_advisory_lock(1)") == "t");  // another lock
  CHECK(value(engine, 2, "SELECT pg_try_advisory_lock(0, 1)") == "f");
  CHECK(value(engine, 2, "SELECT pg_advisory_unlock(0, 1)") == "f");  // not its own
  CHECK(value(engine, 1, "SELECT pg_try_advisory_lock(-1, -2)") == "t");
  CHECK(value(engine, 2, "SELECT pg_try_advisory_lock(-1, -2)") == "f");
  CHECK(value(engine, 1, "SELECT pg_advisory_unlock(0, 1)") == "t");
  CHECK(value(engine, 2, "SELECT pg_try_advisory_lock(0, 1)") == "t");
  CHECK(engine.holder(1) == 2);
}

}  // namespace lockstep::sim
