// Differential test: the same random request sequence, sent to Debian's etcd 3.4.23 (one member
// the test starts) and to the simulated cluster (three members, through a follower, so every
// write is forwarded to the leader and every read goes through ReadIndex), must get the same
// replies: status, every field, every revision.
//
// Requests: put, range (ranges and prefixes, limit, sorts, count/keys only, create-revision
// bounds), deleterange, txns (compares on every target and relation, put/range/delete ops,
// duplicate keys), lease grant/revoke/keepalive/timetolive, an uncontended Lock RPC and Unlock,
// and watches opened at a past revision (the created message and the catch-up). What is left out
// and why: the member and cluster IDs and the raft term in headers (names of machines, not
// answers); leases granted without an ID (the server picks the ID from its member ID and clock:
// each side's n-th such ID is mapped to the other's n-th); leases short enough to expire during a
// run, and the remaining TTL of timetolive to the second (time passes at other rates on the two
// sides: only "running" or -1 is compared); a Lock
// RPC that would wait (it would block the sequence); reads at a past revision (not modelled).
//
// LOCKSTEP_ETCD_DIFF_OPS sets the number of requests (10000 by default), LOCKSTEP_ETCD_DIFF_SEED
// the seed. The first disagreement fails the test with both replies and the request.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <map>

#include <fmt/format.h>

#include "lockstep/random.h"
#include "services/etcd/adapter/http_connection.h"
#include "services/etcd/client/etcd_json.h"
#include "services/etcd/real/etcd_cluster.h"
#include "services/etcd/sim/etcd_cluster.h"
#include "services/etcd/sim/sim_etcd_connection.h"
#include "services/etcd/tests/etcd_support.h"
#include "sim/world.h"

namespace lockstep {
namespace {

using etcd::base64_encode;
using etcd::int_field;

int64_t env_or(const char* name, int64_t fallback) {
  const char* text = std::getenv(name);
  return text != nullptr && *text != '\0' ? std::atoll(text) : fallback;
}

struct Request {
  std::string path;
  EtcdJson body;
  bool stream = false;  // a watch: compare the created message and the catch-up
};

class Generator {
 public:
  explicit Generator(uint64_t seed) : prng_(seed) {}

  Request next(const sim::etcd::EtcdStore& state) {
    switch (prng_.below(16)) {
      case 0:
      case 1:
      case 2: return {"/v3/kv/put", put()};
      case 3:
      case 4: return {"/v3/kv/range", range(state)};
      case 5: return {"/v3/kv/deleterange", delete_range()};
      case 6:
      case 7: return {"/v3/kv/txn", txn()};
      case 8: return {"/v3/lease/grant", grant()};
      case 9: return {"/v3/lease/revoke", {{"ID", lease_id()}}};
      case 10: return {"/v3/lease/keepalive", {{"ID", lease_id()}}};
      case 11: return {"/v3/lease/timetolive", {{"ID", lease_id()}, {"keys", prng_.chance(1, 2)}}};
      case 12: return lock(state);
      case 13:
        return {"/v3/lock/unlock",
                {{"key", b(lock_name() + "/" + fmt::format("{:x}", pick_lease()))}}};
      case 14: return watch(state);
      default: return {"/v3/kv/range", {{"key", b(key())}, {"range_end", "AA=="}}};
    }
  }

