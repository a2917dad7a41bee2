// The simulated server over the simulated network: sessions that end when the client closes,
// crashes, exits or stays unreachable past its keepalive, never while it is merely paused;
// termination as the client sees it; a server crash, restart and failover; and timeouts.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "services/postgres/adapter/advisory_adapter.h"
#include "services/postgres/sim/sim_pg_connection.h"

namespace lockstep::sim {
namespace {

// Keepalive after 1 s idle, every 1 s, 2 unanswered probes: a dead peer is noticed 3 s after the
// last word from it.
const PgSettings kFastKeepalive{
    {"tcp_keepalives_idle", "1"}, {"tcp_keepalives_interval", "1"}, {"tcp_keepalives_count", "2"}};

struct Setup {
  World world{{.seed = 7}};
  PgServer server{world, {.name = "postgres-0"}};
  PgServer* target = &server;

  // A client process (node), its host and a connector for it.
  struct Client {
    NodeId node;
    std::shared_ptr<SimPgHost> host;
  };
  Client client(const std::string& name, int id) {
    const NodeId node = world.add_node(name);
    return {node, std::make_shared<SimPgHost>(world, node, id, [this] { return target; })};
  }
  std::unique_ptr<SimPgConnection> connection(const Client& c, PgSettings settings = kFastKeepalive,
                                              int64_t timeout_us = 500'000) {
    return std::make_unique<SimPgConnection>(
        c.host, std::move(settings),
        SimPgClientOptions{.command_timeout_us = timeout_us, .connect_timeout_us = timeout_us});
  }
  int64_t holder(int64_t key) { return server.engine().holder(key); }
};

std::optional<std::string> value(PgConnection& c, const std::string& sql) {
  const PgResult r = c.execute(sql);
  INFO(sql << ": " << describe(r));
  REQUIRE(r.ok());
  return r.scalar();
}

TEST_CASE("sim: a session lives with its connection, and the client's FIN ends it",
          "[postgres][sim]") {
  Setup s;
  auto a = s.client("a", 0);
  auto b = s.client("b", 1);
  std::unique_ptr<SimPgConnection> ca = s.connection(a);
  std::unique_ptr<SimPgConnection> cb = s.connection(b);
  std::optional<std::string> b_first, b_after;
  s.world.spawn(a.node, "a", [&] {
    REQUIRE(ca->open().ok());
    CHECK(value(*ca, "SELECT pg_try_advisory_lock(1)") == "t");
    s.world.sleep_for_us(100'000);
    ca->close();
  });
  s.world.spawn(b.node, "b", [&] {
    REQUIRE(cb->open().ok());
    s.world.sleep_for_us(50'000);
    b_first = value(*cb, "SELECT pg_try_advisory_lock(1)");
    s.world.sleep_for_us(100'000);
    b_after = value(*cb, "SELECT pg_try_advisory_lock(1)");
    cb->close();
  });
  s.world.run();
  CHECK(b_first == "f");
  CHECK(b_after == "t");
  CHECK(s.server.engine().session_pids().empty());
}

TEST_CASE("sim: a partitioned client's session ends at its keepalive, a paused one's never",
          "[postgres][sim]") {
  Setup s;
  auto cut = s.client("cut", 0);
  auto stopped = s.client("stopped", 1);
  std::unique_ptr<SimPgConnection> c_cut = s.connection(cut);
  std::unique_ptr<SimPgConnection> c_stopped = s.connection(stopped);
  TimeUs cut_granted_us = 0;
  s.world.spawn(cut.node, "cut", [&] {
    REQUIRE(c_cut->open().ok());
    value(*c_cut, "SELECT pg_advisory_lock(1)");
    cut_granted_us = s.world.now_us();
    s.world.sleep_for_us(20'000'000);  // its process lives on, cut off
  });
  s.world.spawn(stopped.node, "stopped", [&] {
    REQUIRE(c_stopped->open().ok());
    value(*c_stopped, "SELECT pg_advisory_lock(2)");
    s.world.pause(stopped.node, 20'000'000);
    CHECK(value(*c_stopped, "SELECT pg_backend_pid()"));  // the same session, 20 s later
  });
  s.world.scheduler().at(
      10'000, [&] { s.world.network().partition_both(cut.host->node(), s.server.node()); });
  TimeUs freed_us = 0;
  for (TimeUs t = 100'000; t <= 10'000'000; t += 100'000) {
    s.world.scheduler().at(t, [&, t] {
      if (freed_us == 0 && s.holder(1) == 0) freed_us = t;
      CHECK(s.holder(2) != 0);
    });
  }
  s.world.run();
  // Noticed at idle (1 s) + 2 unanswered probes 1 s apart after the last word, not before.
  CHECK(freed_us >= cut_granted_us + 3'000'000);
  CHECK(freed_us <= cut_granted_us + 3'200'000);
}

TEST_CASE("sim: a reset ends the session and its locks at once, the holder hears at its next word",
          "[postgres][sim][reset]") {
  Setup s;
  auto a = s.client("a", 0);
  auto b = s.client("b", 1);
  std::unique_ptr<SimPgConnection> ca = s.connection(a);
  std::unique_ptr<SimPgConnection> cb = s.connection(b);
  PgResult a_next;
  PgResult a_reopen;
  std::optional<std::string> b_got;
  s.world.spawn(a.node, "a", [&] {
    REQUIRE(ca->open().ok());
    CHECK(value(*ca, "SELECT pg_try_advisory_lock(1)") == "t");
    s.world.sleep_for_us(200'000);  // reset at 100 ms, while A works on
    a_next = ca->execute("SELECT 1");
    a_reopen = ca->open();  // inside the window: refused
  });
  s.world.spawn(b.node, "b", [&] {
    REQUIRE(cb->open().ok());
    s.world.sleep_for_us(150'000);
    b_got = value(*cb, "SELECT pg_try_advisory_lock(1)");  // A's session ended at the RST
    cb->close();
  });
  s.world.scheduler().at(100'000, [&] { CHECK(a.host->reset_all(1'000'000) == 1); });
  s.world.run();
  CHECK(b_got == "t");
  CHECK_FALSE(ca->is_open());
  CHECK(a_next.status == IoStatus::connection_error);  // nothing was sent: no session
  CHECK(a_reopen.status == IoStatus::connection_error);
}

// As the real server does (pg_server_test.cc): a backend blocked on a lock reads nothing, so it
// notices its client's RST (or FIN, or keepalive's verdict) only as it sends the result.
TEST_CASE("sim: a backend blocked on a lock notices its client gone only as it answers",
          "[postgres][sim][reset]") {
  Setup s;
  auto holder = s.client("holder", 0);
  auto waiter = s.client("waiter", 1);
  std::unique_ptr<SimPgConnection> ch = s.connection(holder);
  std::unique_ptr<SimPgConnection> cw = s.connection(waiter, kFastKeepalive, 10'000'000);
  PgResult waited;
  int64_t waiter_pid = 0;
  s.world.spawn(waiter.node, "waiter", [&] {
    s.world.sleep_for_us(10'000);
    REQUIRE(cw->open().ok());
    waiter_pid = cw->session_pid();
    waited = cw->execute("SELECT pg_advisory_lock(1)");
  });
  std::optional<std::string> after_unlock;
  s.world.spawn(holder.node, "holder", [&] {
    REQUIRE(ch->open().ok());
    value(*ch, "SELECT pg_advisory_lock(1)");
    s.world.sleep_for_us(200'000);                     // the waiter is reset at 100 ms
    CHECK(s.server.engine().has_session(waiter_pid));  // still waiting, unaware
    value(*ch, "SELECT pg_advisory_unlock(1)");
    s.world.sleep_for_us(10'000);
    after_unlock = value(*ch, "SELECT pg_try_advisory_lock(1)");
    ch->close();
  });
  s.world.scheduler().at(100'000, [&] { waiter.host->reset_all(0); });
  s.world.run();
  CHECK(waited.status == IoStatus::connection_lost);
  CHECK_FALSE(s.server.engine().has_session(waiter_pid));  // ended as it took the lock
  CHECK(after_unlock == "t");
  CHECK(s.world.trace().contains("its statement waits on, unaware"));
  CHECK(s.world.trace().contains("noticed as its statement answered"));
}

TEST_CASE("sim: a reset with a statement on the wire loses it, and its caller hears at once",
          "[postgres][sim][reset]") {
  Setup s;
  s.world.network().set_fixed_latency(1'000);
  auto a = s.client("a", 0);
  std::unique_ptr<SimPgConnection> ca = s.connection(a);
  PgResult lock;
  TimeUs heard_us = 0;
  s.world.spawn(a.node, "a", [&] {
    REQUIRE(ca->open().ok());
    s.world.scheduler().after(500, [&] { a.host->reset_all(0); });
    lock = ca->execute("SELECT pg_try_advisory_lock(1)");
    heard_us = s.world.now_us();
    REQUIRE(ca->open().ok());  // the window was 0: a new session at once
    CHECK(value(*ca, "SELECT pg_try_advisory_lock(1)") == "t");  // the lost statement never ran
    ca->close();
  });
  s.world.run();
  CHECK(lock.status == IoStatus::connection_lost);  // sent whole: for all A knows, it ran
  CHECK(heard_us == 2'500);                         // open took 2 ms; the reset came 0.5 ms later
}

TEST_CASE("sim: a crashed client's kernel closes its socket, and an exited one's is reset",
          "[postgres][sim]") {
  Setup s;
  auto crashing = s.client("crashing", 0);
  auto exiting = s.client("exiting", 1);
  std::unique_ptr<SimPgConnection> c1 = s.connection(crashing);
  std::unique_ptr<SimPgConnection> c2 = s.connection(exiting);
  s.world.on_crash(crashing.node, [&] { crashing.host->close_all(); });
  s.world.spawn(crashing.node, "crashing", [&] {
    REQUIRE(c1->open().ok());
    value(*c1, "SELECT pg_advisory_lock(1)");
    s.world.crash(crashing.node);
  });
  s.world.spawn(exiting.node, "exiting", [&] {
    REQUIRE(c2->open().ok());
    value(*c2, "SELECT pg_advisory_lock(2)");  // and its program ends, holding it
  });
  TimeUs freed1_us = 0, freed2_us = 0;
  for (TimeUs t = 10'000; t <= 5'000'000; t += 10'000) {
    s.world.scheduler().at(t, [&, t] {
      if (freed1_us == 0 && s.holder(1) == 0) freed1_us = t;
      if (freed2_us == 0 && s.holder(2) == 0) freed2_us = t;
    });
  }
  s.world.run();
  CHECK(freed1_us > 0);
  CHECK(freed1_us <= 20'000);    // its FIN, one network hop after the crash
  CHECK(freed2_us > 1'000'000);  // the next keepalive probe finds the process gone
  CHECK(freed2_us <= 1'100'000);
}

TEST_CASE("sim: a terminated session's client reads FATAL 57P01 at its next statement",
          "[postgres][sim]") {
  Setup s;
  auto a = s.client("a", 0);
  std::unique_ptr<SimPgConnection> ca = s.connection(a);
  PgResult after;
  s.world.spawn(a.node, "a", [&] {
    REQUIRE(ca->open().ok());
    value(*ca, "SELECT pg_advisory_lock(1)");
    s.world.sleep_for_us(100'000);
    after = ca->execute("SELECT pg_backend_pid()");
    CHECK(!ca->is_open());
  });
  s.world.scheduler().at(50'000, [&] { CHECK(s.server.terminate(s.server.engine().holder(1))); });
  s.world.run();
  CHECK(after.status == IoStatus::connection_error);
  CHECK(after.sqlstate == "57P01");
  CHECK(s.holder(1) == 0);
}

TEST_CASE("sim: a server crash resets sessions, and sequences come back from the log",
          "[postgres][sim]") {
  Setup s;
  s.server.engine().create_sequence("f");
  auto a = s.client("a", 0);
  std::unique_ptr<SimPgConnection> ca = s.connection(a);
  s.world.spawn(a.node, "a", [&] {
    REQUIRE(ca->open().ok());
    CHECK(value(*ca, "SELECT CASE WHEN pg_try_advisory_lock(1) THEN nextval('f') END") == "1");
    s.world.sleep_for_us(100'000);
    const PgResult reset = ca->execute("SELECT 1");
    CHECK(reset.status == IoStatus::connection_lost);        // written, then the reset read
    CHECK(ca->open().status == IoStatus::connection_error);  // refused: the server is down
    s.world.sleep_for_us(100'000);
    REQUIRE(ca->open().ok());
    CHECK(value(*ca, "SELECT pg_try_advisory_lock(1)") == "t");
    CHECK(value(*ca, "SELECT nextval('f')") == "34");
    ca->close();
  });
  s.world.scheduler().at(50'000, [&] { s.world.crash(s.server.node()); });
  s.world.scheduler().at(200'000, [&] { s.world.restart(s.server.node()); });
  s.world.run();
}

TEST_CASE("sim: a paused server times statements out, and the timed-out session is closed",
          "[postgres][sim]") {
  Setup s;
  auto a = s.client("a", 0);
  auto b = s.client("b", 1);
  std::unique_ptr<SimPgConnection> ca = s.connection(a);
  std::unique_ptr<SimPgConnection> cb = s.connection(b);
  std::optional<std::string> b_got;
  s.world.spawn(a.node, "a", [&] {
    REQUIRE(ca->open().ok());
    value(*ca, "SELECT pg_advisory_lock(1)");
    s.world.sleep_for_us(100'000);
    CHECK(ca->execute("SELECT pg_backend_pid()").status == IoStatus::timeout);
    CHECK(!ca->is_open());
  });
  s.world.spawn(b.node, "b", [&] {
    REQUIRE(cb->open().ok());
    s.world.sleep_for_us(2'000'000);
    b_got = value(*cb, "SELECT pg_try_advisory_lock(1)");  // A's FIN arrived after the pause
    cb->close();
  });
  s.world.scheduler().at(50'000, [&] { s.world.pause(s.server.node(), 1'000'000); });
  s.world.run();
  CHECK(b_got == "t");
}

TEST_CASE("sim: a promoted replica has what was replicated and no advisory lock",
          "[postgres][sim]") {
  Setup s;
  PgServer replica(s.world, {.name = "postgres-1", .replica = true});
  s.server.engine().create_sequence("f");
  s.server.add_replica(replica, 1000);
  auto a = s.client("a", 0);
  std::unique_ptr<SimPgConnection> ca = s.connection(a);
  s.world.spawn(a.node, "a", [&] {
    REQUIRE(ca->open().ok());
    CHECK(value(*ca, "SELECT CASE WHEN pg_try_advisory_lock(1) THEN nextval('f') END") == "1");
    s.world.sleep_for_us(1'500'000);  // replicated: the log says 33
    CHECK(value(*ca, "SELECT nextval('f')") == "2");
    CHECK(value(*ca, "SELECT nextval('f')") == "3");
    s.world.sleep_for_us(100'000);
    CHECK(ca->execute("SELECT 1").status == IoStatus::connection_lost);
    REQUIRE(ca->open().ok());  // to the new primary
    CHECK(value(*ca, "SELECT pg_try_advisory_lock(1)") == "t");
    CHECK(value(*ca, "SELECT nextval('f')") == "34");
    ca->close();
  });
  s.world.scheduler().at(1'550'000, [&] {
    s.world.crash(s.server.node());
    replica.promote();
    s.target = &replica;
  });
  s.world.run();
}

// The adapter's side of a timeout. Its validity for a lock is the TTL cut to the keepalive bound
// (4 s here), counted from the request; a statement that times out closes the session. Were a
// statement on a session holding locks to wait only the command timeout (0.5 s here), an extend
// lost to a short partition would close the session, and end the lock, 1.5 s after the acquire,
// with 1.5 s of the validity reported for it still to run. It waits until that validity ends.
TEST_CASE("sim: an extend that times out ends the lock no sooner than its validity",
          "[postgres][sim]") {
  Setup s;
  auto a = s.client("a", 0);
  auto b = s.client("b", 1);
  SimPgConnector connector(a.host, {.command_timeout_us = 500'000, .connect_timeout_us = 500'000});
  AdvisoryAdapter adapter({.connector = &connector,
                           .clock = &s.world.clock(a.node),
                           .keepalive_idle_s = 2,
                           .keepalive_interval_s = 1,
                           .keepalive_count = 2});
  REQUIRE(adapter.session_loss_bound_us() == 4'000'000);
  std::unique_ptr<SimPgConnection> cb = s.connection(b);
  const LockSpec spec{.key = "k", .value = "a-1", .ttl_ms = 3000};
  int64_t validity_end_us = 0;
  AdapterResult extended;
  TimeUs extend_returned_us = 0;
  std::optional<std::string> b_inside_validity;
  std::optional<std::string> b_after_timeout;
  s.world.spawn(a.node, "a", [&] {
    REQUIRE(adapter.create_lock(spec).ok());
    validity_end_us = adapter.validity_end_us(spec, 0, spec.ttl_ms);
    s.world.sleep_for_us(1'000'000 - s.world.now_us());
    extended = adapter.extend_lock(spec, spec.ttl_ms);  // its request is lost to the partition
    extend_returned_us = s.world.now_us();
  });
  const std::string try_lock =
      fmt::format("SELECT pg_try_advisory_lock({})", adapter.lock_key("k"));
  s.world.spawn(b.node, "b", [&] {
    REQUIRE(cb->open().ok());
    s.world.sleep_for_us(2'500'000 - s.world.now_us());
    b_inside_validity = value(*cb, try_lock);
    s.world.sleep_for_us(6'000'000 - s.world.now_us());
    b_after_timeout = value(*cb, try_lock);
    cb->close();
  });
  s.world.scheduler().at(
      900'000, [&] { s.world.network().partition_both(a.host->node(), s.server.node()); });
  s.world.scheduler().at(1'800'000, [&] {
    s.world.network().heal(a.host->node(), s.server.node());
    s.world.network().heal(s.server.node(), a.host->node());
  });
  s.world.run();
  CHECK(validity_end_us == 3'000'000);
  CHECK(extended.status == AdapterStatus::not_owner);
  CHECK(extend_returned_us >= 3'000'000);  // asked at 1 s, it waited out the validity
  CHECK(extend_returned_us < 3'100'000);
  CHECK(b_inside_validity == "f");
  CHECK(b_after_timeout == "t");  // the timeout closed the session, and the lock ended with it
}

// A grant is valid for its TTL cut to the keepalive bound (4 s here), counted from the request.
// The Locker gives back only grants older than the whole TTL (5 s): one that comes back between
// the two, from a slow network, would be handed out after the validity it could promise had ended
// (a lock the server may have let another session take by then). The adapter gives it back.
TEST_CASE("sim: a grant that comes after the validity it could promise is given back",
          "[postgres][sim]") {
  Setup s;
  auto a = s.client("a", 0);
  SimPgConnector connector(a.host,
                           {.command_timeout_us = 10'000'000, .connect_timeout_us = 10'000'000});
  AdvisoryAdapter adapter({.connector = &connector,
                           .clock = &s.world.clock(a.node),
                           .keepalive_idle_s = 2,
                           .keepalive_interval_s = 1,
                           .keepalive_count = 2});
  REQUIRE(adapter.session_loss_bound_us() == 4'000'000);
  const LockSpec spec{.key = "k", .value = "a-1", .ttl_ms = 5000};
  AdapterResult late;
  int64_t holder_after_late = -1;
  AdapterResult prompt;
  s.world.spawn(a.node, "a", [&] {
    // Two round trips (the session's connect, then the statement) of 2.1 s each.
    s.world.network().set_fixed_latency(1'050'000);
    late = adapter.create_lock(spec);  // granted at 4.2 s, past its validity's end at 4 s
    holder_after_late = s.holder(adapter.lock_key("k"));
    s.world.network().set_fixed_latency(500);
    prompt = adapter.create_lock({.key = "k", .value = "a-2", .ttl_ms = 5000});
  });
  s.world.run();
  CHECK(late.status == AdapterStatus::contended);
  CHECK(holder_after_late == 0);  // given back
  CHECK(prompt.ok());             // nothing of the late grant stayed on the session to re-enter
}

}  // namespace
}  // namespace lockstep::sim
