#pragma once
// The data of a simulated mongod: collections of documents with their indexes, and the write
// operations (MongoOp) that change them, which the oplog carries, replication replays and
// rollback undoes.
//
// A collection keeps documents in insertion (record id) order, which is the order an unsorted
// find returns them in. Every collection has the unique index _id_; createIndexes adds more.
// Unique indexes key a document by its indexed fields (a missing field indexes as null, as in
// mongod, so two documents without the field collide). TTL indexes (expireAfterSeconds) are
// single-field; the TTL monitor (replica_set.h) reads them through ttl_expired().
//
// MongoOp carries full pre- and post-images, so apply() (replication) and undo() (rollback) need
// nothing else. Invariants: every document has an _id; unique indexes hold for the data at all
// times (apply() of a replicated op trusts the primary, which checked them).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "services/mongo/sim/bson_value.h"

namespace lockstep::sim::mongo {

struct IndexSpec {
  std::string name;
  Doc key;  // {"field": 1, ...}
  bool unique = false;
  std::optional<int64_t> expire_after_seconds;

  // As listIndexes shows it: {"v": 2, "key", "name", ["unique"], ["expireAfterSeconds"]}.
  Doc to_doc() const;
  bool same_options(const IndexSpec& other) const;
};

// A duplicate key: the index it violates and the offending key ({ key: "k" } as a document).
struct DuplicateKey {
  std::string index;
  Doc key_pattern;
  Doc key_value;
};

class Collection {
 public:
  Collection();  // with the _id_ index

  const std::map<int64_t, Doc>& records() const { return records_; }
  size_t size() const { return records_.size(); }
  std::optional<int64_t> find_id(const Doc& id) const;
  // A duplicate key `doc` would cause (ignoring record `self`), if any.
  std::optional<DuplicateKey> duplicate(const Doc& doc,
                                        std::optional<int64_t> self = std::nullopt) const;

  // Preconditions: doc has an _id and duplicate(doc) is empty (for replace: duplicate(doc, rid)).
  int64_t insert(Doc doc);
  void replace(int64_t rid, Doc doc);
  void remove(int64_t rid);

  const std::vector<IndexSpec>& indexes() const { return indexes_; }
  const IndexSpec* index_named(const std::string& name) const;
  const IndexSpec* index_with_key(const Doc& key) const;
  // Builds the index over the current documents; a unique index over duplicates fails with the
  // first duplicate found (and changes nothing).
  std::optional<DuplicateKey> add_index(IndexSpec spec);
  void drop_index(const std::string& name);
  bool has_ttl_index() const;
  // Record ids of the documents a TTL index has expired at now_ms: the indexed field is a date
  // (or an array holding one) with date + expireAfterSeconds <= now_ms.
  std::vector<int64_t> ttl_expired(int64_t now_ms) const;
  // Whether some document could ever expire (a TTL-indexed date field).
  bool has_ttl_documents() const;

 private:
  static std::string key_of(const IndexSpec& index, const Doc& doc);
  static Doc key_value_of(const IndexSpec& index, const Doc& doc);
  void index_insert(int64_t rid, const Doc& doc);
  void index_erase(const Doc& doc);

  std::map<int64_t, Doc> records_;
  int64_t next_record_ = 1;
  std::vector<IndexSpec> indexes_;
  // For each unique index (by name): canonical key -> record id.
  std::map<std::string, std::map<std::string, int64_t>> unique_;
};

// One change to the data, with what undoing it needs.
struct MongoOp {
  enum class Kind { insert, update, remove, create_collection, create_index };
  Kind kind = Kind::insert;
  std::string ns;   // "db.coll"
  Doc before;       // update/remove: the pre-image
  Doc after;        // insert/update: the post-image
  IndexSpec index;  // create_index
};

std::string_view to_string(MongoOp::Kind kind);

// All collections of a mongod, by namespace.
class Database {
 public:
  Collection* find(const std::string& ns);
  const Collection* find(const std::string& ns) const;
  Collection& get_or_create(const std::string& ns);
  void drop(const std::string& ns) { collections_.erase(ns); }
  const std::map<std::string, Collection>& collections() const { return collections_; }

  // Replays an op (a secondary applying the oplog) or reverts it (rollback).
  void apply(const MongoOp& op);
  void undo(const MongoOp& op);

 private:
  std::map<std::string, Collection> collections_;
};

// "E11000 duplicate key error collection: db.coll index: key_1 dup key: { key: \"k\" }"
std::string duplicate_key_message(const std::string& ns, const DuplicateKey& dup);

}  // namespace lockstep::sim::mongo
