#include "services/mongo/sim/collection.h"

#include <fmt/format.h>

#include "sim/assert.h"

namespace lockstep::sim::mongo {
namespace {

const Doc* id_of(const Doc& doc) { return lookup(doc, "_id"); }

// The earliest date a TTL-indexed value holds (a date, or the smallest date in an array).
std::optional<int64_t> ttl_date(const Doc* value) {
  if (value == nullptr) return std::nullopt;
  if (is_mongo_date(*value)) return mongo_date_ms(*value);
  if (!value->is_array()) return std::nullopt;
  std::optional<int64_t> earliest;
  for (const Doc& item : *value) {
    if (is_mongo_date(item) && (!earliest || mongo_date_ms(item) < *earliest))
      earliest = mongo_date_ms(item);
  }
  return earliest;
}

}  // namespace

Doc IndexSpec::to_doc() const {
  Doc out{{"v", 2}, {"key", key}, {"name", name}};
  if (unique) out["unique"] = true;
  if (expire_after_seconds) out["expireAfterSeconds"] = *expire_after_seconds;
  return out;
}

bool IndexSpec::same_options(const IndexSpec& other) const {
  return unique == other.unique && expire_after_seconds == other.expire_after_seconds;
}

Collection::Collection() {
  IndexSpec id{.name = "_id_", .key = Doc{{"_id", 1}}, .unique = true};
  unique_[id.name];
  indexes_.push_back(std::move(id));
}

std::string Collection::key_of(const IndexSpec& index, const Doc& doc) {
  std::string key;
  for (auto it = index.key.begin(); it != index.key.end(); ++it) {
    append_canonical_key(key, lookup(doc, it.key()));
    key += '|';
  }
  return key;
}

Doc Collection::key_value_of(const IndexSpec& index, const Doc& doc) {
  Doc out = Doc::object();
  for (auto it = index.key.begin(); it != index.key.end(); ++it) {
    const Doc* v = lookup(doc, it.key());
    out[it.key()] = v ? *v : Doc(nullptr);
  }
  return out;
}

std::optional<int64_t> Collection::find_id(const Doc& id) const {
  const auto& by_id = unique_.at("_id_");
  const auto found = by_id.find(canonical_key(&id) + "|");
  if (found == by_id.end()) return std::nullopt;
  return found->second;
}

std::optional<DuplicateKey> Collection::duplicate(const Doc& doc,
                                                  std::optional<int64_t> self) const {
  for (const IndexSpec& index : indexes_) {
    if (!index.unique) continue;
    const auto& entries = unique_.at(index.name);
    const auto found = entries.find(key_of(index, doc));
    if (found != entries.end() && (!self || found->second != *self)) {
      return DuplicateKey{
          .index = index.name, .key_pattern = index.key, .key_value = key_value_of(index, doc)};
    }
  }
  return std::nullopt;
}

void Collection::index_insert(int64_t rid, const Doc& doc) {
  for (const IndexSpec& index : indexes_) {
    if (index.unique) unique_[index.name][key_of(index, doc)] = rid;
  }
}

void Collection::index_erase(const Doc& doc) {
  for (const IndexSpec& index : indexes_) {
    if (index.unique) unique_[index.name].erase(key_of(index, doc));
  }
}

int64_t Collection::insert(Doc doc) {
  LOCKSTEP_SIM_CHECK(id_of(doc) != nullptr, "a stored document has an _id");
  LOCKSTEP_SIM_CHECK(!duplicate(doc), "insert over a duplicate key: " + compact(doc));
  const int64_t rid = next_record_++;
  index_insert(rid, doc);
  records_.emplace(rid, std::move(doc));
  return rid;
}

// Each unique index's entry moves only when its key changed: most updates (a lease's expiry, its
// owner) change no indexed field, and then the indexes are only read.
void Collection::replace(int64_t rid, Doc doc) {
  const auto found = records_.find(rid);
  LOCKSTEP_SIM_CHECK(found != records_.end(), "replace of a record that does not exist");
  struct Moved {
    std::map<std::string, int64_t>* entries;
    std::string from;
    std::string to;
  };
  std::vector<Moved> moved;
  for (const IndexSpec& index : indexes_) {
    if (!index.unique) continue;
    std::string to = key_of(index, doc);
    std::string from = key_of(index, found->second);
    if (to == from) continue;
    std::map<std::string, int64_t>& entries = unique_[index.name];
    LOCKSTEP_SIM_CHECK(entries.count(to) == 0, "replace over a duplicate key: " + compact(doc));
    moved.push_back(Moved{&entries, std::move(from), std::move(to)});
  }
  for (Moved& m : moved) {
    m.entries->erase(m.from);
    m.entries->emplace(std::move(m.to), rid);
  }
  found->second = std::move(doc);
}

void Collection::remove(int64_t rid) {
  const auto found = records_.find(rid);
  LOCKSTEP_SIM_CHECK(found != records_.end(), "remove of a record that does not exist");
  index_erase(found->second);
  records_.erase(found);
}

const IndexSpec* Collection::index_named(const std::string& name) const {
  for (const IndexSpec& index : indexes_) {
    if (index.name == name) return &index;
  }
  return nullptr;
}

const IndexSpec* Collection::index_with_key(const Doc& key) const {
  for (const IndexSpec& index : indexes_) {
    if (index.key == key) return &index;
  }
  return nullptr;
}

std::optional<DuplicateKey> Collection::add_index(IndexSpec spec) {
  if (spec.unique) {
    std::map<std::string, int64_t> entries;
    for (const auto& [rid, doc] : records_) {
      if (!entries.emplace(key_of(spec, doc), rid).second) {
        return DuplicateKey{
            .index = spec.name, .key_pattern = spec.key, .key_value = key_value_of(spec, doc)};
      }
    }
    unique_[spec.name] = std::move(entries);
  }
  indexes_.push_back(std::move(spec));
  return std::nullopt;
}

void Collection::drop_index(const std::string& name) {
  std::erase_if(indexes_, [&](const IndexSpec& index) { return index.name == name; });
  unique_.erase(name);
}

bool Collection::has_ttl_index() const {
  for (const IndexSpec& index : indexes_) {
    if (index.expire_after_seconds) return true;
  }
  return false;
}

std::vector<int64_t> Collection::ttl_expired(int64_t now_ms) const {
  std::vector<int64_t> out;
  for (const auto& [rid, doc] : records_) {
    for (const IndexSpec& index : indexes_) {
      if (!index.expire_after_seconds) continue;
      const std::optional<int64_t> date = ttl_date(lookup(doc, index.key.begin().key()));
      if (date && *date + *index.expire_after_seconds * 1000 <= now_ms) {
        out.push_back(rid);
        break;
      }
    }
  }
  return out;
}

bool Collection::has_ttl_documents() const {
  for (const IndexSpec& index : indexes_) {
    if (!index.expire_after_seconds) continue;
    for (const auto& [rid, doc] : records_) {
      if (ttl_date(lookup(doc, index.key.begin().key()))) return true;
    }
  }
  return false;
}

std::string_view to_string(MongoOp::Kind kind) {
  switch (kind) {
    case MongoOp::Kind::insert: return "insert";
    case MongoOp::Kind::update: return "update";
    case MongoOp::Kind::remove: return "remove";
    case MongoOp::Kind::create_collection: return "create";
    case MongoOp::Kind::create_index: return "createIndex";
  }
  return "?";
}

Collection* Database::find(const std::string& ns) {
  const auto found = collections_.find(ns);
  return found == collections_.end() ? nullptr : &found->second;
}

const Collection* Database::find(const std::string& ns) const {
  const auto found = collections_.find(ns);
  return found == collections_.end() ? nullptr : &found->second;
}

Collection& Database::get_or_create(const std::string& ns) { return collections_[ns]; }

void Database::apply(const MongoOp& op) {
  switch (op.kind) {
    case MongoOp::Kind::create_collection: get_or_create(op.ns); return;
    case MongoOp::Kind::create_index: {
      Collection& c = get_or_create(op.ns);
      if (c.index_named(op.index.name) == nullptr) {
        const std::optional<DuplicateKey> dup = c.add_index(op.index);
        LOCKSTEP_SIM_CHECK(!dup, "a replicated index build met a duplicate key");
      }
      return;
    }
    case MongoOp::Kind::insert: get_or_create(op.ns).insert(op.after); return;
    case MongoOp::Kind::update: {
      Collection& c = get_or_create(op.ns);
      const std::optional<int64_t> rid = c.find_id(*id_of(op.before));
      LOCKSTEP_SIM_CHECK(rid.has_value(), "a replicated update of a missing document");
      c.replace(*rid, op.after);
      return;
    }
    case MongoOp::Kind::remove: {
      Collection& c = get_or_create(op.ns);
      const std::optional<int64_t> rid = c.find_id(*id_of(op.before));
      LOCKSTEP_SIM_CHECK(rid.has_value(), "a replicated delete of a missing document");
      c.remove(*rid);
      return;
    }
  }
}

void Database::undo(const MongoOp& op) {
  switch (op.kind) {
    case MongoOp::Kind::create_collection: drop(op.ns); return;
    case MongoOp::Kind::create_index: {
      if (Collection* c = find(op.ns)) c->drop_index(op.index.name);
      return;
    }
    case MongoOp::Kind::insert: {
      Collection& c = get_or_create(op.ns);
      const std::optional<int64_t> rid = c.find_id(*id_of(op.after));
      LOCKSTEP_SIM_CHECK(rid.has_value(), "undo of an insert whose document is gone");
      c.remove(*rid);
      return;
    }
    case MongoOp::Kind::update: {
      Collection& c = get_or_create(op.ns);
      const std::optional<int64_t> rid = c.find_id(*id_of(op.after));
      LOCKSTEP_SIM_CHECK(rid.has_value(), "undo of an update whose document is gone");
      c.replace(*rid, op.before);
      return;
    }
    case MongoOp::Kind::remove: get_or_create(op.ns).insert(op.before); return;
  }
}

std::string duplicate_key_message(const std::string& ns, const DuplicateKey& dup) {
  return fmt::format("E11000 duplicate key error collection: {} index: {} dup key: {}", ns,
                     dup.index, render(dup.key_value));
}

}  // namespace lockstep::sim::mongo
