// OrderedObject, the object type of MongoDocument: insertion order, unique keys, and fields that
// move (never copy) when the object grows or loses a field.
#include <catch2/catch.hpp>

#include <string>
#include <type_traits>
#include <vector>

#include "services/mongo/client/mongo_connection.h"
#include "services/mongo/client/ordered_object.h"

namespace lockstep {
namespace {

// A value that counts its copies: growing a container of them must not copy any.
struct Counted {
  static inline int copies = 0;
  int value = 0;
  Counted() = default;
  explicit Counted(int v) : value(v) {}
  Counted(const Counted& other) : value(other.value) { ++copies; }
  Counted(Counted&&) noexcept = default;
  Counted& operator=(const Counted& other) {
    value = other.value;
    ++copies;
    return *this;
  }
  Counted& operator=(Counted&&) noexcept = default;
};

using Object = OrderedObject<std::string, Counted>;

std::vector<std::string> keys_of(const Object& object) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : object) keys.push_back(key);
  return keys;
}

TEST_CASE("OrderedObject moves its fields as it grows and as it loses one") {
  STATIC_REQUIRE(std::is_nothrow_move_constructible_v<Object::value_type>);
  Counted::copies = 0;
  Object object;
  for (int i = 0; i < 100; ++i) object.emplace("k" + std::to_string(i), Counted(i));
  CHECK(Counted::copies == 0);
  CHECK(object.erase("k0") == 1);
  object.erase(object.begin() + 10, object.begin() + 20);
  CHECK(Counted::copies == 0);
  CHECK(object.size() == 89);
  CHECK(object.begin()->second.value == 1);
}

TEST_CASE("OrderedObject keeps insertion order and unique keys") {
  Object object;
  object.emplace("b", Counted(1));
  object.emplace("a", Counted(2));
  const auto [where, inserted] = object.emplace("b", Counted(3));
  CHECK_FALSE(inserted);
  CHECK(where->second.value == 1);  // the first value stays, as in a JSON object
  object["c"].value = 4;
  object["a"].value = 5;
  CHECK(keys_of(object) == std::vector<std::string>{"b", "a", "c"});
  CHECK(object.at("a").value == 5);
  CHECK(object.count("c") == 1);
  CHECK(object.count("z") == 0);
  CHECK(object.find("z") == object.end());
  CHECK_THROWS_AS(object.at("z"), std::out_of_range);
  CHECK(object.erase("z") == 0);
  CHECK(object.erase("b") == 1);
  CHECK(keys_of(object) == std::vector<std::string>{"a", "c"});
}

TEST_CASE("MongoDocument objects keep field order through edits, copies and comparison") {
  MongoDocument doc = make_document("update", "locks", "ordered", true);
  doc["writeConcern"] = make_document("w", "majority");
  doc.erase("ordered");
  doc["ordered"] = false;
  CHECK(doc.dump() == R"({"update":"locks","writeConcern":{"w":"majority"},"ordered":false})");
  const MongoDocument copy = doc;
  CHECK(copy == doc);
  CHECK(copy.begin().key() == "update");
  CHECK(copy != make_document("writeConcern", make_document("w", "majority"), "update", "locks",
                              "ordered", false));  // the same fields in another order differ
}

}  // namespace
}  // namespace lockstep
