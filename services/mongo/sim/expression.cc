#include "services/mongo/sim/expression.h"

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace lockstep::sim::mongo {
namespace {

using Value = std::optional<Doc>;

const std::set<std::string, std::less<>>& operators() {
  static const std::set<std::string, std::less<>> names{
      "$add", "$subtract", "$lt", "$lte", "$gt",   "$gte",    "$eq",     "$ne",
      "$cmp", "$and",      "$or", "$not", "$cond", "$ifNull", "$literal"};
  return names;
}

bool is_literal_object(const Doc& value) { return is_mongo_date(value) || is_object_id(value); }

// The arguments of an operator: an array as is, anything else as a one-element list.
std::vector<const Doc*> arguments(const Doc& args) {
  std::vector<const Doc*> out;
  if (args.is_array()) {
    for (const Doc& a : args) out.push_back(&a);
  } else {
    out.push_back(&args);
  }
  return out;
}

void expect_arity(std::string_view op, const Doc& args, size_t n) {
  const size_t got = args.is_array() ? args.size() : 1;
  if (got != n) {
    throw MongoError(
        16020,
        fmt::format("Expression {} takes exactly {} arguments. {} were passed in.", op, n, got));
  }
}

Value add(const Doc& args, const Doc& root, const ExprContext& ctx) {
  bool any_double = false;
  bool have_date = false;
  int64_t int_sum = 0;
  double double_sum = 0;
  for (const Doc* arg : arguments(args)) {
    const Value v = evaluate(*arg, root, ctx);
    const TypeRank rank = type_rank(v ? &*v : nullptr);
    if (rank == TypeRank::missing || rank == TypeRank::null) return Doc(nullptr);
    if (rank == TypeRank::date) {
      if (have_date) throw MongoError(16612, "only one date allowed in an $add expression");
      have_date = true;
      int_sum += mongo_date_ms(*v);
      double_sum += static_cast<double>(mongo_date_ms(*v));
      continue;
    }
    if (rank != TypeRank::number) {
      throw MongoError(
          16554, fmt::format("$add only supports numeric or date types, not {}", type_name(&*v)));
    }
    if (v->is_number_float()) any_double = true;
    int_sum += as_int64(*v);
    double_sum += v->get<double>();
  }
  if (have_date) return mongo_date(any_double ? std::llround(double_sum) : int_sum);
  if (any_double) return Doc(double_sum);
  return Doc(int_sum);
}

Value subtract(const Doc& args, const Doc& root, const ExprContext& ctx) {
  expect_arity("$subtract", args, 2);
  const Value a = evaluate(args[0], root, ctx);
  const Value b = evaluate(args[1], root, ctx);
  const TypeRank ra = type_rank(a ? &*a : nullptr);
  const TypeRank rb = type_rank(b ? &*b : nullptr);
  if (ra <= TypeRank::null || rb <= TypeRank::null) return Doc(nullptr);
  if (ra == TypeRank::date && rb == TypeRank::date)
    return Doc(mongo_date_ms(*a) - mongo_date_ms(*b));
  if (ra == TypeRank::date && rb == TypeRank::number) {
    return mongo_date(mongo_date_ms(*a) -
                      (b->is_number_float() ? std::llround(b->get<double>()) : as_int64(*b)));
  }
  if (ra == TypeRank::number && rb == TypeRank::number) {
    if (a->is_number_float() || b->is_number_float())
      return Doc(a->get<double>() - b->get<double>());
    return Doc(as_int64(*a) - as_int64(*b));
  }
  throw MongoError(16556,
                   fmt::format("cant $subtract a {} from a {}", type_name(&*b), type_name(&*a)));
}

Value compare(std::string_view op, const Doc& args, const Doc& root, const ExprContext& ctx) {
  expect_arity(op, args, 2);
  const Value a = evaluate(args[0], root, ctx);
  const Value b = evaluate(args[1], root, ctx);
  const int c = compare_values(a ? &*a : nullptr, b ? &*b : nullptr);
  if (op == "$cmp") return Doc(c);
  if (op == "$lt") return Doc(c < 0);
  if (op == "$lte") return Doc(c <= 0);
  if (op == "$gt") return Doc(c > 0);
  if (op == "$gte") return Doc(c >= 0);
  if (op == "$eq") return Doc(c == 0);
  return Doc(c != 0);  // $ne
}

Value operate(std::string_view op, const Doc& args, const Doc& root, const ExprContext& ctx) {
  if (op == "$literal") return args;
  if (op == "$add") return add(args, root, ctx);
  if (op == "$subtract") return subtract(args, root, ctx);
  if (op == "$and" || op == "$or") {
    const bool is_and = op == "$and";
    for (const Doc* arg : arguments(args)) {
      const Value v = evaluate(*arg, root, ctx);
      if (truthy(v ? &*v : nullptr) != is_and) return Doc(!is_and);
    }
    return Doc(is_and);
  }
  if (op == "$not") {
    expect_arity(op, args, 1);
    const Value v = evaluate(args.is_array() ? args[0] : args, root, ctx);
    return Doc(!truthy(v ? &*v : nullptr));
  }
  if (op == "$cond") {
    const Doc* cond = nullptr;
    const Doc* then = nullptr;
    const Doc* otherwise = nullptr;
    if (args.is_array()) {
      expect_arity(op, args, 3);
      cond = &args[0];
      then = &args[1];
      otherwise = &args[2];
    } else {
      if (!args.is_object() || !args.contains("if") || !args.contains("then") ||
          !args.contains("else")) {
        throw MongoError(17080, "Missing 'if' parameter to $cond");
      }
      cond = &args["if"];
      then = &args["then"];
      otherwise = &args["else"];
    }
    const Value c = evaluate(*cond, root, ctx);
    return evaluate(truthy(c ? &*c : nullptr) ? *then : *otherwise, root, ctx);
  }
  if (op == "$ifNull") {
    const std::vector<const Doc*> list = arguments(args);
    for (size_t i = 0; i + 1 < list.size(); ++i) {
      Value v = evaluate(*list[i], root, ctx);
      if (type_rank(v ? &*v : nullptr) > TypeRank::null) return v;
    }
    return evaluate(*list.back(), root, ctx);
  }
  return compare(op, args, root, ctx);
}

}  // namespace

void validate_expression(const Doc& expr) {
  if (expr.is_string()) {
    const auto& s = expr.get_ref<const std::string&>();
    if (s.starts_with("$$")) {
      const std::string var =
          s.substr(2, s.find('.') == std::string::npos ? std::string::npos : s.find('.') - 2);
      if (var != "NOW" && var != "ROOT" && var != "CURRENT" && var != "REMOVE") {
        throw MongoError(17276, fmt::format("Use of undefined variable: {}", var));
      }
    } else if (s == "$") {
      throw MongoError(16872, "'$' by itself is not a valid FieldPath");
    }
    return;
  }
  if (expr.is_array()) {
    for (const Doc& item : expr) validate_expression(item);
    return;
  }
  if (!expr.is_object() || is_literal_object(expr)) return;
  if (is_operator_object(expr)) {
    if (expr.size() != 1) {
      throw MongoError(
          15983,
          "an expression specification must contain exactly one field, the name of the "
          "expression. Found " +
              std::to_string(expr.size()) + " fields in " + render(expr));
    }
    const std::string& op = expr.begin().key();
    if (operators().count(op) == 0)
      throw MongoError(168, fmt::format("Unrecognized expression '{}'", op));
    if (op == "$literal") return;
    validate_expression(expr.begin().value());
    return;
  }
  for (auto it = expr.begin(); it != expr.end(); ++it) {
    if (it.key().starts_with('$')) {
      throw MongoError(
          16410,
          fmt::format("FieldPath field names may not start with '$'. Consider using $getField or "
                      "$setField. (field {})",
                      it.key()));
    }
    validate_expression(it.value());
  }
}

std::optional<Doc> evaluate(const Doc& expr, const Doc& root, const ExprContext& ctx) {
  if (expr.is_string()) {
    const auto& s = expr.get_ref<const std::string&>();
    if (!s.starts_with('$')) return expr;
    if (s.starts_with("$$")) {
      const std::string_view rest = std::string_view(s).substr(2);
      const size_t dot = rest.find('.');
      const std::string_view var = rest.substr(0, dot);
      if (var == "NOW")
        return dot == std::string_view::npos ? Value(mongo_date(ctx.now_ms)) : Value();
      if (var == "REMOVE") return std::nullopt;
      if (var == "ROOT" || var == "CURRENT") {
        if (dot == std::string_view::npos) return root;
        const Doc* found = lookup(root, rest.substr(dot + 1));
        return found ? Value(*found) : Value();
      }
      throw MongoError(17276, fmt::format("Use of undefined variable: {}", var));
    }
    const Doc* found = lookup(root, std::string_view(s).substr(1));
    return found ? Value(*found) : Value();
  }
  if (expr.is_array()) {
    Doc out = Doc::array();
    for (const Doc& item : expr) {
      Value v = evaluate(item, root, ctx);
      out.push_back(v ? std::move(*v) : Doc(nullptr));
    }
    return out;
  }
  if (!expr.is_object() || is_literal_object(expr)) return expr;
  if (is_operator_object(expr)) {
    validate_expression(expr);
    return operate(expr.begin().key(), expr.begin().value(), root, ctx);
  }
  Doc out = Doc::object();
  for (auto it = expr.begin(); it != expr.end(); ++it) {
    Value v = evaluate(it.value(), root, ctx);
    if (v) out[it.key()] = std::move(*v);
  }
  return out;
}

}  // namespace lockstep::sim::mongo
