#include "services/mongo/client/mongo_connection.h"

#include "base/check.h"

namespace lockstep {

const MongoDocument* sole_field(const MongoDocument& value, std::string_view name) {
  if (!value.is_object() || value.size() != 1) return nullptr;
  const auto& [key, field] = value.get_ref<const MongoDocument::object_t&>().front();
  return key == name ? &field : nullptr;
}

bool is_mongo_date(const MongoDocument& value) {
  const MongoDocument* ms = sole_field(value, "$date");
  return ms != nullptr && ms->is_number_integer();
}

int64_t mongo_date_ms(const MongoDocument& value) {
  LOCKSTEP_CHECK(is_mongo_date(value), "not a {\"$date\": ms} value");
  return sole_field(value, "$date")->get<int64_t>();
}

}  // namespace lockstep
