#include "adapters/core/mongo_connection.h"

#include "base/check.h"

namespace lockstep {

// Its one field, read in place: the simulated mongod's comparisons ask this of every value.
bool is_mongo_date(const MongoDocument& value) {
  if (!value.is_object() || value.size() != 1) return false;
  const auto& [name, ms] = value.get_ref<const MongoDocument::object_t&>().front();
  return name == "$date" && ms.is_number_integer();
}

int64_t mongo_date_ms(const MongoDocument& value) {
  LOCKSTEP_CHECK(is_mongo_date(value), "not a {\"$date\": ms} value");
  return value.get_ref<const MongoDocument::object_t&>().front().second.get<int64_t>();
}

}  // namespace lockstep
