#pragma once
// Update documents, as the update and findAndModify commands take them ("u" / "update").
//
// - Operator updates: {"$set": {...}, "$setOnInsert": {...}, "$inc": {...}, "$unset": {...}}
//   ($setOnInsert only when the update inserts an upserted document). Dotted paths create nested
//   documents. $inc on a missing field sets it; on a non-number it fails (14 TypeMismatch).
// - Replacement documents (no operator): the document becomes the replacement, _id kept.
// - Pipelines: [{"$set"|"$addFields": {field: expression}}, {"$unset": field or [fields]},
//   {"$replaceWith": expression}, {"$replaceRoot": {"newRoot": expression}}] ($project and the
//   stages mongod refuses in updates, 72 InvalidOptions, are refused);
//   each stage's expressions see the document as that stage received it; an expression that is
//   missing ($$REMOVE, an absent "$field") removes the field.
// Errors as mongod reports them per statement (a writeErrors entry): 9 FailedToParse (unknown
// modifier, mixed operators and fields), 40 ConflictingUpdateOperators (one path in two
// operators), 66 ImmutableField (changing _id).
#include <vector>

#include "services/mongo/sim/bson_value.h"
#include "services/mongo/sim/expression.h"

namespace lockstep::sim::mongo {

// Throws MongoError when mongod would refuse the update before touching a document.
void validate_update(const Doc& update);
// Applies a validated update to `doc`. inserting: the document is an upsert's new document.
void apply_update(const Doc& update, Doc& doc, bool inserting, const ExprContext& ctx);
// Moves _id to the front (mongod stores it first), inserting `id` when there is none.
void put_id_first(Doc& doc, const Doc& id);

}  // namespace lockstep::sim::mongo
