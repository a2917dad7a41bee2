// A client that is not lockstep's speaking PostgreSQL's protocol to the simulated server, over a
// byte stream (sim/byte_stream.h, services/postgres/sim/pg_wire_front.h): what node-postgres sends,
// and what it must read back.
#include <catch2/catch.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "services/postgres/sim/pg_server.h"
#include "services/postgres/sim/pg_wire.h"
#include "services/postgres/sim/pg_wire_front.h"
#include "services/postgres/tests/pg_wire_bytes.h"
#include "sim/byte_stream.h"
#include "sim/world.h"

using namespace lockstep::sim;
using lockstep::sim::testing::i32;

namespace {

std::string startup() { return testing::startup_packet(std::string("user\0postgres\0", 14)); }

std::string query(const std::string& sql) { return testing::query_message(sql); }

void run_at(World& w, TimeUs t_us, std::function<void()> fn) {
  w.scheduler().at(t_us, std::move(fn));
}

// One client connection: what it read, and when it heard the connection end.
struct WireClient {
  std::string bytes;
  std::optional<TimeUs> ended_at_us;
  std::unique_ptr<SimByteStream> stream;

  WireClient(World& w, PgServer& server, uint64_t conn, const std::string& name, int client) {
    const NodeId node = w.add_node(name);
    const NodeId kernel = w.add_node(name + "-host");
    stream = std::make_unique<SimByteStream>(
        w, ByteStreamOptions{.client_node = node, .kernel_node = kernel, .name = name},
        std::make_unique<PgWireFront>(
            w, server,
            PgWireFrontOptions{.conn = conn,
                               .kernel_node = kernel,
                               .client = client,
                               .tag = {.client = client, .value = name, .key = "k"},
                               .stream_name = name,
                               .process_lives = [] { return true; }}),
        [this](std::string b) { bytes += b; }, [this, &w] { ended_at_us = w.now_us(); });
  }
  bool read(const std::string& expected) const { return bytes.find(expected) != std::string::npos; }
};

WorldOptions wire_world() {
  return {.seed = 1, .network = {.latency_us_min = 100, .latency_us_max = 100}};
}

}  // namespace

TEST_CASE("pg wire front: a session, a try-lock in rows, a wait answered in order",
          "[postgres][sim][wire]") {
  World w(wire_world());
  PgServer server(w, {.name = "pg"});
  WireClient a(w, server, 1, "a", 0);
  WireClient b(w, server, 2, "b", 1);
  run_at(w, 0, [&] { a.stream->write(startup() + query("SELECT pg_try_advisory_lock(1, 2)")); });
  // b waits for the lock, and its next query is held behind the wait, as a backend reads no
  // further while a statement runs.
  run_at(w, 1'000, [&] {
    b.stream->write(startup() + query("SELECT pg_advisory_lock(1, 2)") +
                    query("SELECT pg_backend_pid()"));
  });
  run_at(w, 5'000, [&] { a.stream->write(query("SELECT pg_advisory_unlock(1, 2)")); });
  w.run();
  CHECK(a.read(pg_wire::authentication_ok()));
  CHECK(a.read(pg_wire::backend_key_data(1000, 1000) + pg_wire::ready_for_query('I')));
  CHECK(a.read(pg_wire::row_description({{"pg_try_advisory_lock", 16}}) +
               pg_wire::data_row({std::string("t")}) + pg_wire::command_complete("SELECT 1") +
               pg_wire::ready_for_query('I')));
  CHECK(b.read(pg_wire::row_description({{"pg_advisory_lock", 2278}}) +
               pg_wire::data_row({std::string("")}) + pg_wire::command_complete("SELECT 1") +
               pg_wire::ready_for_query('I') + pg_wire::row_description({{"pg_backend_pid", 23}}) +
               pg_wire::data_row({std::string("1001")})));
  CHECK(server.engine().holder(PgLockKey{.value = (int64_t{1} << 32) | 2, .space = 2}) == 1001);
  CHECK_FALSE(a.ended_at_us.has_value());
}

TEST_CASE(
    "pg wire front: a terminated session says FATAL and closes, and the client's FIN ends one",
    "[postgres][sim][wire]") {
  World w(wire_world());
  PgServer server(w, {.name = "pg"});
  WireClient a(w, server, 1, "a", 0);
  WireClient b(w, server, 2, "b", 1);
  run_at(w, 0, [&] {
    a.stream->write(startup() + query("SELECT pg_try_advisory_lock(7)"));
    b.stream->write(startup() + query("SELECT pg_try_advisory_lock(8)"));
  });
  run_at(w, 2'000, [&] { CHECK(server.terminate(1000)); });
  run_at(w, 3'000, [&] { b.stream->close(); });
  w.run();
  CHECK(a.read(pg_wire::error_response("FATAL", "57P01",
                                       "terminating connection due to administrator command")));
  CHECK(a.ended_at_us.has_value());  // the server's FIN, after the FATAL
  CHECK(server.engine().holder(7) == 0);
  CHECK(server.engine().holder(8) == 0);  // b's FIN ended its session and its lock
  CHECK(server.pid_of(2) == 0);
  CHECK(w.trace().contains("stream b at pg: the client's FIN"));
}

TEST_CASE("pg wire front: the extended query protocol is refused, not guessed at",
          "[postgres][sim][wire]") {
  World w(wire_world());
  PgServer server(w, {.name = "pg"});
  WireClient a(w, server, 1, "a", 0);
  run_at(w, 0, [&] {
    a.stream->write(startup() + "P" + i32(8) + std::string("\0\0\0\0", 4) +
                    query("SELECT pg_try_advisory_lock(7)"));
  });
  w.run();
  CHECK(a.read("0A000"));
  CHECK(a.read("simple query protocol only"));
  CHECK(a.ended_at_us.has_value());
  CHECK(server.engine().holder(7) == 0);  // nothing after the refused message ran
  CHECK(server.pid_of(1) == 0);
}
