// The simulated store's replies, held to what Debian's etcd 3.4.23 answered to the same requests
// (probed over its gateway; the header, which the cluster adds, aside). The differential test
// holds the two to each other on random sequences; these are the shapes spelled out.
#include <catch2/catch.hpp>

#include "services/etcd/client/etcd_json.h"
#include "services/etcd/sim/etcd_store.h"
#include "services/etcd/tests/etcd_support.h"

namespace lockstep::sim::etcd {
namespace {

using lockstep::etcd::base64_encode;

using lockstep::testing::b;

Applied write(EtcdStore& store, const std::string& path, const EtcdJson& body) {
  if (std::optional<Applied> refused = EtcdStore::validate(path, body)) return *refused;
  return store.apply(path, body, lockstep::etcd::int_field(body, "ID").value_or(0));
}

TEST_CASE("puts, ranges and deletes answer as etcd 3.4.23 does", "[etcd][store]") {
  EtcdStore store(1);
  CHECK(store.revision() == 1);
  CHECK(write(store, "/v3/kv/put", {{"key", b("a")}, {"value", b("1")}}).body ==
        EtcdJson::object());
  CHECK(store.revision() == 2);
  const Applied second =
      write(store, "/v3/kv/put", {{"key", b("a")}, {"value", b("2")}, {"prev_kv", true}});
  CHECK(
      second.body ==
      EtcdJson::parse(
          R"({"prev_kv":{"key":"YQ==","create_revision":"2","mod_revision":"2","version":"1","value":"MQ=="}})"));
  write(store, "/v3/kv/put", {{"key", b("b")}, {"value", ""}});
  CHECK(
      store.range({{"key", b("a")}, {"range_end", b("c")}}).body ==
      EtcdJson::parse(
          R"({"kvs":[{"key":"YQ==","create_revision":"2","mod_revision":"3","version":"2","value":"Mg=="},{"key":"Yg==","create_revision":"4","mod_revision":"4","version":"1"}],"count":"2"})"));
  CHECK(
      store.range({{"key", b("a")}, {"range_end", b("c")}, {"limit", 1}}).body ==
      EtcdJson::parse(
          R"({"kvs":[{"key":"YQ==","create_revision":"2","mod_revision":"3","version":"2","value":"Mg=="}],"more":true,"count":"2"})"));
  // etcd's waitDeletes query: the newest key created at or before a revision.
  CHECK(
      store
          .range({{"key", b("a")},
                  {"range_end", b("c")},
                  {"sort_order", "DESCEND"},
                  {"sort_target", "CREATE"},
                  {"limit", 1},
                  {"max_create_revision", "2"}})
          .body ==
      EtcdJson::parse(
          R"({"kvs":[{"key":"YQ==","create_revision":"2","mod_revision":"3","version":"2","value":"Mg=="}],"count":"2"})"));
  CHECK(store.range({{"key", b("a")}, {"range_end", b("c")}, {"count_only", true}}).body ==
        EtcdJson::parse(R"({"count":"2"})"));
  CHECK(store.range({{"key", b("zz")}}).body == EtcdJson::object());
  // A sort target without a sort order: etcd fetches limit + 1 keys in key order and sorts only
  // those (found by the differential test). "a" (mod 3) comes after "b" (mod 4) unsorted.
  write(store, "/v3/kv/put", {{"key", b("c")}});  // mod 5
  CHECK(store.range({{"key", b("a")}, {"range_end", "AA=="}, {"limit", 1}, {"sort_target", "MOD"}})
            .body["kvs"][0]["key"] == b("a"));
  CHECK(store
            .range({{"key", b("b")},
                    {"range_end", "AA=="},
                    {"limit", 1},
                    {"sort_target", "MOD"},
                    {"sort_order", "DESCEND"}})
            .body["kvs"][0]["key"] == b("c"));
  write(store, "/v3/kv/deleterange", {{"key", b("c")}});
  CHECK(
      EtcdStore::validate("/v3/kv/range", EtcdJson::object())->body ==
      EtcdJson::parse(
          R"({"error":"etcdserver: key is not provided","message":"etcdserver: key is not provided","code":3})"));
  CHECK(write(store, "/v3/kv/deleterange", {{"key", b("zz")}}).body == EtcdJson::object());
  CHECK(store.revision() == 6);  // deleting nothing keeps the revision
  CHECK(
      write(store, "/v3/kv/deleterange", {{"key", b("b")}, {"prev_kv", true}}).body ==
      EtcdJson::parse(
          R"({"deleted":"1","prev_kvs":[{"key":"Yg==","create_revision":"4","mod_revision":"4","version":"1"}]})"));
  CHECK(store.range({{"key", b("a")}, {"revision", "999"}}).http_status == 400);
}

TEST_CASE("txns answer as etcd 3.4.23 does", "[etcd][store]") {
  EtcdStore store(1);
  write(store, "/v3/kv/put", {{"key", b("a")}, {"value", b("2")}});              // revision 2
  write(store, "/v3/kv/put", {{"key", b("q")}});                                 // revision 3
  write(store, "/v3/kv/put", {{"key", b("r")}});                                 // revision 4
  write(store, "/v3/kv/deleterange", {{"key", b("q")}, {"range_end", b("s")}});  // revision 5
  // The failure branch of a create-if-absent: reads only, at the current revision.
  const Applied failed = write(
      store, "/v3/kv/txn",
      {{"compare",
        {{{"key", b("a")}, {"target", "CREATE"}, {"result", "EQUAL"}, {"create_revision", "0"}}}},
       {"success", {{{"request_put", {{"key", b("a")}, {"value", b("x")}}}}}},
       {"failure",
        {{{"request_range", {{"key", b("a")}}}},
         {{"request_range", {{"key", b("a")}, {"range_end", b("b")}}}}}}});
  CHECK(
      failed.body ==
      EtcdJson::parse(
          R"({"responses":[{"response_range":{"header":{"revision":"5"},"kvs":[{"key":"YQ==","create_revision":"2","mod_revision":"2","version":"1","value":"Mg=="}],"count":"1"}},{"response_range":{"header":{"revision":"5"},"kvs":[{"key":"YQ==","create_revision":"2","mod_revision":"2","version":"1","value":"Mg=="}],"count":"1"}}]})"));
  const Applied created = write(
      store, "/v3/kv/txn",
      {{"compare",
        {{{"key", b("n")}, {"target", "CREATE"}, {"result", "EQUAL"}, {"create_revision", "0"}}}},
       {"success",
        {{{"request_put", {{"key", b("n")}, {"value", b("x")}}}},
         {{"request_range", {{"key", b("n")}}}},
         {{"request_delete_range", {{"key", b("zz")}}}}}}});
  CHECK(
      created.body ==
      EtcdJson::parse(
          R"({"succeeded":true,"responses":[{"response_put":{"header":{"revision":"6"}}},{"response_range":{"header":{"revision":"6"},"kvs":[{"key":"bg==","create_revision":"6","mod_revision":"6","version":"1","value":"eA=="}],"count":"1"}},{"response_delete_range":{"header":{"revision":"6"}}}]})"));
  // A value compare on a missing key always fails, whatever the relation.
  CHECK(write(store, "/v3/kv/txn",
              {{"compare",
                {{{"key", b("nope")},
                  {"target", "VALUE"},
                  {"result", "NOT_EQUAL"},
                  {"value", b("x")}}}}})
            .body == EtcdJson::object());
  CHECK(write(store, "/v3/kv/txn", EtcdJson::object()).body ==
        EtcdJson::parse(R"({"succeeded":true})"));
  CHECK(write(store, "/v3/kv/txn",
              {{"success",
                {{{"request_put", {{"key", b("y")}}}}, {{"request_put", {{"key", b("y")}}}}}}})
            .body["error"] == "etcdserver: duplicate key given in txn request");
}

TEST_CASE("leases: grant, attach, revoke with their keys, as etcd 3.4.23 does", "[etcd][store]") {
  EtcdStore store(1);
  CHECK(write(store, "/v3/lease/grant", {{"TTL", -5}, {"ID", "9"}}).body ==
        EtcdJson::parse(R"({"ID":"9","TTL":"1"})"));  // raised to the minimum TTL
  CHECK(store.apply("/v3/lease/grant", {{"TTL", 100}, {"ID", "77"}}, 77).body ==
        EtcdJson::parse(R"({"ID":"77","TTL":"100"})"));
  CHECK(store.apply("/v3/lease/grant", {{"TTL", 100}, {"ID", "77"}}, 77).http_status == 412);
  CHECK(EtcdStore::validate("/v3/lease/grant", {{"TTL", 9000000001}})->http_status == 400);
  CHECK(write(store, "/v3/kv/put", {{"key", b("q")}, {"lease", "5555"}}).http_status == 404);
  write(store, "/v3/kv/put", {{"key", b("m1")}, {"lease", "77"}});
  write(store, "/v3/kv/put", {{"key", b("m2")}, {"lease", "77"}});
  write(store, "/v3/kv/put", {{"key", b("m2")}, {"lease", "0"}});  // detached again
  CHECK(store.lease(77)->keys == std::set<std::string>{"m1"});
  const int64_t before = store.revision();
  const Applied revoked = write(store, "/v3/lease/revoke", {{"ID", "77"}});
  CHECK(revoked.revoked_lease == 77);
  CHECK(store.revision() == before + 1);
  CHECK(store.keys().count("m1") == 0);
  CHECK(store.keys().count("m2") == 1);
  CHECK(write(store, "/v3/lease/revoke", {{"ID", "77"}}).http_status == 404);
}

}  // namespace
}  // namespace lockstep::sim::etcd
