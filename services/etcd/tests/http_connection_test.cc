// The real connection against Debian's etcd started on loopback: replies as the gateway writes
// them, refusals with their HTTP status, a watch stream read message by message, timeouts that
// leave nothing behind, and a client that moves to the next member when one is gone.
#include <catch2/catch.hpp>

#include <chrono>
#include <future>
#include <thread>

#include "real/loopback.h"
#include "real/silent_port.h"
#include "real/tcp_proxy.h"
#include "services/etcd/adapter/http_connection.h"
#include "services/etcd/client/etcd_json.h"
#include "services/etcd/real/etcd_cluster.h"
#include "services/etcd/tests/etcd_support.h"

namespace lockstep {
namespace {

using etcd::base64_encode;

EtcdJson key_body(const std::string& key) { return {{"key", base64_encode(key)}}; }

TEST_CASE("calls get the gateway's replies, refusals included", "[etcd][http]") {
  testing::require_etcd();
  real::EtcdCluster cluster;
  HttpEtcdConnection connection({.ports = cluster.client_ports()});

  const EtcdResult put =
      connection.call("/v3/kv/put", {{"key", base64_encode("k")}, {"value", base64_encode("v")}});
  REQUIRE(put.ok());
  CHECK(put.http_status == 200);
  const int64_t revision = etcd::int_field(put.body["header"], "revision").value_or(0);
  CHECK(revision >= 2);

  const EtcdResult range = connection.call("/v3/kv/range", key_body("k"));
  REQUIRE(range.ok());
  REQUIRE(range.body["kvs"].size() == 1);
  CHECK(etcd::bytes_field(range.body["kvs"][0], "value") == "v");
  CHECK(etcd::int_field(range.body["kvs"][0], "create_revision") == revision);
  CHECK(etcd::int_field(range.body, "count") == 1);

  // A put with a lease that does not exist: refused, with the gRPC code and an HTTP error status.
  const EtcdResult refused =
      connection.call("/v3/kv/put", {{"key", base64_encode("k")}, {"lease", "12345"}});
  REQUIRE(refused.ok());
  CHECK(refused.refused());
  CHECK(refused.http_status != 200);
  CHECK(refused.error_text() == "etcdserver: requested lease not found");
  CHECK(refused.error_code() != 0);

  // The connection was kept: many calls, one socket.
  for (int i = 0; i < 20; ++i) REQUIRE(connection.call("/v3/kv/range", key_body("k")).ok());
  CHECK(connection.connected());
}

TEST_CASE("a watch stream delivers events message by message", "[etcd][http]") {
  testing::require_etcd();
  real::EtcdCluster cluster;
  HttpEtcdConnection connection({.ports = cluster.client_ports()});
  std::unique_ptr<EtcdStream> watch =
      connection.open("/v3/watch", {{"create_request", key_body("w")}});
  const EtcdResult created = watch->next(2'000'000);
  REQUIRE(created.ok());
  CHECK(created.body["result"].value("created", false));
  // Nothing more yet: a timeout, and the stream stays usable.
  CHECK(watch->next(50'000).status == IoStatus::timeout);
  REQUIRE(connection.call("/v3/kv/put", {{"key", base64_encode("w")}, {"value", "eA=="}}).ok());
  REQUIRE(connection.call("/v3/kv/deleterange", key_body("w")).ok());
  std::vector<std::string> types;
  while (types.size() < 2) {
    const EtcdResult message = watch->next(2'000'000);
    REQUIRE(message.ok());
    for (const EtcdJson& event : message.body["result"].value("events", EtcdJson::array()))
      types.push_back(event.value("type", "PUT"));
  }
  CHECK(types == std::vector<std::string>{"PUT", "DELETE"});
}

TEST_CASE("transport failures are IoStatus values, and the next member takes over",
          "[etcd][http]") {
  testing::require_etcd();
  SECTION("a port that never answers times out") {
    real::SilentPort silent;
    HttpEtcdConnection connection(
        {.ports = {silent.port()}, .connect_timeout_ms = 100, .request_timeout_ms = 100});
    CHECK(connection.call("/v3/kv/range", key_body("k")).status == IoStatus::timeout);
  }
  SECTION("a closed port is a connection error, then the next member answers") {
    real::EtcdCluster cluster;
    const int closed = real::free_loopback_port();
    HttpEtcdConnection connection({.ports = {closed, cluster.client_port(0)}});
    CHECK(connection.call("/v3/kv/range", key_body("k")).status == IoStatus::connection_error);
    CHECK(connection.call("/v3/kv/range", key_body("k")).ok());
  }
  SECTION("a restart closes the idle socket: noticed before the next request, no error") {
    real::EtcdCluster cluster;
    HttpEtcdConnection connection({.ports = cluster.client_ports()});
    REQUIRE(connection.call("/v3/kv/range", key_body("k")).ok());
    cluster.restart(0);
    CHECK(connection.call("/v3/kv/range", key_body("k")).ok());
  }
  SECTION("a reset after the request was written is connection_lost: it may have run") {
    real::EtcdCluster cluster;
    real::TcpProxy proxy({.upstream_port = cluster.client_port(0)});
    HttpEtcdConnection connection({.ports = {proxy.port()}, .request_timeout_ms = 10'000});
    HttpEtcdConnection direct({.ports = {cluster.client_port(0)}});
    REQUIRE(connection.call("/v3/kv/range", key_body("k")).ok());
    proxy.set_hold(real::Direction::to_client, true);  // the put goes through, its reply waits
    std::future<EtcdResult> put = std::async(std::launch::async, [&] {
      return connection.call("/v3/kv/put", {{"key", base64_encode("k")}, {"value", "eA=="}});
    });
    // The put reaches the server (each read is a round trip: bounded by time, not a sleep).
    const auto give_up_at = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    bool applied = false;
    while (!applied && std::chrono::steady_clock::now() < give_up_at) {
      applied = etcd::int_field(direct.call("/v3/kv/range", key_body("k")).body, "count") == 1;
    }
    REQUIRE(applied);
    proxy.reset_all();
    const EtcdResult lost = put.get();
    CHECK(lost.status == IoStatus::connection_lost);
    INFO(lost.message);
    proxy.heal();
    CHECK(connection.call("/v3/kv/range", key_body("k")).ok());  // a new socket
  }
  SECTION("a stopped member times out a call and ends nothing else") {
    real::EtcdCluster cluster;
    HttpEtcdConnection connection({.ports = cluster.client_ports(), .request_timeout_ms = 200});
    REQUIRE(connection.call("/v3/kv/range", key_body("k")).ok());
    cluster.pause(0);
    CHECK(connection.call("/v3/kv/range", key_body("k")).status == IoStatus::timeout);
    cluster.resume(0);
    CHECK(connection.call("/v3/kv/range", key_body("k")).ok());
  }
}

TEST_CASE("a cluster of three agrees on a leader and survives losing it", "[etcd][http]") {
  testing::require_etcd();
  real::EtcdCluster cluster({.members = 3});
  const int leader = cluster.leader();
  REQUIRE(leader >= 0);
  const int other = (leader + 1) % 3;
  HttpEtcdConnection connection({.ports = {cluster.client_port(other)}});
  REQUIRE(connection.call("/v3/kv/put", {{"key", base64_encode("x")}}).ok());
  cluster.crash(leader);
  // A new leader is elected by the two left (election timeout 500 ms): poll for it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int now_leader = -1;
  while (std::chrono::steady_clock::now() < deadline) {
    now_leader = cluster.leader();
    if (now_leader >= 0 && now_leader != leader) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  CHECK(now_leader >= 0);
  CHECK(now_leader != leader);
  const EtcdResult range = connection.call("/v3/kv/range", key_body("x"));
  REQUIRE(range.ok());
  CHECK(etcd::int_field(range.body, "count") == 1);  // the committed put survived
}

}  // namespace
}  // namespace lockstep
