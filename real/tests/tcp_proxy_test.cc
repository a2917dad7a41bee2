// TcpProxy between a hiredis connection and a real redis-server: it passes traffic through
// unchanged, and its faults (delay, one-way and two-way hold, reset) have the effect a client sees
// on a real network, until heal() restores normal service.
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "real/tcp_proxy.h"
#include "services/redis/adapter/hiredis_connection.h"
#include "services/redis/real/redis_server.h"
#include "services/redis/tests/hiredis_support.h"
#include "tests/real_support.h"

namespace lockstep {
namespace {

using real::Direction;
using real::RedisServerProcess;
using real::TcpProxy;
using SteadyClock = std::chrono::steady_clock;

int64_t ping_ms(HiredisConnection& connection) {
  const auto start = SteadyClock::now();
  must(connection, {"PING"});
  return std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - start).count();
}

struct ProxiedServer {
  RedisServerProcess server;
  TcpProxy proxy{{.upstream_port = server.port()}};
  HiredisConnection direct{{.port = server.port()}};
  HiredisConnection via_proxy{
      {.port = proxy.port(), .connect_timeout_ms = 300, .command_timeout_ms = 300}};
};

TEST_CASE("the proxy passes traffic through", "[real][proxy]") {
  testing::require_redis_server();
  ProxiedServer world;
  CHECK(world.proxy.endpoint() == "127.0.0.1:" + std::to_string(world.proxy.port()));
  CHECK(must(world.via_proxy, {"SET", "k", "v"}) == RedisReply::status_of("OK"));
  CHECK(must(world.direct, {"GET", "k"}) == RedisReply::string_of("v"));
  CHECK(world.proxy.connection_count() == 1);

  SECTION("a value much larger than the proxy's buffers") {
    RedisServerProcess server;
    TcpProxy small_buffers({.upstream_port = server.port(), .buffer_bytes = 4096});
    HiredisConnection connection({.port = small_buffers.port(), .command_timeout_ms = 5000});
    const std::string big(4 << 20, 'x');
    CHECK(must(connection, {"SET", "big", big}) == RedisReply::status_of("OK"));
    CHECK(must(connection, {"GET", "big"}) == RedisReply::string_of(big));
  }
}

TEST_CASE("delay adds latency per direction and heal removes it", "[real][proxy]") {
  testing::require_redis_server();
  ProxiedServer world;

  HiredisConnection patient({.port = world.proxy.port(), .command_timeout_ms = 2000});
  world.proxy.set_delay_ms(Direction::to_upstream, 100);
  const int64_t one_way_ms = ping_ms(patient);
  CHECK(one_way_ms >= 100);  // lower bounds only: a busy machine can stretch a delay, not cut it

  world.proxy.set_delay_ms(Direction::to_client, 100);
  const int64_t both_ways_ms = ping_ms(patient);
  CHECK(both_ways_ms >= 200);

  // After the heal a ping gets under the 200 ms floor the delays imposed, which only a heal allows
  // (a threshold tied to the injected floor, not to this machine's speed).
  world.proxy.heal();
  CHECK(ping_ms(patient) < 200);
}

TEST_CASE("hold to the server: the command times out, and runs late when the link heals",
          "[real][proxy]") {
  testing::require_redis_server();
  ProxiedServer world;
  must(world.via_proxy, {"PING"});
  world.proxy.set_hold(Direction::to_upstream, true);
  CHECK(world.via_proxy.command({"RPUSH", "q", "late"}).status == IoStatus::timeout);
  CHECK(must(world.direct, {"LLEN", "q"}) == RedisReply::integer_of(0));  // held in the proxy

  // The caller gave up (and closed its connection), but the bytes it wrote are still on their
  // way, as TCP would retransmit them: the heal delivers them. BLPOP waits for them on the server.
  world.proxy.heal();
  CHECK(must(world.direct, {"BLPOP", "q", "10"}) ==
        RedisReply::array_of({RedisReply::string_of("q"), RedisReply::string_of("late")}));
  CHECK(must(world.via_proxy, {"PING"}) == RedisReply::status_of("PONG"));
}

TEST_CASE("hold to the client: the command runs but its reply does not come", "[real][proxy]") {
  testing::require_redis_server();
  ProxiedServer world;
  must(world.via_proxy, {"PING"});
  world.proxy.set_hold(Direction::to_client, true);
  CHECK(world.via_proxy.command({"SET", "k", "applied"}).status == IoStatus::timeout);
  CHECK(must(world.direct, {"GET", "k"}) ==
        RedisReply::string_of("applied"));  // the lock-client trap

  world.proxy.heal();
  CHECK(must(world.via_proxy, {"GET", "k"}) == RedisReply::string_of("applied"));
}

// A stream stays whole across a hold: a client that waits out the outage on its connection reads
// its reply after the heal, and the next reply is the next command's (a proxy that threw away
// held bytes would leave it reading one reply for another, or none).
TEST_CASE("hold: a patient client reads its held reply after the heal, and the stream stays whole",
          "[real][proxy]") {
  testing::require_redis_server();
  ProxiedServer world;
  HiredisConnection patient({.port = world.proxy.port(), .command_timeout_ms = 10'000});
  must(patient, {"PING"});
  world.proxy.set_hold(Direction::to_client, true);
  RedisReply held_reply;
  std::thread waiting([&] { held_reply = must(patient, {"RPUSH", "seen", "x"}); });
  // The server ran the RPUSH (BLPOP returns as it does); its reply is held in the proxy.
  CHECK(must(world.direct, {"BLPOP", "seen", "10"}) ==
        RedisReply::array_of({RedisReply::string_of("seen"), RedisReply::string_of("x")}));
  world.proxy.heal();
  waiting.join();
  CHECK(held_reply == RedisReply::integer_of(1));
  CHECK(must(patient, {"INCR", "n"}) == RedisReply::integer_of(1));
}

TEST_CASE("a two-way partition times out new and open connections until heal", "[real][proxy]") {
  testing::require_redis_server();
  ProxiedServer world;
  must(world.via_proxy, {"PING"});
  world.proxy.partition();
  CHECK(world.via_proxy.command({"PING"}).status == IoStatus::timeout);
  HiredisConnection fresh({.port = world.proxy.port(), .command_timeout_ms = 200});
  CHECK(fresh.command({"PING"}).status == IoStatus::timeout);

  world.proxy.heal();
  CHECK(must(world.via_proxy, {"PING"}) == RedisReply::status_of("PONG"));
  CHECK(must(fresh, {"PING"}) == RedisReply::status_of("PONG"));
}

TEST_CASE("reset_all drops every connection and clients reconnect", "[real][proxy]") {
  testing::require_redis_server();
  ProxiedServer world;
  must(world.via_proxy, {"PING"});
  REQUIRE(world.proxy.connection_count() == 1);
  world.proxy.reset_all();
  CHECK(world.proxy.connection_count() == 0);
  // On a connection idle for longer than kIdleCheckAfter (the rule's premise, not a wait for
  // anything) the reset is seen before the next command is sent: it reconnects instead of failing.
  std::this_thread::sleep_for(2 * kIdleCheckAfter);
  CHECK(must(world.via_proxy, {"PING"}) == RedisReply::status_of("PONG"));
  CHECK(world.proxy.connection_count() == 1);
}

TEST_CASE("a dead upstream loses a command already sent, a destroyed proxy refuses one unsent",
          "[real][proxy]") {
  testing::require_redis_server();
  SECTION("upstream crashed: the proxy took the command, then dropped the connection") {
    ProxiedServer world;
    world.server.crash();
    // Written whole before the drop: as far as the client can know, it may have run.
    CHECK(world.via_proxy.command({"PING"}).status == IoStatus::connection_lost);
  }
  SECTION("proxy destroyed with an idle connection open") {
    RedisServerProcess server;
    auto proxy = std::make_unique<TcpProxy>(real::TcpProxyOptions{.upstream_port = server.port()});
    HiredisConnection connection({.port = proxy->port(), .command_timeout_ms = 300});
    must(connection, {"PING"});
    proxy.reset();
    // Idle for longer than kIdleCheckAfter (the rule's premise, not a wait for anything): the
    // drop is seen before the command is written, and the reconnect is refused: nothing was sent.
    std::this_thread::sleep_for(2 * kIdleCheckAfter);
    CHECK(connection.command({"PING"}).status == IoStatus::connection_error);
  }
  SECTION("proxy destroyed just after a reply") {
    RedisServerProcess server;
    auto proxy = std::make_unique<TcpProxy>(real::TcpProxyOptions{.upstream_port = server.port()});
    HiredisConnection connection({.port = proxy->port(), .command_timeout_ms = 300});
    must(connection, {"PING"});
    proxy.reset();
    // Within kIdleCheckAfter of the last reply the connection is not checked: the command may be
    // written into the dead socket, and is then an unknown outcome, never a success. A machine
    // slower than a millisecond between these lines checks it, and says nothing was sent.
    const IoStatus status = connection.command({"PING"}).status;
    CHECK((status == IoStatus::connection_lost || status == IoStatus::connection_error));
  }
}

}  // namespace
}  // namespace lockstep
