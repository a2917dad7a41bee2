#pragma once
// Aggregation expressions, as $expr filters and pipeline updates use them: "$$NOW", "$field"
// paths, literals (dates and ObjectIds included), object and array expressions, and the operators
// $add, $subtract, $lt, $lte, $gt, $gte, $eq, $ne, $cmp, $and, $or, $not, $cond, $ifNull, $literal.
//
// $$NOW is the executing node's wall clock in ms, one value for the whole command (the caller
// passes it in ExprContext). A missing value is std::nullopt and sorts before null, as in mongod.
// Anything else is rejected like mongod does: an unknown operator (168 InvalidPipelineOperator),
// an unknown variable (17276), a malformed operator (2 BadValue).
#include <cstdint>
#include <optional>

#include "services/mongo/sim/bson_value.h"

namespace lockstep::sim::mongo {

struct ExprContext {
  int64_t now_ms = 0;  // $$NOW
};

// Throws MongoError for an expression mongod would refuse to parse (before any document is seen).
void validate_expression(const Doc& expr);
// The value of expr for document `root`; std::nullopt when missing. Throws MongoError for run-time
// errors (e.g. two dates in one $add).
std::optional<Doc> evaluate(const Doc& expr, const Doc& root, const ExprContext& ctx);

}  // namespace lockstep::sim::mongo
