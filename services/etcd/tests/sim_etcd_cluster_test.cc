// The simulated cluster through its client connection: requests answered once applied, leases
// timed by the leader only and refreshed by a new leader, elections after a leader dies or stops,
// committed state kept, watches, and the Lock RPC including etcd 3.4's grant of a lock whose lease
// expired in the queue (etcd-io/etcd#11456).
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "services/etcd/client/etcd_json.h"
#include "services/etcd/sim/etcd_cluster.h"
#include "services/etcd/sim/sim_etcd_connection.h"
#include "services/etcd/tests/etcd_support.h"
#include "sim/world.h"

namespace lockstep::sim::etcd {
namespace {

using lockstep::etcd::base64_encode;
using lockstep::etcd::int_field;

using lockstep::testing::b;

struct Facts final : EtcdObserver {
  std::vector<std::string> applied;
  std::vector<std::pair<int64_t, int64_t>> refreshed;  // lease, ttl_us
  std::vector<std::pair<std::string, bool>> locks_returned;
  void on_applied(int, const std::string& path, const EtcdJson&, const Applied&) override {
    applied.push_back(path);
  }
  void on_lease_refreshed(int64_t lease, int64_t ttl_us, int, bool) override {
    refreshed.emplace_back(lease, ttl_us);
  }
  void on_lock_returned(int, const std::string& key, int64_t, bool exists) override {
    locks_returned.emplace_back(key, exists);
  }
};

struct Fixture {
  explicit Fixture(int members, uint64_t seed = 1)
      : world({.seed = seed}), cluster(world, {.members = members, .observer = &facts}) {}
  NodeId client(const std::string& name) { return world.add_node(name); }
  SimEtcdConnection connect(NodeId node, int client_id, std::vector<int> members = {}) {
    return SimEtcdConnection(world, node, cluster, client_id,
                             {.request_timeout_us = 2'000'000, .members = std::move(members)});
  }
  Facts facts;
  World world;
  EtcdCluster cluster;
};

int64_t revision_of(const EtcdResult& r) {
  return int_field(r.body["header"], "revision").value_or(0);
}

TEST_CASE("a write is answered once applied, a read sees it, on any member", "[etcd][sim]") {
  Fixture f(3);
  const NodeId node = f.client("c0");
  bool done = false;
  f.world.spawn(node, "c0", [&] {
    SimEtcdConnection to_follower = f.connect(node, 0, {2});
    const EtcdResult put = to_follower.call("/v3/kv/put", {{"key", b("k")}, {"value", b("v")}});
    REQUIRE(put.ok());
    CHECK(put.http_status == 200);
    CHECK(revision_of(put) == 2);
    CHECK(int_field(put.body["header"], "raft_term") == 2);
    SimEtcdConnection to_leader = f.connect(node, 0, {0});
    const EtcdResult range = to_leader.call("/v3/kv/range", {{"key", b("k")}});
    REQUIRE(range.ok());
    CHECK(range.body["kvs"][0]["value"] == b("v"));
    done = true;
  });
  f.world.run();
  CHECK(done);
  CHECK(f.cluster.quiet());  // the run ended: the cluster's timers stopped
  for (int m = 0; m < 3; ++m) CHECK(f.cluster.store(m).revision() == 2);
}

TEST_CASE("a lease ends on the leader's clock, about one lessor tick after its TTL",
          "[etcd][sim]") {
  Fixture f(1);
  const NodeId node = f.client("c0");
  TimeUs gone_at = -1;
  f.world.spawn(node, "c0", [&] {
    SimEtcdConnection c = f.connect(node, 0);
    const EtcdResult grant = c.call("/v3/lease/grant", {{"TTL", 1}});
    REQUIRE(grant.ok());
    CHECK(grant.body["TTL"] == "1");
    const std::string lease = grant.body["ID"];
    REQUIRE(c.call("/v3/kv/put", {{"key", b("k")}, {"lease", lease}}).ok());
    const TimeUs granted_at = f.world.now_us();
    for (int i = 0; i < 100 && gone_at < 0; ++i) {
      f.world.sleep_for_us(50'000);
      const EtcdResult r = c.call("/v3/kv/range", {{"key", b("k")}});
      if (!r.body.contains("kvs")) gone_at = f.world.now_us() - granted_at;
    }
    const EtcdResult keepalive = c.call("/v3/lease/keepalive", {{"ID", lease}});
    CHECK_FALSE(keepalive.body["result"].contains("TTL"));  // gone: TTL 0
  });
  f.world.run();
  CHECK(gone_at >= 1'000'000);
  CHECK(gone_at <= 1'600'000);  // the lessor checks every 500 ms, plus a round trip
}

TEST_CASE("a keepalive renews on the leader, through a follower too", "[etcd][sim]") {
  Fixture f(3);
  const NodeId node = f.client("c0");
  bool alive_late = false;
  f.world.spawn(node, "c0", [&] {
    SimEtcdConnection c = f.connect(node, 0, {1});
    const std::string lease = c.call("/v3/lease/grant", {{"TTL", 1}}).body["ID"];
    REQUIRE(c.call("/v3/kv/put", {{"key", b("k")}, {"lease", lease}}).ok());
    for (int i = 0; i < 10; ++i) {  // 3 s of keepalives every 300 ms
      f.world.sleep_for_us(300'000);
      const EtcdResult k = c.call("/v3/lease/keepalive", {{"ID", lease}});
      REQUIRE(k.ok());
      CHECK(k.body["result"]["TTL"] == "1");
    }
    alive_late = c.call("/v3/kv/range", {{"key", b("k")}}).body.contains("kvs");
  });
  f.world.run();
  CHECK(alive_late);
}

TEST_CASE("the leader dies: a new one is elected, keeps what was committed, refreshes leases",
          "[etcd][sim]") {
  Fixture f(3, 7);
  const NodeId node = f.client("c0");
  f.world.spawn(node, "c0", [&] {
    SimEtcdConnection c = f.connect(node, 0, {1, 2});
    const std::string lease = c.call("/v3/lease/grant", {{"TTL", 2}}).body["ID"];
    REQUIRE(c.call("/v3/kv/put", {{"key", b("k")}, {"lease", lease}}).ok());
    f.cluster.crash(0);
    const size_t refreshed_before = f.facts.refreshed.size();
    // Elected after 500-1000 ms without heartbeats; a proposal meanwhile is dropped or times out.
    f.world.sleep_for_us(1'500'000);
    const int leader = f.cluster.leader();
    REQUIRE(leader > 0);
    CHECK(f.cluster.term(leader) > 2);
    // The promotion gave the lease its TTL again plus an election timeout.
    REQUIRE(f.facts.refreshed.size() > refreshed_before);
    CHECK(f.facts.refreshed.back().second == 2'000'000 + 500'000);
    // 2.5 s after the promotion the key is still there (more than the TTL after the grant).
    f.world.sleep_for_us(1'500'000);
    const EtcdResult r = c.call("/v3/kv/range", {{"key", b("k")}});
    REQUIRE(r.ok());
    CHECK(r.body.contains("kvs"));
    f.cluster.restart(0);
    f.world.sleep_for_us(3'000'000);
    CHECK(f.cluster.store(0).revision() == f.cluster.store(leader).revision());
  });
  f.world.run();
}

TEST_CASE("a stopped leader is replaced, and steps down when it wakes", "[etcd][sim]") {
  Fixture f(3, 3);
  const NodeId node = f.client("c0");
  f.world.spawn(node, "c0", [&] {
    SimEtcdConnection c = f.connect(node, 0, {1});
    REQUIRE(c.call("/v3/kv/put", {{"key", b("a")}}).ok());
    f.world.pause(f.cluster.node(0), 3'000'000, "SIGSTOP etcd-0");
    f.world.sleep_for_us(2'000'000);
    const int leader = f.cluster.leader();
    CHECK(leader > 0);
    REQUIRE(c.call("/v3/kv/put", {{"key", b("b")}}).ok());
    f.world.sleep_for_us(2'000'000);  // etcd-0 is back: it follows the new term
    CHECK(f.cluster.role(0) == EtcdRole::follower);
    CHECK(f.cluster.store(0).keys().count("b") == 1);
  });
  f.world.run();
}

TEST_CASE("a watch sees the events from its start revision, then as they apply", "[etcd][sim]") {
  Fixture f(3);
  const NodeId node = f.client("c0");
  f.world.spawn(node, "c0", [&] {
    SimEtcdConnection c = f.connect(node, 0, {2});
    const int64_t first = revision_of(c.call("/v3/kv/put", {{"key", b("w")}, {"value", b("1")}}));
    std::unique_ptr<EtcdStream> watch =
        c.open("/v3/watch",
               {{"create_request", {{"key", b("w")}, {"start_revision", std::to_string(first)}}}});
    CHECK(watch->next(1'000'000).body["result"]["created"] == true);
    const EtcdResult past = watch->next(1'000'000);
    REQUIRE(past.ok());
    CHECK(past.body["result"]["events"][0]["kv"]["value"] == b("1"));
    CHECK(watch->next(100'000).status == IoStatus::timeout);
    REQUIRE(c.call("/v3/kv/deleterange", {{"key", b("w")}}).ok());
    const EtcdResult deleted = watch->next(1'000'000);
    REQUIRE(deleted.ok());
    CHECK(deleted.body["result"]["events"][0]["type"] == "DELETE");
  });
  f.world.run();
}

TEST_CASE("the Lock RPC queues by create revision, and hands out a lock whose lease expired",
          "[etcd][sim][lock]") {
  Fixture f(1);
  const NodeId a_node = f.client("a");
  const NodeId b_node = f.client("b");
  std::string b_key;
  f.world.spawn(a_node, "a", [&] {
    SimEtcdConnection c = f.connect(a_node, 0);
    const std::string lease = c.call("/v3/lease/grant", {{"TTL", 10}}).body["ID"];
    std::unique_ptr<EtcdStream> lock =
        c.open("/v3/lock/lock", {{"name", b("L")}, {"lease", lease}});
    const EtcdResult held = lock->next(1'000'000);
    REQUIRE(held.ok());
    const std::string key = held.body["key"];
    f.world.sleep_for_us(3'000'000);  // B's lease (1 s) runs out while B waits behind us
    REQUIRE(c.call("/v3/lock/unlock", {{"key", key}}).ok());
  });
  f.world.spawn(b_node, "b", [&] {
    f.world.sleep_for_us(100'000);
    SimEtcdConnection c = f.connect(b_node, 1);
    const std::string lease = c.call("/v3/lease/grant", {{"TTL", 1}}).body["ID"];
    std::unique_ptr<EtcdStream> lock =
        c.open("/v3/lock/lock", {{"name", b("L")}, {"lease", lease}});
    CHECK(lock->next(1'000'000).status == IoStatus::timeout);  // queued behind A
    const EtcdResult got = lock->next(5'000'000);
    REQUIRE(got.ok());
    CHECK(got.http_status == 200);
    b_key = got.body["key"];
    CHECK(c.call("/v3/kv/range", {{"key", b_key}}).body.contains("kvs") == false);
  });
  f.world.run();
  REQUIRE(f.facts.locks_returned.size() == 2);
  CHECK(f.facts.locks_returned[0].second);
  CHECK_FALSE(f.facts.locks_returned[1].second);  // etcd-io/etcd#11456
}

TEST_CASE("a cancelled Lock RPC leaves the queue", "[etcd][sim][lock]") {
  Fixture f(3);
  const NodeId a_node = f.client("a");
  const NodeId b_node = f.client("b");
  f.world.spawn(a_node, "a", [&] {
    SimEtcdConnection c = f.connect(a_node, 0);
    const std::string lease = c.call("/v3/lease/grant", {{"TTL", 10}}).body["ID"];
    std::unique_ptr<EtcdStream> lock =
        c.open("/v3/lock/lock", {{"name", b("L")}, {"lease", lease}});
    REQUIRE(lock->next(1'000'000).ok());
  });
  f.world.spawn(b_node, "b", [&] {
    f.world.sleep_for_us(100'000);
    SimEtcdConnection c = f.connect(b_node, 1, {1});
    const std::string lease = c.call("/v3/lease/grant", {{"TTL", 10}}).body["ID"];
    {
      std::unique_ptr<EtcdStream> lock =
          c.open("/v3/lock/lock", {{"name", b("L")}, {"lease", lease}});
      CHECK(lock->next(300'000).status == IoStatus::timeout);
    }  // closed: the member deletes B's key
    f.world.sleep_for_us(300'000);
    const EtcdResult keys = c.call("/v3/kv/range", {{"key", b("L/")}, {"range_end", b("L0")}});
    CHECK(int_field(keys.body, "count") == 1);  // A's alone
  });
  f.world.run();
}

TEST_CASE("a reset ends the call in flight as lost, or refuses the next one unsent",
          "[etcd][sim][reset]") {
  Fixture f(1);
  const NodeId node = f.client("c0");
  f.world.network().set_fixed_latency(1'000);  // a put is on the wire from 0 to 1 ms
  bool done = false;
  f.world.spawn(node, "c0", [&] {
    SimEtcdConnection c = f.connect(node, 0);
    f.world.scheduler().after(500, [&] { c.reset(); });
    const EtcdResult lost = c.call("/v3/kv/put", {{"key", b("k")}, {"value", b("v")}});
    CHECK(lost.status == IoStatus::connection_lost);  // sent whole: it may have run
    CHECK(f.world.now_us() == 500);                   // the RST came at once
    c.reset();                                        // with nothing in flight
    const EtcdResult refused = c.call("/v3/kv/put", {{"key", b("k")}, {"value", b("w")}});
    CHECK(refused.status == IoStatus::connection_error);  // found on the write: never sent
    const EtcdResult read = c.call("/v3/kv/range", {{"key", b("k")}});
    REQUIRE(read.ok());  // then it works again
    CHECK_FALSE(
        read.body.contains("kvs"));  // the first put was lost on the wire, the second unsent
    done = true;
  });
  f.world.run();
  CHECK(done);
}

TEST_CASE("a member restarted since the connection opened answers the next call with an RST",
          "[etcd][sim][reset]") {
  Fixture f(1);
  const NodeId node = f.client("c0");
  bool done = false;
  f.world.spawn(node, "c0", [&] {
    SimEtcdConnection c = f.connect(node, 0);
    REQUIRE(c.call("/v3/kv/put", {{"key", b("k")}, {"value", b("v")}}).ok());
    f.cluster.crash(0);
    f.cluster.restart(0);
    f.world.sleep_for_us(3'000'000);  // it leads again
    const EtcdResult half_open = c.call("/v3/kv/put", {{"key", b("k")}, {"value", b("w")}});
    CHECK(half_open.status == IoStatus::connection_lost);  // written whole: for all it knows, ran
    const EtcdResult read = c.call("/v3/kv/range", {{"key", b("k")}});  // a new connection
    REQUIRE(read.ok());
    CHECK(read.body["kvs"][0]["value"] == b("v"));  // the second put never ran
    done = true;
  });
  f.world.run();
  CHECK(done);
}

TEST_CASE("a reset window dooms every call sent in it: lost on the way or its reply lost",
          "[etcd][sim][reset]") {
  Fixture f(1, 3);
  const NodeId node = f.client("c0");
  int lost = 0;
  int ok = 0;
  f.world.spawn(node, "c0", [&] {
    SimEtcdConnection c = f.connect(node, 0);
    c.reset(1'000'000);
    for (int i = 0; i < 20; ++i) {
      const EtcdResult r = c.call("/v3/kv/put", {{"key", b(fmt::format("k{}", i))}});
      if (r.status == IoStatus::connection_lost) ++lost;
      CHECK(r.status != IoStatus::ok);
    }
    f.world.sleep_for_us(1'000'000);
    const EtcdResult after = c.call("/v3/kv/put", {{"key", b("after")}});
    if (after.ok()) ++ok;
  });
  f.world.run();
  CHECK(lost == 19);  // the first was refused unsent (the reset found on the write)
  CHECK(ok == 1);
  // Of the doomed puts some ran (their replies lost) and some never reached the server.
  const int64_t ran = static_cast<int64_t>(f.cluster.store(0).revision()) - 2;  // 'after' too
  CHECK(ran > 0);
  CHECK(ran < 19);
}

TEST_CASE("a reset breaks an open Lock RPC: the client hears it, the member drops its key",
          "[etcd][sim][reset][lock]") {
  Fixture f(1);
  const NodeId a_node = f.client("a");
  const NodeId b_node = f.client("b");
  f.world.spawn(a_node, "a", [&] {
    SimEtcdConnection c = f.connect(a_node, 0);
    const std::string lease = c.call("/v3/lease/grant", {{"TTL", 10}}).body["ID"];
    std::unique_ptr<EtcdStream> lock =
        c.open("/v3/lock/lock", {{"name", b("L")}, {"lease", lease}});
    REQUIRE(lock->next(1'000'000).ok());
    f.world.sleep_for_us(2'000'000);
  });
  f.world.spawn(b_node, "b", [&] {
    f.world.sleep_for_us(100'000);
    SimEtcdConnection c = f.connect(b_node, 1);
    const std::string lease = c.call("/v3/lease/grant", {{"TTL", 10}}).body["ID"];
    std::unique_ptr<EtcdStream> lock =
        c.open("/v3/lock/lock", {{"name", b("L")}, {"lease", lease}});
    CHECK(lock->next(300'000).status == IoStatus::timeout);  // queued behind A
    c.reset();
    const EtcdResult broken = lock->next(1'000'000);
    CHECK(broken.status == IoStatus::connection_lost);  // its open was sent: it may have run
    CHECK(f.world.now_us() < 500'000);                  // at once, not after the wait
    f.world.sleep_for_us(100'000);
    const EtcdJson range = {{"key", b("L/")}, {"range_end", b("L0")}};
    CHECK(c.call("/v3/kv/range", range).status == IoStatus::connection_error);  // found reset
    const EtcdResult keys = c.call("/v3/kv/range", range);
    CHECK(int_field(keys.body, "count") == 1);  // A's alone: B's queued key went with the call
    c.reset(1'000'000);
    std::unique_ptr<EtcdStream> unsent =
        c.open("/v3/lock/lock", {{"name", b("L")}, {"lease", lease}});
    CHECK(unsent->next(1'000'000).status == IoStatus::connection_error);
  });
  f.world.run();
}

TEST_CASE("the same seed gives the same trace", "[etcd][sim]") {
  const auto run = [](uint64_t seed) {
    Fixture f(3, seed);
    const NodeId node = f.client("c0");
    f.world.spawn(node, "c0", [&] {
      SimEtcdConnection c = f.connect(node, 0, {1});
      for (int i = 0; i < 5; ++i) c.call("/v3/kv/put", {{"key", b(fmt::format("k{}", i))}});
      f.cluster.crash(0);
      f.world.sleep_for_us(2'000'000);
      c.call("/v3/kv/put", {{"key", b("after")}});
    });
    f.world.run();
    return f.world.trace().hash();
  };
  CHECK(run(5) == run(5));
  CHECK(run(5) != run(6));
}

}  // namespace
}  // namespace lockstep::sim::etcd
