#pragma once
// Query filters, as find, update, delete and findAndModify take them.
//
// Supported: field equality ({"key": "a"}, dates and nested documents compare as BSON values; a
// null matches a missing field), operator objects {"f": {"$eq"|"$ne"|"$lt"|"$lte"|"$gt"|"$gte"|
// "$in"|"$nin"|"$exists": v}}, "$and" / "$or" / "$nor" arrays, and {"$expr": expression}
// (services/mongo/sim/expression.h). Dotted paths reach into nested documents; a field holding an array
// matches when an element does (or the whole array equals the operand).
//
// Like mongod, comparison operators only match values of the operand's type class (query type
// bracketing): {"expire_at": {"$lt": date}} never matches a missing field or a number. $expr
// compares across types in BSON order instead (a missing field sorts before everything).
// Unknown operators are refused before anything is matched (2 BadValue, as mongod).
#include "services/mongo/sim/bson_value.h"
#include "services/mongo/sim/expression.h"

namespace lockstep::sim::mongo {

// Throws MongoError when mongod would refuse the filter.
void validate_filter(const Doc& filter);
// Precondition: validate_filter(filter) passed. May throw MongoError from $expr evaluation.
bool matches(const Doc& filter, const Doc& doc, const ExprContext& ctx);

// Whether the filter holds {"$expr": ...} at top level or inside "$and" / "$or" / "$nor" (where
// mongod's parser finds it: an upsert refuses it, 224 QueryFeatureNotAllowed).
bool has_expr(const Doc& filter);

// The document an upsert starts from: the filter's equality fields ({"f": v}, {"f": {"$eq": v}},
// also inside "$and"), in filter order (mongod's upsert seed).
Doc equality_fields(const Doc& filter);

}  // namespace lockstep::sim::mongo
