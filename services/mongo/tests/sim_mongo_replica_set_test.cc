// The simulated replica set in a World: clocks and $$NOW, the TTL monitor, write concern timing,
// elections and step-down, rollback, majority reads, the connection's server selection, the
// observer, and determinism.
#include <catch2/catch.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "services/mongo/sim/replica_set.h"
#include "services/mongo/sim/sim_mongo_connection.h"
#include "sim/world.h"

using namespace lockstep::sim;
using lockstep::IoStatus;
using lockstep::mongo_date;
using lockstep::MongoDocument;
using lockstep::MongoResult;
using Doc = MongoDocument;
using Kind = MongoWriteEvent::Kind;

namespace {

constexpr int64_t kEpochMs = kLocalEpochUs / 1000;
const std::string kLocks = "lockstep.locks";

struct Recorder final : MongoObserver {
  struct Seen {
    std::string member;
    MongoWriteEvent event;
  };
  std::vector<Seen> seen;
  void on_mongo_write(std::string_view member, const MongoWriteEvent& e) override {
    seen.push_back({std::string(member), e});
  }
  size_t count(Kind kind) const {
    size_t n = 0;
    for (const Seen& s : seen) n += s.event.kind == kind ? 1 : 0;
    return n;
  }
};

WorldOptions fixed_latency(TimeUs latency_us = 500, uint64_t seed = 1) {
  return {.seed = seed, .network = {.latency_us_min = latency_us, .latency_us_max = latency_us}};
}

constexpr TimeUs ms(int64_t v) { return v * kUsPerMs; }

void at(World& w, TimeUs t_us, std::function<void()> fn) { w.scheduler().at(t_us, std::move(fn)); }

Doc indexes() {
  return Doc{
      {"createIndexes", "locks"},
      {"indexes",
       Doc::array(
           {Doc{{"key", {{"key", 1}}}, {"name", "key_1"}, {"unique", true}},
            Doc{{"key", {{"expire_at", 1}}}, {"name", "expire_at_1"}, {"expireAfterSeconds", 0}}})},
      {"writeConcern", {{"w", "majority"}, {"wtimeout", 5000}}}};
}

Doc write_concern(bool majority, int64_t wtimeout_ms = 5000) {
  return majority ? Doc{{"w", "majority"}, {"wtimeout", wtimeout_ms}} : Doc{{"w", 1}};
}

// The adapter's acquire (server time): take over {key, expired by $$NOW} -> {value, expire_at:
// $$NOW + ttl} without upsert, then upsert {key, value} (expire_at: $$NOW + ttl when inserting).
Doc acquire(const std::string& key, const std::string& value, int64_t ttl_ms, const Doc& wc) {
  const Doc expiry{{"$add", Doc::array({"$$NOW", ttl_ms})}};
  Doc q{{"key", key}, {"$expr", {{"$lt", Doc::array({"$expire_at", "$$NOW"})}}}};
  Doc u = Doc::array({Doc{{"$set", {{"value", value}, {"expire_at", expiry}}}}});
  Doc insert_q{{"key", key}, {"value", value}};
  Doc insert_u = Doc::array(
      {Doc{{"$set", {{"expire_at", {{"$ifNull", Doc::array({"$expire_at", expiry})}}}}}}});
  return Doc{
      {"update", "locks"},
      {"updates",
       Doc::array({Doc{{"q", q}, {"u", u}, {"upsert", false}, {"multi", false}},
                   Doc{{"q", insert_q}, {"u", insert_u}, {"upsert", true}, {"multi", false}}})},
      {"ordered", true},
      {"writeConcern", wc}};
}

Doc set_doc(const std::string& key, const Doc& wc) {
  return Doc{
      {"update", "locks"},
      {"updates",
       Doc::array({Doc{{"q", {{"key", key}}}, {"u", {{"$set", {{"v", 1}}}}}, {"upsert", true}}})},
      {"writeConcern", wc}};
}

Doc find_live(const std::string& key, bool majority) {
  Doc cmd{{"find", "locks"},
          {"filter", {{"key", key}, {"$expr", {{"$gt", Doc::array({"$expire_at", "$$NOW"})}}}}},
          {"limit", 1},
          {"singleBatch", true}};
  if (majority) cmd["readConcern"] = Doc{{"level", "majority"}};
  return cmd;
}

Doc find_all(bool majority = false) {
  Doc cmd{{"find", "locks"}, {"filter", Doc::object()}};
  if (majority) cmd["readConcern"] = Doc{{"level", "majority"}};
  return cmd;
}

struct Reply {
  bool got = false;
  Doc doc;
  TimeUs at_us = -1;
};

// Runs `command` directly on `member` at true time t (no network on the way in), recording the
// reply and when it was produced.
std::shared_ptr<Reply> command_at(World& w, MongoReplicaSet& rs, int member, TimeUs t, Doc command,
                                  int client = 1) {
  auto reply = std::make_shared<Reply>();
  at(w, t, [&w, &rs, member, command, client, reply] {
    if (!rs.alive(member)) return;
    rs.handle_command(member, client, "lockstep", command, [&w, reply](Doc d) {
      reply->got = true;
      reply->doc = std::move(d);
      reply->at_us = w.now_us();
    });
  });
  return reply;
}

size_t batch_size(const Doc& find_reply) { return find_reply["cursor"]["firstBatch"].size(); }

}  // namespace

