// The gateway's spelling: base64 both ways (against RFC 4648's test vectors), integers as strings,
// prefix ranges and lock keys as etcd's Go client spells them.
#include <catch2/catch.hpp>

#include "services/etcd/client/etcd_json.h"

namespace lockstep::etcd {
namespace {

TEST_CASE("base64 round-trips RFC 4648's vectors and refuses what is not base64", "[etcd][json]") {
  const std::pair<std::string, std::string> vectors[] = {{"", ""},
                                                         {"f", "Zg=="},
                                                         {"fo", "Zm8="},
                                                         {"foo", "Zm9v"},
                                                         {"foob", "Zm9vYg=="},
                                                         {"fooba", "Zm9vYmE="},
                                                         {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, encoded] : vectors) {
    CHECK(base64_encode(plain) == encoded);
    CHECK(base64_decode(encoded) == plain);
  }
  const std::string binary("\0\xff\x10/", 4);
  CHECK(base64_decode(base64_encode(binary)) == binary);
  CHECK_FALSE(base64_decode("Zm9").has_value());       // not a multiple of 4
  CHECK_FALSE(base64_decode("Zm9*").has_value());      // not in the alphabet
  CHECK_FALSE(base64_decode("Zg==Zg==").has_value());  // data after padding
}

TEST_CASE("integers are read as the gateway writes them (strings) or as numbers", "[etcd][json]") {
  const EtcdJson body = {{"a", "42"}, {"b", 7}, {"c", "x"}, {"d", -3}};
  CHECK(int_field(body, "a") == 42);
  CHECK(int_field(body, "b") == 7);
  CHECK_FALSE(int_field(body, "c").has_value());
  CHECK(int_field(body, "d") == -3);
  CHECK(uint_field({{"id", "9795411946235813338"}}, "id") == 9795411946235813338ULL);  // over 2^63
  CHECK_FALSE(int_field({{"id", "9795411946235813338"}}, "id").has_value());
  CHECK(int_field(body, "missing", 9) == 9);
  CHECK(bytes_field({{"k", "Zm9v"}}, "k") == "foo");
  CHECK(bytes_field(EtcdJson::object(), "k") == "");
}

TEST_CASE("prefix ranges and lock keys as clientv3 spells them", "[etcd][json]") {
  CHECK(prefix_range_end("lock/") == "lock0");
  CHECK(prefix_range_end(std::string("a\xff", 2)) == "b");
  CHECK(prefix_range_end(std::string("\xff\xff", 2)) == std::string(1, '\0'));
  // The key the real server gave lease 2324035648845596172 under "mylock" (probed).
  CHECK(lock_key("mylock", 2324035648845596172) == "mylock/2040a21bfec9460c");
}

}  // namespace
}  // namespace lockstep::etcd
