// PostgreSQL's protocol 3.0 as the simulated server's wire front reads and writes it
// (services/postgres/sim/pg_wire.h).
#include <catch2/catch.hpp>

#include <string>

#include "services/postgres/sim/pg_wire.h"
#include "services/postgres/tests/pg_wire_bytes.h"

using namespace lockstep::sim;
using lockstep::sim::testing::i32;

TEST_CASE("pg wire: a startup packet, then typed messages, fed in any pieces", "[postgres][wire]") {
  const std::string bytes =
      testing::startup_packet(
          std::string("user\0postgres\0options\0-c lock_timeout=5 --tcp_user_timeout=9\0", 61)) +
      testing::query_message("SELECT pg_try_advisory_lock(1, 2)") + "X" + i32(4);
  PgWireParser parser;
  std::vector<PgFrontendMessage> messages;
  for (const char ch : bytes) {  // one byte at a time: nothing is read before it is whole
    parser.feed(std::string(1, ch));
    while (std::optional<PgFrontendMessage> m = parser.next()) messages.push_back(*m);
  }
  REQUIRE(parser.error().empty());
  REQUIRE(messages.size() == 3);
  CHECK(messages[0].kind == PgFrontendMessage::Kind::startup);
  CHECK(messages[0].params.at("user") == "postgres");
  const lockstep::PgSettings settings = settings_of_startup(messages[0].params);
  REQUIRE(settings.size() == 2);
  CHECK(settings[0] == std::pair<std::string, std::string>{"lock_timeout", "5"});
  CHECK(settings[1] == std::pair<std::string, std::string>{"tcp_user_timeout", "9"});
  CHECK(messages[1].kind == PgFrontendMessage::Kind::query);
  CHECK(messages[1].sql == "SELECT pg_try_advisory_lock(1, 2)");
  CHECK(messages[2].kind == PgFrontendMessage::Kind::terminate);
}

TEST_CASE("pg wire: malformed input stops the parser for good, saying why", "[postgres][wire]") {
  PgWireParser wrong_version;
  wrong_version.feed(i32(8) + i32(2 << 16));  // protocol 2.0
  CHECK_FALSE(wrong_version.next().has_value());
  CHECK(wrong_version.error().find("unsupported frontend protocol 2.0") != std::string::npos);

  PgWireParser too_long;
  too_long.feed(testing::startup_packet(std::string("user\0u\0", 7)) + "Q" + i32(1 << 30));
  CHECK(too_long.next().has_value());  // the startup
  CHECK_FALSE(too_long.next().has_value());
  CHECK(too_long.error().find("invalid message length") != std::string::npos);
  too_long.feed(testing::query_message("SELECT 1"));  // nothing more is read
  CHECK_FALSE(too_long.next().has_value());

  PgWireParser extended;
  extended.feed(testing::startup_packet(std::string("user\0u\0", 7)) + "P" + i32(4));
  CHECK(extended.next().has_value());
  const std::optional<PgFrontendMessage> parse = extended.next();
  REQUIRE(parse.has_value());
  CHECK(parse->kind == PgFrontendMessage::Kind::other);  // the front refuses it
  CHECK(parse->type == 'P');
}

TEST_CASE("pg wire: a result's column is the function's, typed as PostgreSQL types it",
          "[postgres][wire]") {
  const std::optional<PgColumn> try_lock = result_column("SELECT pg_try_advisory_lock(1, 2)");
  REQUIRE(try_lock.has_value());
  CHECK(try_lock->name == "pg_try_advisory_lock");
  CHECK(try_lock->type_oid == 16);
  CHECK(result_column("select pg_advisory_lock(7)")->type_oid == 2278);  // void
  CHECK(result_column("SELECT pg_backend_pid()")->type_oid == 23);
  CHECK_FALSE(result_column("BEGIN").has_value());
  // RowDescription: 'T', length, 1 field, its name, then table, column, type, size, modifier,
  // format.
  const std::string row = pg_wire::row_description({{"pg_try_advisory_lock", 16}});
  CHECK(row[0] == 'T');
  CHECK(row.size() == 1 + 4 + 2 + 21 + 4 + 2 + 4 + 2 + 4 + 2);
  CHECK(pg_wire::data_row({std::string("t"), std::nullopt}) ==
        "D" + i32(4 + 2 + 4 + 1 + 4) + std::string("\0\2", 2) + i32(1) + "t" + i32(-1));
  CHECK(pg_wire::ready_for_query('I') == "Z" + i32(5) + "I");
}
