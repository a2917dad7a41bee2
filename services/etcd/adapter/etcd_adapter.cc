#include "services/etcd/adapter/etcd_adapter.h"

#include <fmt/format.h>

#include "services/etcd/client/etcd_json.h"

namespace lockstep {

using etcd::base64_encode;
using etcd::bytes_field;
using etcd::int_field;

namespace {

constexpr int kWaitLoopsMax = 10'000;  // predecessors waited for in one attempt, at most

EtcdJson range_of(const std::string& prefix, const std::string& end, const char* target,
                  const char* order) {
  return {{"key", base64_encode(prefix)},
          {"range_end", base64_encode(end)},
          {"sort_target", target},
          {"sort_order", order},
          {"limit", 1}};
}

}  // namespace

AdapterResult EtcdAdapter::create_lock(const LockSpec& spec) {
  const int64_t started_us = options_.clock->monotonic_us();
  Held held;
  Step step = grant(spec.ttl_ms, held);
  if (!step.result.ok()) return step.result;
  const std::string name = name_of(spec.key);
  const std::string prefix = name + "/";
  const std::string end = etcd::prefix_range_end(prefix);
  held.key = etcd::lock_key(name, held.lease);
  const bool by_key = flaw_ == EtcdRecipeFlaw::smallest_key;
  const EtcdJson first = range_of(prefix, end, by_key ? "KEY" : "CREATE", "ASCEND");
  const EtcdJson txn = {
      {"compare",
       {{{"key", base64_encode(held.key)},
         {"target", "CREATE"},
         {"result", "EQUAL"},
         {"create_revision", "0"}}}},
      {"success",
       {{{"request_put",
          {{"key", base64_encode(held.key)},
           {"value", base64_encode(spec.value)},
           {"lease", std::to_string(held.lease)}}}},
        {{"request_range", first}}}},
      {"failure",
       {{{"request_range", {{"key", base64_encode(held.key)}}}}, {{"request_range", first}}}}};
  step = write("/v3/kv/txn", txn, AdapterStatus::contended);
  if (!step.result.ok()) return give_up(held.lease, step.result);
  const EtcdJson responses = step.reply.value("responses", EtcdJson::array());
  if (responses.size() != 2) {
    return give_up(held.lease,
                   {.status = AdapterStatus::backend_error,
                    .message = "txn reply without its two reads: " + step.reply.dump()});
  }
  int64_t my_revision = int_field(step.reply["header"], "revision").value_or(0);
  if (!step.reply.value("succeeded", false)) {
    my_revision =
        int_field(responses[0]["response_range"]["kvs"][0], "create_revision").value_or(0);
  }
  const EtcdJson owner = responses[1]["response_range"].value("kvs", EtcdJson::array());
  const bool first_is_mine =
      owner.empty() || (by_key ? bytes_field(owner[0], "key") == held.key
                               : int_field(owner[0], "create_revision") == my_revision);
  if (!first_is_mine) {
    const int64_t deadline_us = started_us + spec.ttl_ms * 1000 / 2;
    AdapterResult waited = wait_turn(prefix, held.key, my_revision, deadline_us);
    if (!waited.ok()) return give_up(held.lease, waited);
    // Our turn: but is our key still there? (etcd 3.4's Mutex did not ask: #11456.)
    bool still = false;
    int64_t create_revision = 0;
    step = key_held(held.key, held.lease, &still, &create_revision);
    if (!step.result.ok()) return give_up(held.lease, step.result);
    if (!still)
      return give_up(held.lease, contended("its lease expired while it waited in the queue"));
  }
  remember(spec.value, held);
  return {.fencing_token = static_cast<uint64_t>(my_revision)};
}

AdapterResult EtcdAdapter::wait_turn(const std::string& prefix, const std::string& my_key,
                                     int64_t my_revision, int64_t deadline_us) {
  const bool by_key = flaw_ == EtcdRecipeFlaw::smallest_key;
  for (int loop = 0; loop < kWaitLoopsMax; ++loop) {
    // The newest key ahead of ours (created before it; by_key: sorting before it).
    EtcdJson older = by_key ? range_of(prefix, my_key, "KEY", "DESCEND")
                            : range_of(prefix, etcd::prefix_range_end(prefix), "CREATE", "DESCEND");
    if (!by_key) older["max_create_revision"] = std::to_string(my_revision - 1);
    const Step step = read("/v3/kv/range", older);
    if (!step.result.ok()) return step.result;
    const EtcdJson kvs = step.reply.value("kvs", EtcdJson::array());
    if (kvs.empty()) return {};
    const std::string ahead = bytes_field(kvs[0], "key").value_or("");
    const int64_t from = int_field(step.reply["header"], "revision").value_or(0);
    std::unique_ptr<EtcdStream> watch = options_.connection->open(
        "/v3/watch", {{"create_request",
                       {{"key", base64_encode(ahead)}, {"start_revision", std::to_string(from)}}}});
    bool deleted = false;
    while (!deleted) {
      const int64_t left_us = deadline_us - options_.clock->monotonic_us();
      if (left_us <= 0) return contended(fmt::format("queued behind {} for half its TTL", ahead));
      const EtcdResult message = watch->next(left_us);
      if (message.status == IoStatus::timeout) continue;
      if (!message.ok() || message.refused()) {
        return contended(fmt::format("the watch on {} failed: {}", ahead, describe(message)));
      }
      const EtcdJson& result =
          message.body.contains("result") ? message.body["result"] : message.body;
      for (const EtcdJson& event : result.value("events", EtcdJson::array())) {
        deleted = deleted || event.value("type", "PUT") == "DELETE";
      }
    }
  }
  return contended("waited for too many predecessors");
}

}  // namespace lockstep
