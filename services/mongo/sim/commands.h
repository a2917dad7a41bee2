#pragma once
// mongod's data commands on one member's data: update, delete, findAndModify, find and
// createIndexes, exactly the subset lockstep's Mongo adapter sends (see each function), with
// mongod's reply shapes and errors. Unknown commands answer 59 CommandNotFound; unknown or
// malformed fields 9 FailedToParse (or mongod's own code where it has a specific one); bad filter
// operators 2 BadValue.
//
// Replica-set matters (who may write, waiting for the write concern, the oplog, hello) live in
// replica_set.h: run_data_command() executes at once on `db`, returns the ops it applied (for the
// oplog and the observer) and the parsed write concern, and knows nothing of other members.
// An upsert (update statement or findAndModify) whose query holds $expr is refused before anything
// is matched, as mongod refuses it: 224 QueryFeatureNotAllowed, "$expr is not allowed in the query
// predicate for an upsert".
// Statement errors of update/delete (a duplicate key, an unknown modifier, $expr in an upsert) are
// writeErrors in an {"ok": 1} reply; findAndModify and createIndexes errors, and malformed commands, are {"ok": 0}.
// A command that fails changes nothing it had not already reported in ops (ordered batches stop at
// the first error; a failed index build is undone).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "services/mongo/sim/bson_value.h"
#include "services/mongo/sim/collection.h"

namespace lockstep::sim::mongo {

// A write concern that parses but cannot be met (w above the data-bearing members, a mode the
// set has no tag for) does not stop the write: mongod applies it, then answers with a
// writeConcernError (100 UnsatisfiableWriteConcern, 79 UnknownReplWriteConcern) at once
// (jstests/replsets/batch_write_command_wc.js). Only a malformed one is a command error.
struct WriteConcern {
  bool majority = true;        // mongod 5.0+'s implicit default is {w: "majority"}
  int w = 1;                   // when !majority: how many members must have applied the write
  int64_t wtimeout_ms = 0;     // 0: wait without a bound
  std::string mode{};          // w as an unknown mode name ("" otherwise)
  int unsatisfiable_code = 0;  // 100 or 79 when it cannot be met, else 0
  std::string unsatisfiable_message{};
  Doc to_doc() const;
};

enum class CommandKind { write, read, hello, ping, unknown };
CommandKind command_kind(const Doc& command);
std::string command_name(const Doc& command);  // the first key, or "" when there is none

struct CommandContext {
  Database& db;
  std::string database;
  int64_t now_ms = 0;            // $$NOW: the executing node's wall clock
  int members = 1;               // for w: n > members (100 UnsatisfiableWriteConcern)
  std::function<Doc()> next_id;  // a fresh {"$oid": ...}
  // The collection as of the majority commit point (readConcern majority).
  std::function<Collection(const std::string& ns)> majority_view;
};

struct CommandResult {
  Doc reply;
  std::vector<MongoOp> ops;  // applied to ctx.db, in order
  // Documents an update matched and left as they were, and no other statement of it changed: no
  // oplog entry (as in mongod), yet the member read each as matching, a live lock's expiry
  // rewritten to the same instant among them.
  std::vector<Doc> unchanged;
  bool is_write = false;
  WriteConcern write_concern;  // for writes that got past parsing
};

// Runs a read or write command (command_kind() write or read). Never throws MongoError: errors
// become the reply.
CommandResult run_data_command(const Doc& command, CommandContext& ctx);

// A compact trace summary: "update locks q={...} u={...} upsert".
std::string summarize(const Doc& command);

}  // namespace lockstep::sim::mongo
