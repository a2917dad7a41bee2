#include "services/etcd/sim/etcd_store.h"

#include <algorithm>

#include "services/etcd/client/etcd_json.h"

namespace lockstep::sim::etcd {

using lockstep::etcd::base64_encode;
using lockstep::etcd::bytes_field;
using lockstep::etcd::int_field;
using lockstep::etcd::int_json;
using lockstep::etcd::kLeaseNotFound;

namespace {

constexpr int kInvalidArgument = 3;
constexpr int kNotFound = 5;
constexpr int kFailedPrecondition = 9;
constexpr int kOutOfRange = 11;
constexpr int kUnimplemented = 12;

const char* const kEmptyKey = "etcdserver: key is not provided";

std::string text_field(const EtcdJson& object, const char* name, const char* fallback) {
  if (!object.is_object()) return fallback;
  const auto it = object.find(name);
  if (it == object.end() || !it->is_string()) return fallback;
  return it->get<std::string>();
}

bool bool_field(const EtcdJson& object, const char* name) {
  if (!object.is_object()) return false;
  const auto it = object.find(name);
  return it != object.end() && it->is_boolean() && it->get<bool>();
}

const EtcdJson& array_field(const EtcdJson& object, const char* name) {
  static const EtcdJson empty = EtcdJson::array();
  if (!object.is_object()) return empty;
  const auto it = object.find(name);
  return it != object.end() && it->is_array() ? *it : empty;
}

std::string key_of(const EtcdJson& request) { return bytes_field(request, "key").value_or(""); }
std::string end_of(const EtcdJson& request) {
  return bytes_field(request, "range_end").value_or("");
}

// A txn op's request: {"request_put": {...}} -> ("put", {...}).
std::pair<std::string, const EtcdJson*> op_of(const EtcdJson& op) {
  for (const char* kind : {"request_put", "request_range", "request_delete_range", "request_txn"}) {
    if (op.is_object() && op.contains(kind)) return {kind, &op[kind]};
  }
  return {"", nullptr};
}

// etcd's checkIntervals for one branch: no key put twice, none put inside a deleted range.
bool duplicate_keys(const EtcdJson& ops) {
  std::vector<std::pair<std::string, std::string>> deletes;
  for (const EtcdJson& op : ops) {
    const auto [kind, request] = op_of(op);
    if (kind == "request_delete_range") deletes.emplace_back(key_of(*request), end_of(*request));
  }
  std::set<std::string> puts;
  for (const EtcdJson& op : ops) {
    const auto [kind, request] = op_of(op);
    if (kind != "request_put") continue;
    const std::string key = key_of(*request);
    if (!puts.insert(key).second) return true;
    for (const auto& [from, to] : deletes) {
      const bool hit = to.empty() ? key == from : (key >= from && key < to);
      if (hit) return true;
    }
  }
  return false;
}

int64_t target_of(const Kv& kv, const std::string& target) {
  if (target == "CREATE") return kv.create_revision;
  if (target == "MOD") return kv.mod_revision;
  if (target == "LEASE") return kv.lease;
  return kv.version;
}

bool holds(int result, const std::string& relation) {
  if (relation == "NOT_EQUAL") return result != 0;
  if (relation == "GREATER") return result > 0;
  if (relation == "LESS") return result < 0;
  return result == 0;
}

int64_t sort_value(const Kv& kv, const std::string& target) {
  if (target == "VERSION") return kv.version;
  if (target == "CREATE") return kv.create_revision;
  if (target == "MOD") return kv.mod_revision;
  return 0;
}

}  // namespace

int http_status_for(int grpc_code) {
  switch (grpc_code) {
    case 0: return 200;
    case 1: return 408;
    case 3: return 400;
    case 4: return 504;
    case 5: return 404;
    case 6: return 409;
    case 7: return 403;
    case 8: return 429;
    case 9: return 412;
    case 10: return 409;
    case 11: return 400;
    case 12: return 501;
    case 14: return 503;
    case 16: return 401;
    default: return 500;
  }
}

Applied refusal(int grpc_code, const std::string& text) {
  return {.http_status = http_status_for(grpc_code),
          .body = {{"error", text}, {"message", text}, {"code", grpc_code}}};
}

EtcdJson kv_json(const Kv& kv, bool keys_only) {
  EtcdJson out = {{"key", base64_encode(kv.key)}};
  if (kv.create_revision != 0) out["create_revision"] = int_json(kv.create_revision);
  if (kv.mod_revision != 0) out["mod_revision"] = int_json(kv.mod_revision);
  if (kv.version != 0) out["version"] = int_json(kv.version);
  if (!kv.value.empty() && !keys_only) out["value"] = base64_encode(kv.value);
  if (kv.lease != 0) out["lease"] = int_json(kv.lease);
  return out;
}

bool EtcdStore::in_range(const std::string& k, const std::string& key,
                         const std::string& range_end) {
  if (range_end.empty()) return k == key;
  if (range_end == std::string(1, '\0')) return k >= key;
  return k >= key && k < range_end;
}

const LeaseRecord* EtcdStore::lease(int64_t id) const {
  const auto it = leases_.find(id);
  return it == leases_.end() ? nullptr : &it->second;
}

// ---- validation (before Raft) ----

std::optional<Applied> EtcdStore::validate(const std::string& path, const EtcdJson& request) {
  const auto key_missing = [](const EtcdJson& r) { return key_of(r).empty(); };
  if (path == "/v3/kv/put" || path == "/v3/kv/range" || path == "/v3/kv/deleterange") {
    if (key_missing(request)) return refusal(kInvalidArgument, kEmptyKey);
    return std::nullopt;
  }
  if (path == "/v3/kv/txn") {
    for (const EtcdJson& c : array_field(request, "compare")) {
      if (key_missing(c)) return refusal(kInvalidArgument, kEmptyKey);
    }
    for (const char* branch : {"success", "failure"}) {
      for (const EtcdJson& op : array_field(request, branch)) {
        const auto [kind, r] = op_of(op);
        if (kind == "request_txn")
          return refusal(kUnimplemented, "lockstep's simulated etcd: nested txn not modelled");
        if (r != nullptr && key_missing(*r)) return refusal(kInvalidArgument, kEmptyKey);
      }
      if (duplicate_keys(array_field(request, branch)))
        return refusal(kInvalidArgument, "etcdserver: duplicate key given in txn request");
    }
    return std::nullopt;
  }
  if (path == "/v3/lease/grant") {
    if (int_field(request, "TTL").value_or(0) > kMaxLeaseTtlS)
      return refusal(kOutOfRange, "etcdserver: too large lease TTL");
    return std::nullopt;
  }
  return std::nullopt;
}

bool EtcdStore::txn_writes(const EtcdJson& request) {
  for (const char* branch : {"success", "failure"}) {
    for (const EtcdJson& op : array_field(request, branch)) {
      const std::string kind = op_of(op).first;
      if (kind == "request_put" || kind == "request_delete_range") return true;
    }
  }
  return false;
}

// ---- reads ----

Applied EtcdStore::range(const EtcdJson& request) const {
  const std::string key = key_of(request);
  const std::string range_end = end_of(request);
  const int64_t at = int_field(request, "revision").value_or(0);
  if (at > revision_)
    return refusal(kOutOfRange, "etcdserver: mvcc: required revision is a future revision");
  if (at > 0 && at != revision_)
    return refusal(kUnimplemented,
                   "lockstep's simulated etcd: reads at a past revision not modelled");
  const int64_t limit = int_field(request, "limit").value_or(0);
  const std::string order = text_field(request, "sort_order", "NONE");
  const std::string target = text_field(request, "sort_target", "KEY");
  const int64_t max_create = int_field(request, "max_create_revision").value_or(0);
  const int64_t min_create = int_field(request, "min_create_revision").value_or(0);
  const int64_t max_mod = int_field(request, "max_mod_revision").value_or(0);
  const int64_t min_mod = int_field(request, "min_mod_revision").value_or(0);

  // etcd fetches everything only for a sort order or a revision filter; otherwise limit + 1 keys
  // in key order, which a sort target other than KEY then sorts (a quirk the real server has).
  const bool fetch_all = order != "NONE" || max_create != 0 || min_create != 0 || max_mod != 0 ||
                         min_mod != 0 || limit <= 0;
  std::vector<const Kv*> kvs;
  int64_t count = 0;
  const auto first = range_end.empty() ? keys_.find(key) : keys_.lower_bound(key);
  for (auto it = first; it != keys_.end() && in_range(it->first, key, range_end); ++it) {
    ++count;
    if (fetch_all || static_cast<int64_t>(kvs.size()) <= limit) kvs.push_back(&it->second);
  }
  if (bool_field(request, "count_only")) kvs.clear();  // mvcc counts and returns no key
  std::erase_if(kvs, [&](const Kv* kv) {
    return (max_mod != 0 && kv->mod_revision > max_mod) ||
           (min_mod != 0 && kv->mod_revision < min_mod) ||
           (max_create != 0 && kv->create_revision > max_create) ||
           (min_create != 0 && kv->create_revision < min_create);
  });
  std::string sort_order = order;
  if (target != "KEY" && sort_order == "NONE") sort_order = "ASCEND";
  if (sort_order != "NONE") {
    // Go's sort.Sort is an insertion sort below 13 elements: stable, as this is.
    const auto less = [&target](const Kv* a, const Kv* b) {
      if (target == "KEY") return a->key < b->key;
      if (target == "VALUE") return a->value < b->value;
      return sort_value(*a, target) < sort_value(*b, target);
    };
    if (sort_order == "DESCEND") {
      std::stable_sort(kvs.begin(), kvs.end(),
                       [&less](const Kv* a, const Kv* b) { return less(b, a); });
    } else {
      std::stable_sort(kvs.begin(), kvs.end(), less);
    }
  }
  Applied out;
  out.body = EtcdJson::object();
  bool more = false;
  if (limit > 0 && static_cast<int64_t>(kvs.size()) > limit) {
    kvs.resize(static_cast<size_t>(limit));
    more = true;
  }
  if (!bool_field(request, "count_only") && !kvs.empty()) {
    EtcdJson list = EtcdJson::array();
    const bool keys_only = bool_field(request, "keys_only");
    for (const Kv* kv : kvs) list.push_back(kv_json(*kv, keys_only));
    out.body["kvs"] = std::move(list);
  }
  if (more) out.body["more"] = true;
  if (count != 0) out.body["count"] = int_json(count);
  return out;
}

Applied EtcdStore::read_txn(const EtcdJson& request) const {
  bool succeeded = true;
  for (const EtcdJson& c : array_field(request, "compare")) succeeded = succeeded && compare(c);
  Applied out;
  out.body = EtcdJson::object();
  if (succeeded) out.body["succeeded"] = true;
  EtcdJson responses = EtcdJson::array();
  for (const EtcdJson& op : array_field(request, succeeded ? "success" : "failure")) {
    const auto [kind, r] = op_of(op);
    if (kind != "request_range") continue;
    Applied read = range(*r);
    if (read.http_status != 200) return read;
    read.body["header"] = {{"revision", int_json(revision_)}};
    responses.push_back({{"response_range", std::move(read.body)}});
  }
  if (!responses.empty()) out.body["responses"] = std::move(responses);
  return out;
}

bool EtcdStore::compare(const EtcdJson& c) const {
  const std::string key = key_of(c);
  const std::string range_end = end_of(c);
  const std::string target = text_field(c, "target", "VERSION");
  const std::string relation = text_field(c, "result", "EQUAL");
  std::vector<const Kv*> kvs;
  const auto first = range_end.empty() ? keys_.find(key) : keys_.lower_bound(key);
  for (auto it = first; it != keys_.end() && in_range(it->first, key, range_end); ++it)
    kvs.push_back(&it->second);
  const auto one = [&](const Kv& kv) {
    if (target == "VALUE") {
      const std::string want = bytes_field(c, "value").value_or("");
      return holds(kv.value.compare(want) < 0 ? -1 : (kv.value == want ? 0 : 1), relation);
    }
    const char* field = target == "CREATE"  ? "create_revision"
                        : target == "MOD"   ? "mod_revision"
                        : target == "LEASE" ? "lease"
                                            : "version";
    const int64_t want = int_field(c, field).value_or(0);
    const int64_t have = target_of(kv, target);
    return holds(have < want ? -1 : (have == want ? 0 : 1), relation);
  };
  if (kvs.empty()) {
    if (target == "VALUE") return false;  // etcd: a value compare on no key always fails
    return one(Kv{});
  }
  return std::all_of(kvs.begin(), kvs.end(), [&](const Kv* kv) { return one(*kv); });
}

// ---- writes ----

struct EtcdStore::Txn {
  int64_t begin = 0;  // the revision before
  std::vector<Event> events;
  bool changed() const { return !events.empty(); }
  int64_t revision() const { return begin + 1; }
  int64_t view() const { return changed() ? begin + 1 : begin; }
};

void EtcdStore::detach(const Kv& kv) {
  if (kv.lease == 0) return;
  const auto it = leases_.find(kv.lease);
  if (it != leases_.end()) it->second.keys.erase(kv.key);
}

Applied EtcdStore::put(Txn& txn, const EtcdJson& request) {
  const std::string key = key_of(request);
  const int64_t lease_id = int_field(request, "lease").value_or(0);
  if (lease_id != 0 && leases_.count(lease_id) == 0) return refusal(kNotFound, kLeaseNotFound);
  Event event;
  const auto existing = keys_.find(key);
  Kv kv{.key = key, .value = bytes_field(request, "value").value_or("")};
  if (existing != keys_.end()) {
    event.had_prev = true;
    event.prev = existing->second;
    detach(existing->second);
    kv.create_revision = existing->second.create_revision;
    kv.version = existing->second.version + 1;
  } else {
    kv.create_revision = txn.revision();
    kv.version = 1;
  }
  kv.mod_revision = txn.revision();
  kv.lease = lease_id;
  if (lease_id != 0) leases_[lease_id].keys.insert(key);
  keys_[key] = kv;
  event.kv = kv;
  txn.events.push_back(event);
  Applied out;
  out.body = EtcdJson::object();
  if (bool_field(request, "prev_kv") && event.had_prev) out.body["prev_kv"] = kv_json(event.prev);
  return out;
}

Applied EtcdStore::delete_range(Txn& txn, const EtcdJson& request) {
  const std::string key = key_of(request);
  const std::string range_end = end_of(request);
  std::vector<std::string> doomed;
  const auto first = range_end.empty() ? keys_.find(key) : keys_.lower_bound(key);
  for (auto it = first; it != keys_.end() && in_range(it->first, key, range_end); ++it)
    doomed.push_back(it->first);
  Applied out;
  out.body = EtcdJson::object();
  EtcdJson prev = EtcdJson::array();
  for (const std::string& k : doomed) {
    const Kv old = keys_.at(k);
    detach(old);
    keys_.erase(k);
    txn.events.push_back({.deleted = true,
                          .kv = {.key = k, .mod_revision = txn.revision()},
                          .prev = old,
                          .had_prev = true});
    prev.push_back(kv_json(old));
  }
  if (!doomed.empty()) out.body["deleted"] = int_json(static_cast<int64_t>(doomed.size()));
  if (bool_field(request, "prev_kv") && !doomed.empty()) out.body["prev_kvs"] = std::move(prev);
  return out;
}

Applied EtcdStore::do_txn(Txn& txn, const EtcdJson& request) {
  bool succeeded = true;
  for (const EtcdJson& c : array_field(request, "compare")) succeeded = succeeded && compare(c);
  const EtcdJson& ops = array_field(request, succeeded ? "success" : "failure");
  // etcd checks the chosen branch's puts before applying any: a missing lease refuses the txn.
  for (const EtcdJson& op : ops) {
    const auto [kind, r] = op_of(op);
    if (kind != "request_put") continue;
    const int64_t lease_id = int_field(*r, "lease").value_or(0);
    if (lease_id != 0 && leases_.count(lease_id) == 0) return refusal(kNotFound, kLeaseNotFound);
  }
  Applied out;
  out.body = EtcdJson::object();
  if (succeeded) out.body["succeeded"] = true;
  EtcdJson responses = EtcdJson::array();
  for (const EtcdJson& op : ops) {
    const auto [kind, r] = op_of(op);
    if (kind == "request_range") {
      Applied read = range(*r);
      read.body["header"] = {{"revision", int_json(txn.view())}};
      responses.push_back({{"response_range", std::move(read.body)}});
    } else if (kind == "request_put") {
      Applied wrote = put(txn, *r);
      wrote.body["header"] = {{"revision", int_json(txn.revision())}};
      responses.push_back({{"response_put", std::move(wrote.body)}});
    } else if (kind == "request_delete_range") {
      Applied deleted = delete_range(txn, *r);
      deleted.body["header"] = {{"revision", int_json(txn.view())}};
      responses.push_back({{"response_delete_range", std::move(deleted.body)}});
    }
  }
  if (!responses.empty()) out.body["responses"] = std::move(responses);
  return out;
}

Applied EtcdStore::grant(const EtcdJson& request, int64_t lease_id) {
  if (leases_.count(lease_id) != 0)
    return refusal(kFailedPrecondition, "etcdserver: lease already exists");
  const int64_t ttl_s = std::max(int_field(request, "TTL").value_or(0), min_lease_ttl_s_);
  leases_[lease_id] = LeaseRecord{.ttl_s = ttl_s};
  Applied out;
  out.body = {{"ID", int_json(lease_id)}, {"TTL", int_json(ttl_s)}};
  out.granted_lease = lease_id;
  return out;
}

Applied EtcdStore::revoke(Txn& txn, int64_t lease_id) {
  const auto it = leases_.find(lease_id);
  if (it == leases_.end()) return refusal(kNotFound, kLeaseNotFound);
  const std::set<std::string> keys = it->second.keys;  // sorted, as etcd deletes them
  leases_.erase(it);
  for (const std::string& k : keys) {
    const auto kv = keys_.find(k);
    if (kv == keys_.end()) continue;
    txn.events.push_back({.deleted = true,
                          .kv = {.key = k, .mod_revision = txn.revision()},
                          .prev = kv->second,
                          .had_prev = true});
    keys_.erase(kv);
  }
  Applied out;
  out.body = EtcdJson::object();
  out.revoked_lease = lease_id;
  return out;
}

void EtcdStore::finish(Txn& txn, Applied& applied) {
  if (applied.http_status == 200 && txn.changed()) {
    revision_ = txn.revision();
    history_.push_back({.revision = revision_, .events = txn.events});
    applied.events = std::move(txn.events);
  }
}

Applied EtcdStore::apply(const std::string& path, const EtcdJson& request, int64_t lease_id) {
  // A refused write changes nothing: work on a copy only where a refusal can come midway (a
  // txn's puts are checked first, so no write is ever half applied).
  Txn txn{.begin = revision_};
  Applied applied;
  if (path == "/v3/kv/put") {
    applied = put(txn, request);
  } else if (path == "/v3/kv/deleterange") {
    applied = delete_range(txn, request);
  } else if (path == "/v3/kv/txn") {
    applied = do_txn(txn, request);
  } else if (path == "/v3/lease/grant") {
    return grant(request, lease_id);
  } else if (path == "/v3/lease/revoke") {
    applied = revoke(txn, int_field(request, "ID").value_or(0));
  } else {
    return refusal(kUnimplemented, "lockstep's simulated etcd: no write " + path);
  }
  finish(txn, applied);
  return applied;
}

std::vector<Event> EtcdStore::events_since(int64_t from, const std::string& key,
                                           const std::string& range_end) const {
  std::vector<Event> out;
  const auto first =
      std::lower_bound(history_.begin(), history_.end(), from,
                       [](const Revision& r, int64_t rev) { return r.revision < rev; });
  for (auto it = first; it != history_.end(); ++it) {
    for (const Event& e : it->events) {
      if (in_range(e.kv.key, key, range_end)) out.push_back(e);
    }
  }
  return out;
}

}  // namespace lockstep::sim::etcd