TEST_CASE("replica set: an idle set lets the run end, member 0 primary in term 1",
          "[sim][mongo][rs]") {
  World w(fixed_latency());
  MongoReplicaSet rs(w, {});
  CHECK(rs.members() == 3);
  CHECK(rs.member_name(2) == "mongo-2");
  CHECK(rs.primary() == 0);
  const RunResult r = w.run();
  CHECK(r.end == RunEnd::queue_empty);
  CHECK(rs.quiet());
  CHECK(w.now_us() < ms(3000));
  CHECK(rs.primary() == 0);
  CHECK(rs.term(1) == 1);
}

TEST_CASE("replica set: two clients' upserts on an absent key race through the network",
          "[sim][mongo][rs]") {
  for (const bool unique : {true, false}) {
    DYNAMIC_SECTION((unique ? "with" : "without") << " the unique index") {
      World w(fixed_latency());
      Recorder observer;
      MongoReplicaSet rs(w, {.observer = &observer});
      const NodeId a = w.add_node("client-a");
      const NodeId b = w.add_node("client-b");
      SimMongoConnection ca(w, a, rs, 1);
      SimMongoConnection cb(w, b, rs, 2);
      std::vector<MongoResult> results(2);
      if (unique) {
        w.spawn(a, "index",
                [&] { REQUIRE(ca.run_command("lockstep", indexes()).reply["ok"] == 1); });
      }
      w.spawn(
          a, "a",
          [&] {
            results[0] = ca.run_command("lockstep", acquire("k", "a", 10'000, write_concern(true)));
          },
          ms(100));
      w.spawn(
          b, "b",
          [&] {
            results[1] = cb.run_command("lockstep", acquire("k", "b", 10'000, write_concern(true)));
          },
          ms(100));
      std::vector<size_t> docs(3);
      at(w, ms(5000), [&] {
        for (int m = 0; m < 3; ++m) docs[static_cast<size_t>(m)] = rs.documents(m, kLocks).size();
      });
      w.run();
      REQUIRE(results[0].ok());
      REQUIRE(results[1].ok());
      int inserted = 0;
      int duplicates = 0;
      for (const MongoResult& r : results) {
        inserted += r.reply.contains("upserted") ? 1 : 0;
        duplicates +=
            r.reply.contains("writeErrors") && r.reply["writeErrors"][0]["code"] == 11000 ? 1 : 0;
      }
      CHECK(inserted == (unique ? 1 : 2));
      CHECK(duplicates == (unique ? 1 : 0));
      CHECK(docs[0] == (unique ? 1u : 2u));
      CHECK(docs[2] == (unique ? 1u : 2u));  // replicated
      CHECK(observer.count(Kind::insert) == (unique ? 1u : 2u));
    }
  }
}

TEST_CASE("replica set: $$NOW is the executing member's clock, drift and jumps included",
          "[sim][mongo][rs]") {
  World w(fixed_latency());
  MongoReplicaSet rs(w, {});
  w.set_drift(rs.node(0), 100'000);                                  // 10% fast from t=0
  at(w, ms(500), [&] { w.jump_clock(rs.node(0), 3'600'000'000); });  // +1 h
  const auto up = command_at(w, rs, 0, ms(1000), acquire("k", "a", 5000, write_concern(false)));
  // By the member's clock the lock runs to local 1.1 s + 1 h + 5 s: live at true 5.5 s (local
  // 6.05 s + 1 h), expired at true 6 s (local 6.6 s + 1 h), whatever a client's clock says.
  const auto live = command_at(w, rs, 0, ms(5500), find_live("k", false));
  const auto expired = command_at(w, rs, 0, ms(6000), find_live("k", false));
  w.run();
  REQUIRE(up->got);
  const Doc doc = rs.documents(0, kLocks).at(0);
  CHECK(doc["expire_at"] == mongo_date(kEpochMs + 1100 + 3'600'000 + 5000));
  CHECK(rs.documents(1, kLocks).at(0)["expire_at"] == doc["expire_at"]);  // replicated as a value
  CHECK(batch_size(live->doc) == 1);
  CHECK(batch_size(expired->doc) == 0);
}

TEST_CASE(
    "replica set: the TTL monitor removes an expired document at its next pass, and the pass "
    "replicates",
    "[sim][mongo][rs]") {
  World w(fixed_latency());
  Recorder observer;
  MongoReplicaSet rs(w, {.observer = &observer});
  command_at(w, rs, 0, ms(100), indexes());
  command_at(w, rs, 0, ms(1000), acquire("k", "a", 2000, write_concern(false)));
  size_t at_30s = 0;
  size_t secondary_at_30s = 0;
  at(w, ms(30'000), [&] {
    at_30s = rs.documents(0, kLocks).size();
    secondary_at_30s = rs.documents(1, kLocks).size();
  });
  const auto lingering = command_at(w, rs, 0, ms(30'000), find_all());
  const RunResult r = w.run();
  CHECK(r.end == RunEnd::queue_empty);
  CHECK(at_30s == 1);  // expired at 3 s by $$NOW, still there until the pass at 60 s
  CHECK(secondary_at_30s == 1);
  CHECK(batch_size(lingering->doc) == 1);
  CHECK(rs.documents(0, kLocks).empty());
  CHECK(rs.documents(1, kLocks).empty());
  CHECK(rs.documents(2, kLocks).empty());
  REQUIRE(observer.count(Kind::ttl_remove) == 1);
  for (const Recorder::Seen& s : observer.seen) {
    if (s.event.kind != Kind::ttl_remove) continue;
    CHECK(s.member == "mongo-0");
    CHECK(s.event.client == -1);
    CHECK(s.event.now_ms == kEpochMs + 60'000);
    CHECK(s.event.before["key"] == "k");
    CHECK(s.event.after.is_null());
  }
  CHECK(w.trace().contains("mongo mongo-0 TTL monitor pass at " +
                           std::to_string(kEpochMs + 60'000) + ": 1 expired"));
  CHECK(w.now_us() < ms(70'000));  // the monitor stopped once nothing could expire
}

TEST_CASE("replica set: w:1 answers at once, w:majority once a majority applied it",
          "[sim][mongo][rs]") {
  World w(fixed_latency(500));
  MongoReplicaSet rs(w, {.replication_delay_ms = 300});
  const auto one = command_at(w, rs, 0, ms(1000), set_doc("a", write_concern(false)));
  const auto majority = command_at(w, rs, 0, ms(2000), set_doc("b", write_concern(true)));
  w.run();
  REQUIRE(one->got);
  REQUIRE(majority->got);
  CHECK(one->at_us == ms(1000));
  // 300 ms replication delay, 0.5 ms to the secondaries, 0.5 ms for their acknowledgement.
  CHECK(majority->at_us == ms(2000) + ms(300) + 1000);
  CHECK(majority->doc["n"] == 1);
  CHECK_FALSE(majority->doc.contains("writeConcernError"));
}

TEST_CASE("replica set: wtimeout gives writeConcernError 64 and the write stays applied",
          "[sim][mongo][rs]") {
  World w(fixed_latency());
  MongoReplicaSet rs(w, {.replication_delay_ms = 5000});
  const auto r = command_at(w, rs, 0, ms(1000), set_doc("a", write_concern(true, 1000)));
  size_t secondary_at_3s = 99;
  at(w, ms(3000), [&] { secondary_at_3s = rs.documents(1, kLocks).size(); });
  w.run();
  REQUIRE(r->got);
  CHECK(r->at_us == ms(2000));
  CHECK(r->doc["ok"] == 1);
  CHECK(r->doc["n"] == 1);
  REQUIRE(r->doc.contains("writeConcernError"));
  CHECK(r->doc["writeConcernError"]["code"] == 64);
  CHECK(r->doc["writeConcernError"]["errmsg"] == "waiting for replication timed out");
  CHECK(secondary_at_3s == 0);
  CHECK(rs.documents(1, kLocks).size() == 1);  // arrives after the delay anyway
}

TEST_CASE(
    "replica set: a new primary is elected after the election timeout when the primary crashes",
    "[sim][mongo][rs]") {
  World w(fixed_latency());
  MongoReplicaSet rs(w, {});
  int primary_at_12s = 99;
  int primary_at_30s = 99;
  at(w, ms(5000), [&] { rs.crash(0); });
  at(w, ms(12'000), [&] { primary_at_12s = rs.primary(); });  // < 10 s after the last heartbeat
  at(w, ms(30'000), [&] { primary_at_30s = rs.primary(); });
  // A client writing meanwhile waits in server selection, then reaches the new primary.
  const NodeId c = w.add_node("client");
  SimMongoConnection conn(w, c, rs, 1);
  MongoResult during;
  TimeUs during_done = 0;
  w.spawn(
      c, "writer",
      [&] {
        during = conn.run_command("lockstep", set_doc("x", write_concern(true)));
        during_done = w.now_us();
      },
      ms(6000));
  w.run();
  CHECK(primary_at_12s == -1);
  REQUIRE((primary_at_30s == 1 || primary_at_30s == 2));
  CHECK(rs.term(primary_at_30s) == 2);
  CHECK(w.trace().contains("elected primary in term 2"));
  REQUIRE(during.ok());
  CHECK(during.reply["n"] == 1);
  CHECK(during_done > ms(13'000));
  CHECK(during_done < ms(19'500));
  CHECK(conn.selected() == primary_at_30s);
}

TEST_CASE(
    "replica set: a partitioned primary steps down, and after the heal it follows the new one",
    "[sim][mongo][rs]") {
  World w(fixed_latency());
  MongoReplicaSet rs(w, {});
  at(w, ms(1000), [&] {
    w.network().partition_both(rs.node(0), rs.node(1));
    w.network().partition_both(rs.node(0), rs.node(2));
  });
  MongoRole role_at_14s = MongoRole::primary;
  int primary_at_20s = -1;
  at(w, ms(14'000), [&] { role_at_14s = rs.role(0); });
  at(w, ms(20'000), [&] { primary_at_20s = rs.primary(); });
  at(w, ms(25'000), [&] { w.network().heal_all(); });
  const auto refused = command_at(w, rs, 0, ms(21'000), set_doc("a", write_concern(false)));
  at(w, ms(35'000), [] {});  // keep the run going until after the heal
  w.run();
  CHECK(role_at_14s == MongoRole::secondary);
  CHECK(w.trace().contains("mongo mongo-0 steps down from term 1"));
  REQUIRE((primary_at_20s == 1 || primary_at_20s == 2));
  CHECK(refused->doc["code"] == 10107);
  CHECK(refused->doc["codeName"] == "NotWritablePrimary");
  CHECK(rs.term(0) == 2);
  CHECK(rs.role(0) == MongoRole::secondary);
  CHECK(rs.last_optime(0) == rs.last_optime(primary_at_20s));
}

TEST_CASE(
    "replica set: w:1 writes the new primary never got are rolled back, w:majority ones survive",
    "[sim][mongo][rs]") {
  World w(fixed_latency());
  Recorder observer;
  MongoReplicaSet rs(w, {.replication_delay_ms = 1000, .observer = &observer});
  const auto kept = command_at(w, rs, 0, ms(500), set_doc("majority", write_concern(true)));
  const auto lost = command_at(w, rs, 0, ms(2000), set_doc("w1", write_concern(false)));
  at(w, ms(2500), [&] { rs.crash(0); });  // before w1's push at 3 s
  at(w, ms(20'000), [&] { rs.restart(0); });
  size_t old_primary_docs_before_restart = 0;
  at(w, ms(19'999), [&] { old_primary_docs_before_restart = rs.documents(0, kLocks).size(); });
  at(w, ms(30'000), [] {});
  w.run();
  REQUIRE(kept->got);
  CHECK_FALSE(kept->doc.contains("writeConcernError"));
  REQUIRE(lost->got);
  CHECK(lost->doc["n"] == 1);
  CHECK(old_primary_docs_before_restart == 2);  // journaled: survives the crash
  for (int m = 0; m < 3; ++m) {
    const std::vector<Doc> docs = rs.documents(m, kLocks);
    REQUIRE(docs.size() == 1);
    CHECK(docs[0]["key"] == "majority");
  }
  CHECK(w.trace().contains("mongo mongo-0 rollback 1 entries"));
  CHECK_FALSE(w.trace().contains("should not happen"));
  CHECK(rs.last_optime(0) == rs.last_optime(rs.primary()));
  CHECK(observer.count(Kind::insert) ==
        2);  // both were granted by the primary; nothing for the rollback
  CHECK(observer.count(Kind::remove) == 0);
}

TEST_CASE("replica set: readConcern majority reads the majority-committed state",
          "[sim][mongo][rs]") {
  World w(fixed_latency());
  MongoReplicaSet rs(w, {.replication_delay_ms = 1000});
  command_at(w, rs, 0, ms(1000), set_doc("a", write_concern(false)));
  const auto local = command_at(w, rs, 0, ms(1100), find_all(false));
  const auto majority_early = command_at(w, rs, 0, ms(1100), find_all(true));
  const auto majority_late = command_at(w, rs, 0, ms(2100), find_all(true));
  const auto on_secondary = command_at(w, rs, 1, ms(2100), find_all(false));
  w.run();
  CHECK(batch_size(local->doc) == 1);
  CHECK(batch_size(majority_early->doc) == 0);
  CHECK(batch_size(majority_late->doc) == 1);
  CHECK(on_secondary->doc["code"] == 13435);
}

TEST_CASE("replica set: the observer sees primary writes by client, never replication",
          "[sim][mongo][rs]") {
  World w(fixed_latency());
  Recorder observer;
  MongoReplicaSet rs(w, {.observer = &observer});
  command_at(w, rs, 0, ms(100), set_doc("a", write_concern(true)), 7);
  command_at(w, rs, 0, ms(200), set_doc("a", write_concern(true)), 8);  // $set v:1 again: a no-op
  command_at(
      w, rs, 0, ms(300),
      Doc{{"delete", "locks"}, {"deletes", Doc::array({Doc{{"q", {{"key", "a"}}}, {"limit", 1}}})}},
      9);
  w.run();
  REQUIRE(observer.seen.size() == 3);
  CHECK(observer.seen[0].member == "mongo-0");
  CHECK(observer.seen[0].event.kind == Kind::insert);
  CHECK(observer.seen[0].event.client == 7);
  CHECK(observer.seen[0].event.ns == kLocks);
  CHECK(observer.seen[0].event.before.is_null());
  CHECK(observer.seen[0].event.now_ms == kEpochMs + 100);
  // The no-op has no oplog entry, but the member matched the document: the observer hears it.
  CHECK(observer.seen[1].event.kind == Kind::unchanged);
  CHECK(observer.seen[1].event.client == 8);
  CHECK(observer.seen[1].event.ns == kLocks);
  CHECK(observer.seen[1].event.before == observer.seen[1].event.after);
  CHECK(observer.seen[1].event.after["v"] == 1);
  CHECK(observer.seen[1].event.now_ms == kEpochMs + 200);
  CHECK(observer.seen[2].event.kind == Kind::remove);
  CHECK(observer.seen[2].event.client == 9);
  CHECK(observer.seen[2].event.after.is_null());
}

TEST_CASE("replica set: a take-over's upsert matching the document it took over is no news",
          "[sim][mongo][rs]") {
  // c7 takes "a" with a 100 ms lease; c8 takes it over once it expired. The take-over's second
  // statement (the upsert) matches the document the first one just changed, and changes nothing.
  World w(fixed_latency());
  Recorder observer;
  MongoReplicaSet rs(w, {.observer = &observer});
  command_at(w, rs, 0, ms(100), acquire("a", "v7", 100, write_concern(false)), 7);
  command_at(w, rs, 0, ms(300), acquire("a", "v8", 100, write_concern(false)), 8);
  w.run();
  REQUIRE(observer.seen.size() == 2);
  CHECK(observer.seen[0].event.kind == Kind::insert);
  CHECK(observer.seen[1].event.kind == Kind::update);
  CHECK(observer.seen[1].event.after["value"] == "v8");
  CHECK(observer.count(Kind::unchanged) == 0);
}

TEST_CASE("replica set: the same seed gives the same trace", "[sim][mongo][rs]") {
  auto run = [](uint64_t seed) {
    World w({.seed = seed});  // random latencies
    MongoReplicaSet rs(w, {.replication_delay_ms = 50});
    std::vector<std::unique_ptr<SimMongoConnection>> conns;
    for (int c = 0; c < 3; ++c) {
      const NodeId node = w.add_node("client-" + std::to_string(c));
      conns.push_back(std::make_unique<SimMongoConnection>(w, node, rs, c));
      w.spawn(node, "client", [&w, &conn = *conns.back(), c] {
        conn.run_command("lockstep", indexes());
        for (int i = 0; i < 5; ++i) {
          conn.run_command("lockstep",
                           acquire("k", "c" + std::to_string(c), 3000, write_concern(i % 2 == 0)));
          w.sleep_for_us(ms(1500));
        }
      });
    }
    at(w, ms(4000), [&] { rs.crash(rs.primary()); });
    at(w, ms(30'000), [&rs] {
      for (int m = 0; m < rs.members(); ++m) {
        if (!rs.alive(m)) rs.restart(m);
      }
    });
    w.run();
    return w.trace().hash_hex();
  };
  const std::string first = run(7);
  CHECK(run(7) == first);
  CHECK(run(8) != first);
}
TEST_CASE("replica set: a primary that steps down answers its waiting w:majority writes with 189",
          "[sim][mongo][rs]") {
  World w(fixed_latency());
  MongoReplicaSet rs(w, {});
  at(w, ms(1000), [&] {
    w.network().partition_both(rs.node(0), rs.node(1));
    w.network().partition_both(rs.node(0), rs.node(2));
  });
  const auto waiting = command_at(w, rs, 0, ms(1500), set_doc("cut-off", write_concern(true, 0)));
  at(w, ms(20'000), [&] { w.network().heal_all(); });
  at(w, ms(30'000), [] {});
  w.run();
  REQUIRE(waiting->got);
  CHECK(waiting->at_us > ms(11'000));
  CHECK(waiting->at_us < ms(13'100));
  CHECK(waiting->doc["ok"] == 1);
  CHECK(waiting->doc["n"] == 1);
  CHECK(waiting->doc["writeConcernError"]["code"] == 189);
  CHECK(waiting->doc["writeConcernError"]["codeName"] == "PrimarySteppedDown");
  // It never reached a majority: the healed member rolls it back.
  CHECK(rs.documents(0, kLocks).empty());
  CHECK(w.trace().contains("mongo mongo-0 rollback 1 entries"));
  CHECK_FALSE(w.trace().contains("should not happen"));
}

TEST_CASE("replica set: the connection forgets a primary that says it is not, or does not answer",
          "[sim][mongo][rs]") {
  World w(fixed_latency());
  MongoReplicaSet rs(w, {});
  const NodeId c = w.add_node("client");
  SimMongoConnection conn(w, c, rs, 1);
  CHECK(conn.endpoint() == "sim:rs0");
  at(w, ms(2000), [&] {
    w.network().partition_both(rs.node(0), rs.node(1));
    w.network().partition_both(rs.node(0), rs.node(2));
  });
  std::vector<MongoResult> results;
  std::vector<int> selected;
  w.spawn(
      c, "client",
      [&] {
        results.push_back(conn.run_command("lockstep", set_doc("a", write_concern(false))));
        selected.push_back(conn.selected());
        w.sleep_for_us(ms(20'000));  // mongo-0 has stepped down meanwhile
        results.push_back(conn.run_command("lockstep", set_doc("b", write_concern(false))));
        selected.push_back(conn.selected());
        results.push_back(conn.run_command("lockstep", set_doc("b", write_concern(false))));
        selected.push_back(conn.selected());
        rs.crash(conn.selected());
        results.push_back(conn.run_command("lockstep", set_doc("c", write_concern(false))));
        selected.push_back(conn.selected());
      },
      ms(1000));
  w.run();
  REQUIRE(results.size() == 4);
  CHECK(results[0].reply["n"] == 1);
  CHECK(selected[0] == 0);
  CHECK(results[1].reply["code"] == 10107);
  CHECK(selected[1] == -1);
  CHECK(results[2].reply["n"] == 1);
  CHECK((selected[2] == 1 || selected[2] == 2));
  CHECK(results[3].status == IoStatus::timeout);
  CHECK(selected[3] == -1);
}

TEST_CASE("replica set: a reset ends a command as connection_lost, or refuses the next one",
          "[sim][mongo][rs][reset]") {
  World w(fixed_latency());
  MongoReplicaSet rs(w, {});
  const NodeId c = w.add_node("client");
  SimMongoConnection conn(w, c, rs, 1);
  std::vector<MongoResult> results;
  std::vector<TimeUs> returned_us;
  std::vector<int> selected;
  w.spawn(
      c, "client",
      [&] {
        const auto run = [&](const std::string& key) {
          results.push_back(conn.run_command("lockstep", set_doc(key, write_concern(false))));
          returned_us.push_back(w.now_us());
          selected.push_back(conn.selected());
        };
        run("a");  // selects mongo-0 first (hello), then writes
        at(w, w.now_us() + 200, [&] { conn.reset(); });  // the next write is on its way
        run("b");
        run("c");                                        // selects again, and writes
        at(w, w.now_us() + 100, [&] { conn.reset(); });  // idle: found out by the next write
        w.sleep_for_us(ms(10));
        run("d");
        run("e");
      },
      ms(1000));
  w.run();
  REQUIRE(results.size() == 5);
  CHECK(results[0].ok());
  CHECK(results[1].status == IoStatus::connection_lost);
  CHECK(returned_us[1] - returned_us[0] == 200);  // at once, not at the timeout
  CHECK(selected[1] == -1);                       // selects again, as a driver reconnects
  CHECK(results[2].ok());
  CHECK(results[3].status == IoStatus::connection_error);
  CHECK(results[4].ok());
  CHECK(w.trace().contains("lost with its reset connection"));
}

TEST_CASE("replica set: with no primary reachable, server selection times out",
          "[sim][mongo][rs]") {
  World w(fixed_latency());
  MongoReplicaSet rs(w, {});
  const NodeId c = w.add_node("client");
  SimMongoConnection conn(w, c, rs, 1, {.server_selection_timeout_us = 3'000'000});
  at(w, ms(500), [&] {
    rs.crash(0);
    rs.crash(1);
  });
  MongoResult result;
  TimeUs done = 0;
  w.spawn(
      c, "client",
      [&] {
        result = conn.run_command("lockstep", set_doc("a", write_concern(false)));
        done = w.now_us();
      },
      ms(1000));
  w.run();
  CHECK(result.status == IoStatus::timeout);
  CHECK(result.message.find("no primary") != std::string::npos);
  CHECK(done == ms(4000));
}

TEST_CASE("replica set: a paused primary is replaced and rejoins as a secondary after its pause",
          "[sim][mongo][rs]") {
  World w(fixed_latency());
  MongoReplicaSet rs(w, {});
  const NodeId c = w.add_node("client");
  SimMongoConnection conn(w, c, rs, 1);
  at(w, ms(1500), [&] { w.pause(rs.node(0), ms(20'000), "gc"); });
  std::vector<MongoResult> results;
  w.spawn(
      c, "client",
      [&] {
        results.push_back(conn.run_command("lockstep", set_doc("a", write_concern(true))));
        w.sleep_for_us(ms(1000));
        results.push_back(
            conn.run_command("lockstep", set_doc("b", write_concern(true))));  // paused: timeout
        results.push_back(
            conn.run_command("lockstep", set_doc("c", write_concern(true))));  // the new primary
      },
      ms(1000));
  at(w, ms(40'000), [] {});
  w.run();
  REQUIRE(results.size() == 3);
  CHECK(results[0].reply["n"] == 1);
  CHECK(results[1].status == IoStatus::timeout);
  CHECK(results[2].reply["n"] == 1);
  const int p = rs.primary();
  REQUIRE((p == 1 || p == 2));
  CHECK(rs.role(0) == MongoRole::secondary);
  CHECK(rs.last_optime(0) == rs.last_optime(p));
  CHECK(rs.documents(0, kLocks) == rs.documents(p, kLocks));
  CHECK_FALSE(w.trace().contains("should not happen"));
}

TEST_CASE("replica set: a healthy set with a short election timeout never holds an election",
          "[sim][mongo][rs]") {
  // The failover scenario's 500 ms timeout, with heartbeats a fifth of it: a minute of traffic
  // on the primary and no member ever stands (with the old 2000 ms heartbeats, secondaries that
  // heard nothing for 500 ms ran dry-run elections against a live primary).
  World w(fixed_latency());
  MongoReplicaSet rs(
      w, {.election_timeout_ms = 500, .heartbeat_interval_ms = heartbeat_interval_for(500)});
  for (int i = 0; i < 60; ++i)
    command_at(w, rs, 0, ms(1000) * i, set_doc("k", write_concern(true)));
  w.run();
  CHECK(rs.primary() == 0);
  for (int m = 0; m < rs.members(); ++m) CHECK(rs.term(m) == 1);
  int elections = 0;
  for (const std::string& line : w.trace().lines())
    elections += line.find("election for term") != std::string::npos ? 1 : 0;
  CHECK(elections == 0);
  CHECK_THROWS_AS(MongoReplicaSet(w, {.election_timeout_ms = 500, .heartbeat_interval_ms = 2000}),
                  std::logic_error);
}
