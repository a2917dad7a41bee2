#include "services/mongo/sim/matcher.h"

#include <fmt/format.h>

namespace lockstep::sim::mongo {
namespace {

bool is_comparison(std::string_view op) {
  return op == "$eq" || op == "$ne" || op == "$lt" || op == "$lte" || op == "$gt" || op == "$gte";
}

void validate_clauses(std::string_view op, const Doc& clauses) {
  if (!clauses.is_array() || clauses.empty())
    throw MongoError(2, fmt::format("{} must be a nonempty array", op));
  for (const Doc& clause : clauses) {
    if (!clause.is_object())
      throw MongoError(2, fmt::format("{} argument's entries must be objects", op));
    validate_filter(clause);
  }
}

void validate_operators(const std::string& field, const Doc& ops) {
  for (auto it = ops.begin(); it != ops.end(); ++it) {
    const std::string& op = it.key();
    if (is_comparison(op)) continue;
    if (op == "$in" || op == "$nin") {
      if (!it.value().is_array()) throw MongoError(2, fmt::format("{} needs an array", op));
      continue;
    }
    if (op == "$exists") continue;
    throw MongoError(2, fmt::format("unknown operator: {} (field {})", op, field));
  }
}

// Type bracketing: a query comparison only holds between values of the same type class, except
// that null operands also match missing fields.
bool comparable(const Doc* value, const Doc& operand) {
  const TypeRank v = type_rank(value);
  const TypeRank o = type_rank(&operand);
  if (o == TypeRank::null) return v == TypeRank::null || v == TypeRank::missing;
  return v == o;
}

bool compare_holds(std::string_view op, const Doc* value, const Doc& operand) {
  if (operand.is_null()) {  // null stands for "null or missing"
    const bool nullish = type_rank(value) <= TypeRank::null;
    if (op == "$eq" || op == "$lte" || op == "$gte") return nullish;
    if (op == "$ne") return !nullish;
    return false;
  }
  if (op == "$eq") return comparable(value, operand) && compare_values(value, &operand) == 0;
  if (op == "$ne") return !compare_holds("$eq", value, operand);
  if (!comparable(value, operand)) return false;
  const int c = compare_values(value, &operand);
  if (op == "$lt") return c < 0;
  if (op == "$lte") return c <= 0;
  if (op == "$gt") return c > 0;
  return c >= 0;  // $gte
}

// One operator against a field value; arrays match when an element does (or the array as a whole).
bool operator_holds(std::string_view op, const Doc* value, const Doc& operand) {
  if (op == "$exists") return (value != nullptr) == truthy(&operand);
  if (op == "$ne") return !operator_holds("$eq", value, operand);
  if (op == "$nin") return !operator_holds("$in", value, operand);
  if (op == "$in") {
    for (const Doc& candidate : operand) {
      if (operator_holds("$eq", value, candidate)) return true;
    }
    return false;
  }
  if (value != nullptr && value->is_array() && !operand.is_array()) {
    for (const Doc& element : *value) {
      if (compare_holds(op, &element, operand)) return true;
    }
    return false;
  }
  return compare_holds(op, value, operand);
}

bool field_matches(const std::string& field, const Doc& condition, const Doc& doc) {
  const Doc* value = lookup(doc, field);
  if (!is_operator_object(condition)) return operator_holds("$eq", value, condition);
  for (auto it = condition.begin(); it != condition.end(); ++it) {
    if (!operator_holds(it.key(), value, it.value())) return false;
  }
  return true;
}

void collect_equalities(const Doc& filter, Doc& out) {
  for (auto it = filter.begin(); it != filter.end(); ++it) {
    const std::string& key = it.key();
    if (key == "$and") {
      for (const Doc& clause : it.value()) collect_equalities(clause, out);
      continue;
    }
    if (key.starts_with('$')) continue;
    const Doc& condition = it.value();
    if (!is_operator_object(condition)) {
      set_path(out, key, condition);
    } else if (condition.size() == 1 && condition.contains("$eq")) {
      set_path(out, key, condition["$eq"]);
    }
  }
}

}  // namespace

void validate_filter(const Doc& filter) {
  if (!filter.is_object()) throw MongoError(9, "a filter must be an object");
  for (auto it = filter.begin(); it != filter.end(); ++it) {
    const std::string& key = it.key();
    if (key == "$and" || key == "$or" || key == "$nor") {
      validate_clauses(key, it.value());
    } else if (key == "$expr") {
      validate_expression(it.value());
    } else if (key == "$comment") {
      continue;
    } else if (key.starts_with('$')) {
      throw MongoError(2, fmt::format("unknown top level operator: {}", key));
    } else if (is_operator_object(it.value())) {
      validate_operators(key, it.value());
    }
  }
}

bool has_expr(const Doc& filter) {
  if (!filter.is_object()) return false;
  for (auto it = filter.begin(); it != filter.end(); ++it) {
    const std::string& key = it.key();
    if (key == "$expr") return true;
    if ((key == "$and" || key == "$or" || key == "$nor") && it.value().is_array()) {
      for (const Doc& clause : it.value()) {
        if (has_expr(clause)) return true;
      }
    }
  }
  return false;
}

bool matches(const Doc& filter, const Doc& doc, const ExprContext& ctx) {
  for (auto it = filter.begin(); it != filter.end(); ++it) {
    const std::string& key = it.key();
    if (key == "$and" || key == "$or" || key == "$nor") {
      bool any = false;
      bool all = true;
      for (const Doc& clause : it.value()) {
        const bool m = matches(clause, doc, ctx);
        any = any || m;
        all = all && m;
      }
      const bool holds = key == "$and" ? all : (key == "$or" ? any : !any);
      if (!holds) return false;
    } else if (key == "$expr") {
      const std::optional<Doc> v = evaluate(it.value(), doc, ctx);
      if (!truthy(v ? &*v : nullptr)) return false;
    } else if (key == "$comment") {
      continue;
    } else if (!field_matches(key, it.value(), doc)) {
      return false;
    }
  }
  return true;
}

Doc equality_fields(const Doc& filter) {
  Doc out = Doc::object();
  collect_equalities(filter, out);
  return out;
}

}  // namespace lockstep::sim::mongo
