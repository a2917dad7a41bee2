#include "services/mongo/sim/update.h"

#include <algorithm>
#include <iterator>
#include <string>

#include <fmt/format.h>

#include "sim/assert.h"

namespace lockstep::sim::mongo {
namespace {

bool is_operator_update(const Doc& update) {
  return update.is_object() && !update.empty() && update.begin().key().starts_with('$');
}

bool is_modifier(std::string_view op) {
  return op == "$set" || op == "$setOnInsert" || op == "$inc" || op == "$unset";
}

// "a" conflicts with "a" and "a.b" (one is a prefix of the other at a dot).
bool paths_conflict(const std::string& a, const std::string& b) {
  const std::string& shorter = a.size() <= b.size() ? a : b;
  const std::string& longer = a.size() <= b.size() ? b : a;
  return longer.compare(0, shorter.size(), shorter) == 0 &&
         (longer.size() == shorter.size() || longer[shorter.size()] == '.');
}

void validate_operators(const Doc& update) {
  std::vector<std::string> paths;
  for (auto op = update.begin(); op != update.end(); ++op) {
    if (!op.key().starts_with('$')) {
      throw MongoError(
          9, fmt::format(
                 "Unknown modifier: {}. Expected a valid update modifier or pipeline-style update "
                 "specified as an array",
                 op.key()));
    }
    if (!is_modifier(op.key())) {
      throw MongoError(
          9, fmt::format(
                 "Unknown modifier: {}. Expected a valid update modifier or pipeline-style update "
                 "specified as an array",
                 op.key()));
    }
    if (!op.value().is_object()) {
      throw MongoError(
          9, fmt::format(
                 "Modifiers operate on fields but we found type {} instead. For example: {{$mod: "
                 "{{<field>: ...}}}} not {{{}: {}}}",
                 type_name(&op.value()), op.key(), render(op.value())));
    }
    for (auto field = op.value().begin(); field != op.value().end(); ++field) {
      const std::string& path = field.key();
      if (path.empty() || path.starts_with('.') || path.ends_with('.') ||
          path.find("..") != std::string::npos) {
        throw MongoError(56, fmt::format("An empty update path is not valid: '{}'", path));
      }
      if (op.key() == "$inc" && !field.value().is_number()) {
        throw MongoError(14, fmt::format("Cannot increment with non-numeric argument: {{{}: {}}}",
                                         path, render(field.value())));
      }
      for (const std::string& seen : paths) {
        if (paths_conflict(seen, path)) {
          throw MongoError(40, fmt::format("Updating the path '{}' would create a conflict at '{}'",
                                           path, seen.size() <= path.size() ? seen : path));
        }
      }
      paths.push_back(path);
    }
  }
}

void validate_pipeline(const Doc& pipeline) {
  for (const Doc& stage : pipeline) {
    if (!stage.is_object() || stage.size() != 1) {
      throw MongoError(40323,
                       "A pipeline stage specification object must contain exactly one field.");
    }
    const std::string& name = stage.begin().key();
    const Doc& spec = stage.begin().value();
    if (name == "$set" || name == "$addFields") {
      if (!spec.is_object())
        throw MongoError(40272, fmt::format("{} specification stage must be an object", name));
      for (auto it = spec.begin(); it != spec.end(); ++it) {
        if (it.key().starts_with('$')) {
          throw MongoError(
              16410,
              fmt::format("FieldPath field names may not start with '$'. (field {})", it.key()));
        }
        validate_expression(it.value());
      }
    } else if (name == "$unset") {
      const bool ok = spec.is_string() ||
                      (spec.is_array() && std::all_of(spec.begin(), spec.end(),
                                                      [](const Doc& f) { return f.is_string(); }));
      if (!ok)
        throw MongoError(
            31002,
            "$unset specification must be a string or an array containing only string values");
    } else if (name == "$replaceWith") {
      validate_expression(spec);
    } else if (name == "$replaceRoot") {
      if (!spec.is_object() || spec.size() != 1 || !spec.contains("newRoot"))
        throw MongoError(40231, "no newRoot specified for the $replaceRoot stage");
      validate_expression(spec["newRoot"]);
    } else {
      throw MongoError(
          72,
          fmt::format("{} is not allowed to be used within an update (lockstep's simulated mongod "
                      "supports $set, $addFields, $unset, $replaceWith and $replaceRoot)",
                      name));
    }
  }
}

void inc(Doc& doc, const std::string& path, const Doc& by) {
  const Doc* current = lookup(doc, path);
  if (current == nullptr) return set_path(doc, path, by);
  if (!current->is_number()) {
    const Doc* id = lookup(doc, "_id");
    throw MongoError(
        14, fmt::format(
                "Cannot apply $inc to a value of non-numeric type. {{_id: {}}} has the field '{}' "
                "of non-numeric type {}",
                id ? render(*id) : "null", path, type_name(current)));
  }
  if (current->is_number_float() || by.is_number_float())
    return set_path(doc, path, Doc(current->get<double>() + by.get<double>()));
  set_path(doc, path, Doc(as_int64(*current) + as_int64(by)));
}

void apply_operators(const Doc& update, Doc& doc, bool inserting) {
  for (auto op = update.begin(); op != update.end(); ++op) {
    if (op.key() == "$setOnInsert" && !inserting) continue;
    for (auto field = op.value().begin(); field != op.value().end(); ++field) {
      if (op.key() == "$set" || op.key() == "$setOnInsert") {
        set_path(doc, field.key(), field.value());
      } else if (op.key() == "$inc") {
        inc(doc, field.key(), field.value());
      } else {
        unset_path(doc, field.key());
      }
    }
  }
}

void apply_pipeline(const Doc& pipeline, Doc& doc, const ExprContext& ctx) {
  for (const Doc& stage : pipeline) {
    const std::string& name = stage.begin().key();
    const Doc& spec = stage.begin().value();
    if (name == "$unset") {
      if (spec.is_string()) {
        unset_path(doc, spec.get<std::string>());
      } else {
        for (const Doc& f : spec) unset_path(doc, f.get<std::string>());
      }
      continue;
    }
    if (name == "$replaceWith" || name == "$replaceRoot") {
      const Doc& expr = name == "$replaceWith" ? spec : spec["newRoot"];
      std::optional<Doc> root = evaluate(expr, doc, ctx);
      if (!root || !root->is_object() || is_mongo_date(*root) || is_object_id(*root)) {
        throw MongoError(
            40228, fmt::format("'replacement document' must evaluate to an object, but resulting "
                               "value was: {}",
                               root ? render(*root) : "MISSING"));
      }
      doc = std::move(*root);  // apply_update keeps the _id a replacement leaves out
      continue;
    }
    const Doc input = doc;  // every expression of a stage sees the stage's input
    for (auto it = spec.begin(); it != spec.end(); ++it) {
      std::optional<Doc> v = evaluate(it.value(), input, ctx);
      if (v) {
        set_path(doc, it.key(), std::move(*v));
      } else {
        unset_path(doc, it.key());
      }
    }
  }
}

}  // namespace

void validate_update(const Doc& update) {
  if (update.is_array()) return validate_pipeline(update);
  if (!update.is_object())
    throw MongoError(9, "the update must be an object or a pipeline (an array)");
  if (!is_operator_update(update)) {
    for (auto it = update.begin(); it != update.end(); ++it) {
      if (it.key().starts_with('$')) {
        throw MongoError(
            52, fmt::format("The dollar ($) prefixed field '{}' in '{}' is not valid for storage.",
                            it.key(), it.key()));
      }
    }
    return;
  }
  validate_operators(update);
}

void apply_update(const Doc& update, Doc& doc, bool inserting, const ExprContext& ctx) {
  const Doc* id_before = lookup(doc, "_id");
  const Doc old_id = id_before ? *id_before : Doc();
  const bool had_id = id_before != nullptr;
  if (update.is_array()) {
    apply_pipeline(update, doc, ctx);
  } else if (is_operator_update(update)) {
    apply_operators(update, doc, inserting);
  } else {
    Doc replacement = update;
    if (had_id) {
      if (const Doc* new_id = lookup(replacement, "_id");
          new_id != nullptr && !values_equal(*new_id, old_id)) {
        throw MongoError(
            66, fmt::format(
                    "After applying the update, the (immutable) field '_id' was found to have been "
                    "altered to _id: {}",
                    render(*new_id)));
      }
    }
    doc = std::move(replacement);
    if (had_id) put_id_first(doc, old_id);
    return;
  }
  if (!had_id) return;
  const Doc* id_after = lookup(doc, "_id");
  if (id_after == nullptr) {
    put_id_first(doc, old_id);  // a pipeline that dropped _id: mongod keeps it
  } else if (!values_equal(*id_after, old_id)) {
    throw MongoError(
        66, fmt::format(
                "Performing an update on the path '_id' would modify the immutable field '_id'"));
  }
}

// In place: the fields keep their order behind _id, and none is copied.
void put_id_first(Doc& doc, const Doc& id) {
  if (doc.is_null()) doc = Doc::object();
  LOCKSTEP_SIM_CHECK(doc.is_object(), "an _id goes first in a document, not in " + compact(doc));
  Doc::object_t& fields = doc.get_ref<Doc::object_t&>();
  auto found = fields.find("_id");
  if (found == fields.end()) {
    fields.emplace("_id", Doc(id));
    found = std::prev(fields.end());
  }
  std::rotate(fields.begin(), found, std::next(found));
}

}  // namespace lockstep::sim::mongo
