#pragma once
// The oplog of one member: entries (term, index, ops), index contiguous from 1. One entry per
// write command (all documents it changed) or TTL pass, plus the no-op a new primary writes.
// Entries are immutable and shared between members (a secondary holds the primary's pointers).
// Each op keeps its pre-image, so rollback can undo an entry without anything else.
#include <compare>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "services/mongo/sim/collection.h"

namespace lockstep::sim::mongo {

// An oplog position: entries compare by term, then index (the "last applied optime").
struct OpTime {
  int64_t term = 0;
  int64_t index = 0;
  auto operator<=>(const OpTime&) const = default;
};

struct OplogEntry {
  int64_t term = 0;
  int64_t index = 0;
  std::string what;  // "update locks", "ttl", "new primary": for traces
  std::vector<MongoOp> ops;

  OpTime optime() const { return {term, index}; }
};

using EntryPtr = std::shared_ptr<const OplogEntry>;
using Oplog = std::vector<EntryPtr>;

inline OpTime last_optime(const Oplog& oplog) {
  return oplog.empty() ? OpTime{} : oplog.back()->optime();
}
// The optime of entry `index` (1-based), or {} for 0 / out of range.
inline OpTime optime_at(const Oplog& oplog, int64_t index) {
  if (index <= 0 || index > static_cast<int64_t>(oplog.size())) return {};
  return oplog[static_cast<size_t>(index - 1)]->optime();
}

inline void apply_entry(Database& db, const OplogEntry& entry) {
  for (const MongoOp& op : entry.ops) db.apply(op);
}
inline void undo_entry(Database& db, const OplogEntry& entry) {
  for (auto op = entry.ops.rbegin(); op != entry.ops.rend(); ++op) db.undo(*op);
}

}  // namespace lockstep::sim::mongo