 private:
  static std::string b(const std::string& s) { return base64_encode(s); }
  std::string pick(const std::vector<std::string>& choices) {
    return choices[prng_.below(choices.size())];
  }
  std::string key() { return pick({"a", "b", "c", "ab", "b/1", "b/2", "L/x"}); }
  std::string lock_name() { return pick({"L", "M"}); }
  int64_t pick_lease() { return static_cast<int64_t>(1 + prng_.below(5)); }
  std::string lease_id() { return prng_.chance(1, 10) ? "999" : std::to_string(pick_lease()); }
  EtcdJson range_end_for(const std::string& k) {
    switch (prng_.below(4)) {
      case 0: return b(etcd::prefix_range_end(k));
      case 1: return "AA==";  // every key from k on
      case 2: return b(pick({"b", "c", "z"}));
      default: return nullptr;
    }
  }
  EtcdJson put() {
    EtcdJson body = {{"key", b(key())}};
    if (prng_.chance(2, 3)) body["value"] = b(pick({"1", "2", "xy"}));
    if (prng_.chance(1, 3)) body["lease"] = lease_id();
    if (prng_.chance(1, 3)) body["prev_kv"] = true;
    return body;
  }
  EtcdJson range(const sim::etcd::EtcdStore& state) {
    const std::string k = key();
    EtcdJson body = {{"key", b(k)}};
    const EtcdJson end = range_end_for(k);
    if (!end.is_null()) body["range_end"] = end;
    if (prng_.chance(1, 3)) body["limit"] = static_cast<int64_t>(prng_.below(3));
    if (prng_.chance(1, 2)) {
      body["sort_order"] = pick({"NONE", "ASCEND", "DESCEND"});
      body["sort_target"] = pick({"KEY", "CREATE", "MOD", "VERSION", "VALUE"});
    }
    if (prng_.chance(1, 4))
      body["max_create_revision"] =
          std::to_string(1 + prng_.below(static_cast<uint64_t>(state.revision())));
    if (prng_.chance(1, 6))
      body["min_create_revision"] =
          std::to_string(1 + prng_.below(static_cast<uint64_t>(state.revision())));
    if (prng_.chance(1, 6)) body["count_only"] = true;
    if (prng_.chance(1, 6)) body["keys_only"] = true;
    if (prng_.chance(1, 20)) body["revision"] = std::to_string(state.revision() + 5);  // future
    return body;
  }
  EtcdJson delete_range() {
    const std::string k = key();
    EtcdJson body = {{"key", b(k)}};
    if (prng_.chance(1, 3)) body["range_end"] = b(etcd::prefix_range_end(k));
    if (prng_.chance(1, 2)) body["prev_kv"] = true;
    return body;
  }
  EtcdJson compare() {
    const std::string target = pick({"VERSION", "CREATE", "MOD", "VALUE", "LEASE"});
    EtcdJson c = {{"key", b(key())},
                  {"target", target},
                  {"result", pick({"EQUAL", "NOT_EQUAL", "GREATER", "LESS"})}};
    if (target == "VALUE") c["value"] = b(pick({"", "1", "2"}));
    if (target == "VERSION") c["version"] = std::to_string(prng_.below(3));
    if (target == "CREATE") c["create_revision"] = std::to_string(prng_.below(6));
    if (target == "MOD") c["mod_revision"] = std::to_string(prng_.below(8));
    if (target == "LEASE") c["lease"] = std::to_string(prng_.below(3));
    if (prng_.chance(1, 5)) c["range_end"] = b(etcd::prefix_range_end(key()));
    return c;
  }
  EtcdJson ops() {
    EtcdJson list = EtcdJson::array();
    const uint64_t n = prng_.below(4);
    for (uint64_t i = 0; i < n; ++i) {
      switch (prng_.below(3)) {
        case 0: list.push_back({{"request_put", put()}}); break;
        case 1: {
          const std::string k = key();
          EtcdJson r = {{"key", b(k)}};
          if (prng_.chance(1, 2)) r["range_end"] = b(etcd::prefix_range_end(k));
          list.push_back({{"request_range", r}});
          break;
        }
        default: list.push_back({{"request_delete_range", delete_range()}}); break;
      }
    }
    return list;
  }
  EtcdJson txn() {
    EtcdJson body = EtcdJson::object();
    EtcdJson compares = EtcdJson::array();
    for (uint64_t i = prng_.below(3); i > 0; --i) compares.push_back(compare());
    if (!compares.empty()) body["compare"] = compares;
    EtcdJson success = ops();
    EtcdJson failure = ops();
    if (!success.empty()) body["success"] = success;
    if (!failure.empty()) body["failure"] = failure;
    return body;
  }
  EtcdJson grant() {
    // Long enough that no lease expires during a run on either side.
    EtcdJson body = {{"TTL", prng_.chance(1, 2) ? 100'000 : 200'000}};
    if (prng_.chance(9, 10)) body["ID"] = std::to_string(pick_lease());
    return body;
  }
  // Only a lock that will not wait: the name's prefix is empty or holds this lease's key alone.
  Request lock(const sim::etcd::EtcdStore& state) {
    const std::string name = lock_name();
    const int64_t lease = pick_lease();
    const std::string mine = etcd::lock_key(name, lease);
    for (const auto& [k, kv] : state.keys()) {
      if (k.starts_with(name + "/") && k != mine)
        return {"/v3/kv/range",
                {{"key", b(name + "/")}, {"range_end", b(etcd::prefix_range_end(name + "/"))}}};
    }
    if (state.lease(lease) == nullptr)
      return {"/v3/lease/grant", {{"TTL", 100'000}, {"ID", std::to_string(lease)}}};
    return {"/v3/lock/lock", {{"name", b(name)}, {"lease", std::to_string(lease)}}};
  }
  Request watch(const sim::etcd::EtcdStore& state) {
    const std::string k = key();
    EtcdJson create = {{"key", b(k)},
                       {"start_revision",
                        std::to_string(1 + prng_.below(static_cast<uint64_t>(state.revision())))}};
    if (prng_.chance(1, 2)) create["range_end"] = b(etcd::prefix_range_end(k));
    if (prng_.chance(1, 2)) create["prev_kv"] = true;
    return {"/v3/watch", {{"create_request", create}}, true};
  }

  Prng prng_;
};

// What is compared: the reply less the header's machine names, remaining TTLs to the second.
EtcdJson normalized(EtcdJson body, std::map<std::string, std::string>& auto_ids, bool real) {
  if (!body.is_object()) return body;
  EtcdJson* inner = body.contains("result") ? &body["result"] : &body;
  if (inner->contains("header")) {
    for (const char* field : {"cluster_id", "member_id", "raft_term"})
      (*inner)["header"].erase(field);
  }
  if (inner->contains("ID") && (*inner)["ID"].is_string()) {
    const std::string id = (*inner)["ID"];
    if (id.size() > 6) {  // a server-picked lease ID: named by its rank among its side's
      const std::string side = real ? "real:" : "sim:";
      size_t rank = 0;
      for (const auto& [seen, label] : auto_ids) rank += seen.starts_with(side) ? 1 : 0;
      auto [it, added] = auto_ids.emplace(side + id, fmt::format("auto#{}", rank));
      (*inner)["ID"] = it->second;
    }
  }
  return body;
}

// A remaining TTL, as it can be compared: time passes at other rates on the two sides (a real
// write takes milliseconds, a simulated one less), so only "still running" or -1 (no lease).
// And the keys of a lease, which etcd lists in its Go map's order: as a sorted set.
void coarse_ttl(EtcdJson& body) {
  if (body.is_object() && body.contains("keys")) {
    std::vector<std::string> keys = body["keys"];
    std::sort(keys.begin(), keys.end());
    body["keys"] = keys;
  }
  if (!body.is_object() || !body.contains("TTL")) return;
  const int64_t ttl = int_field(body, "TTL").value_or(0);
  const int64_t granted = int_field(body, "grantedTTL").value_or(0);
  body["TTL"] = ttl < 0 ? "-1" : (ttl > 0 && ttl <= granted ? "running" : body["TTL"]);
}

TEST_CASE("the simulated cluster answers as etcd 3.4.23 does, request for request",
          "[etcd][differential]") {
  testing::require_etcd();
  const int64_t ops = env_or("LOCKSTEP_ETCD_DIFF_OPS", 10'000);
  const uint64_t seed = static_cast<uint64_t>(env_or("LOCKSTEP_ETCD_DIFF_SEED", 1));
  real::EtcdCluster server;
  HttpEtcdConnection real({.ports = server.client_ports(), .request_timeout_ms = 5000});

  sim::World world({.seed = seed});
  sim::etcd::EtcdCluster cluster(world, {.members = 3});
  REQUIRE(cluster.min_lease_ttl_s() == 1);
  const sim::NodeId client = world.add_node("client");
  Generator generator(seed);
  std::map<std::string, std::string> auto_ids;
  int64_t compared = 0;
  std::string disagreement;
  world.spawn(client, "client", [&] {
    sim::etcd::SimEtcdConnection simulated(world, client, cluster, 0,
                                           {.request_timeout_us = 30'000'000, .members = {1}});
    for (int64_t i = 0; i < ops && disagreement.empty(); ++i) {
      const Request request = generator.next(cluster.store(1));
      std::vector<EtcdResult> real_replies;
      std::vector<EtcdResult> sim_replies;
      if (request.stream) {
        std::unique_ptr<EtcdStream> sim_watch = simulated.open(request.path, request.body);
        sim_replies.push_back(sim_watch->next(1'000'000));
        EtcdResult catch_up = sim_watch->next(20'000);  // within a round trip, if there is one
        if (catch_up.ok()) sim_replies.push_back(std::move(catch_up));
        std::unique_ptr<EtcdStream> real_watch = real.open(request.path, request.body);
        for (size_t n = 0; n < sim_replies.size(); ++n)
          real_replies.push_back(real_watch->next(5'000'000));
      } else {
        real_replies.push_back(real.call(request.path, request.body));
        sim_replies.push_back(simulated.call(request.path, request.body));
      }
      for (size_t n = 0; n < real_replies.size() && disagreement.empty(); ++n) {
        const EtcdResult& a = real_replies[n];
        const EtcdResult& s = sim_replies[n];
        EtcdJson na = normalized(a.body, auto_ids, true);
        EtcdJson ns = normalized(s.body, auto_ids, false);
        bool same = a.ok() && s.ok() && a.http_status == s.http_status;
        if (request.path == "/v3/lease/timetolive") {
          coarse_ttl(na);
          coarse_ttl(ns);
        }
        same = same && na == ns;
        if (!same) {
          disagreement = fmt::format("request {} (seed {}): {} {}\n  etcd: {} {}\n  sim:  {} {}", i,
                                     seed, request.path, request.body.dump(), a.http_status,
                                     a.ok() ? na.dump() : describe(a), s.http_status,
                                     s.ok() ? ns.dump() : describe(s));
        }
      }
      ++compared;
    }
  });
  world.run();
  INFO(disagreement);
  CHECK(disagreement.empty());
  CHECK(compared == ops);
}

}  // namespace
}  // namespace lockstep
