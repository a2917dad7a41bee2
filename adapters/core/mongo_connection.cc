#include "adapters/core/mongo_connection.h"

#include "base/check.h"

namespace lockstep {

bool is_mongo_date(const MongoDocument& value) {
  return value.is_object() && value.size() == 1 && value.contains("$date") &&
         value["$date"].is_number_integer();
}

int64_t mongo_date_ms(const MongoDocument& value) {
  LOCKSTEP_CHECK(is_mongo_date(value), "not a {\"$date\": ms} value");
  return value["$date"].get<int64_t>();
}

}  // namespace lockstep
