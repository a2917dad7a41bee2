// HPACK held to RFC 7541: Appendix C's examples (headers and dynamic table sizes as the RFC gives
// them), the malformed blocks section 5 and 6 call decoding errors, blocks Node 20's http2 client
// (nghttp2, what grpc-js speaks through) sent on loopback, and the encoder's output read back.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "services/etcd/sim/hpack.h"

namespace lockstep::sim::h2 {
namespace {

// "8286 84be" -> the bytes; spaces are for reading.
std::string hex(std::string_view text) {
  const auto nibble = [](char ch) -> int {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    return -1;
  };
  std::string out;
  int high = -1;
  bool well_formed = true;
  for (const char ch : text) {
    if (ch == ' ') continue;
    const int value = nibble(ch);
    well_formed = well_formed && value >= 0;
    if (high < 0) {
      high = value;
    } else {
      out += static_cast<char>(high << 4 | value);
      high = -1;
    }
  }
  REQUIRE((well_formed && high < 0));
  return out;
}

using Headers = std::vector<Header>;

// Decodes a block that must decode.
Headers decoded(HpackDecoder& decoder, std::string_view hex_block) {
  std::optional<Headers> headers = decoder.decode(hex(hex_block));
  INFO(decoder.error());
  REQUIRE(headers);
  return *headers;
}

// The reason a block is refused by a fresh decoder of the given table size.
std::string refusal(std::string_view block, size_t max_table_size = 4096) {
  HpackDecoder decoder(max_table_size);
  const std::optional<Headers> headers = decoder.decode(block);
  CHECK_FALSE(headers);
  CHECK_FALSE(decoder.error().empty());
  return decoder.error();
}

TEST_CASE("the literal and indexed examples of RFC 7541 C.2 decode", "[hpack]") {
  {
    HpackDecoder decoder;  // C.2.1: literal with indexing
    CHECK(decoded(decoder, "400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572") ==
          Headers{{"custom-key", "custom-header"}});
    CHECK(decoder.table_size() == 55);
  }
  {
    HpackDecoder decoder;  // C.2.2: literal without indexing
    CHECK(decoded(decoder, "040c 2f73 616d 706c 652f 7061 7468") ==
          Headers{{":path", "/sample/path"}});
    CHECK(decoder.table_size() == 0);
  }
  {
    HpackDecoder decoder;  // C.2.3: literal never indexed
    CHECK(decoded(decoder, "1008 7061 7373 776f 7264 0673 6563 7265 74") ==
          Headers{{"password", "secret"}});
    CHECK(decoder.table_size() == 0);
  }
  {
    HpackDecoder decoder;  // C.2.4: indexed
    CHECK(decoded(decoder, "82") == Headers{{":method", "GET"}});
    CHECK(decoder.table_size() == 0);
  }
}

const Headers kRequest1 = {
    {":method", "GET"}, {":scheme", "http"}, {":path", "/"}, {":authority", "www.example.com"}};
const Headers kRequest2 = {{":method", "GET"},
                           {":scheme", "http"},
                           {":path", "/"},
                           {":authority", "www.example.com"},
                           {"cache-control", "no-cache"}};
const Headers kRequest3 = {{":method", "GET"},
                           {":scheme", "https"},
                           {":path", "/index.html"},
                           {":authority", "www.example.com"},
                           {"custom-key", "custom-value"}};

// After the third request the dynamic table holds, newest first: custom-key, cache-control,
// :authority (C.3.3), which indices 62-64 name.
void check_request_table(HpackDecoder& decoder) {
  CHECK(decoded(decoder, "be bf c0") == Headers{{"custom-key", "custom-value"},
                                                {"cache-control", "no-cache"},
                                                {":authority", "www.example.com"}});
  CHECK(decoder.decode(hex("c1")) == std::nullopt);
}

TEST_CASE("the three requests of RFC 7541 C.3 decode on one decoder", "[hpack]") {
  HpackDecoder decoder;
  CHECK(decoded(decoder, "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d") == kRequest1);
  CHECK(decoder.table_size() == 57);
  CHECK(decoded(decoder, "8286 84be 5808 6e6f 2d63 6163 6865") == kRequest2);
  CHECK(decoder.table_size() == 110);
  CHECK(decoded(decoder,
                "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65") ==
        kRequest3);
  CHECK(decoder.table_size() == 164);
  check_request_table(decoder);
}

TEST_CASE("the three Huffman-coded requests of RFC 7541 C.4 decode on one decoder", "[hpack]") {
  HpackDecoder decoder;
  CHECK(decoded(decoder, "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff") == kRequest1);
  CHECK(decoder.table_size() == 57);
  CHECK(decoded(decoder, "8286 84be 5886 a8eb 1064 9cbf") == kRequest2);
  CHECK(decoder.table_size() == 110);
  CHECK(decoded(decoder, "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf") ==
        kRequest3);
  CHECK(decoder.table_size() == 164);
  check_request_table(decoder);
}

const Headers kResponse1 = {{":status", "302"},
                            {"cache-control", "private"},
                            {"date", "Mon, 21 Oct 2013 20:13:21 GMT"},
                            {"location", "https://www.example.com"}};
const Headers kResponse2 = {{":status", "307"},
                            {"cache-control", "private"},
                            {"date", "Mon, 21 Oct 2013 20:13:21 GMT"},
                            {"location", "https://www.example.com"}};
const Headers kResponse3 = {
    {":status", "200"},
    {"cache-control", "private"},
    {"date", "Mon, 21 Oct 2013 20:13:22 GMT"},
    {"location", "https://www.example.com"},
    {"content-encoding", "gzip"},
    {"set-cookie", "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"}};

// After the third response the 256-byte table holds, newest first: set-cookie, content-encoding,
// date (C.5.3): the rest was evicted.
void check_response_table(HpackDecoder& decoder) {
  CHECK(decoded(decoder, "be bf c0") ==
        Headers{{"set-cookie", "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"},
                {"content-encoding", "gzip"},
                {"date", "Mon, 21 Oct 2013 20:13:22 GMT"}});
  CHECK(decoder.decode(hex("c1")) == std::nullopt);
}

TEST_CASE("the three responses of RFC 7541 C.5 decode and evict in a 256-byte table", "[hpack]") {
  HpackDecoder decoder(256);
  CHECK(decoded(decoder,
                "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 "
                "2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 "
                "6c65 2e63 6f6d") == kResponse1);
  CHECK(decoder.table_size() == 222);
  CHECK(decoded(decoder, "4803 3330 37c1 c0bf") == kResponse2);
  CHECK(decoder.table_size() == 222);
  CHECK(decoded(decoder,
                "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d "
                "54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 "
                "5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e "
                "3d31") == kResponse3);
  CHECK(decoder.table_size() == 215);
  check_response_table(decoder);
}

TEST_CASE("the three Huffman-coded responses of RFC 7541 C.6 decode and evict", "[hpack]") {
  HpackDecoder decoder(256);
  CHECK(decoded(decoder,
                "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 "
                "2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3") == kResponse1);
  CHECK(decoder.table_size() == 222);
  CHECK(decoded(decoder, "4883 640e ffc1 c0bf") == kResponse2);
  CHECK(decoder.table_size() == 222);
  CHECK(decoded(decoder,
                "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab "
                "77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f "
                "9587 3160 65c0 03ed 4ee5 b106 3d50 07") == kResponse3);
  CHECK(decoder.table_size() == 215);
  check_response_table(decoder);
}

TEST_CASE("integers of several bytes decode as RFC 7541 C.1 gives them", "[hpack]") {
  // C.1.2: 1337 under a 5-bit prefix, here as a size update above a table of 1000.
  CHECK_THAT(refusal(hex("3f 9a 0a"), 1000), Catch::Contains("1337"));
  // 1337 under a 7-bit prefix: 127 + 58 + 9 * 128, an index beyond both tables.
  CHECK_THAT(refusal(hex("ff ba 09")), Catch::Contains("index 1337"));
  // 4096 under a 5-bit prefix: 31 + 97 + 31 * 128, a size update to the maximum.
  HpackDecoder decoder;
  CHECK(decoded(decoder, "3f e1 1f 82") == Headers{{":method", "GET"}});
}

TEST_CASE("indices outside the tables are refused", "[hpack]") {
  CHECK_THAT(refusal(hex("80")), Catch::Contains("index 0"));
  CHECK_THAT(refusal(hex("be")), Catch::Contains("index 62"));
  // A literal whose name is at index 62 of an empty dynamic table.
  CHECK_THAT(refusal(hex("7e 01 61")), Catch::Contains("index 62"));
  // 61 is the static table's last entry; 62 is the one dynamic entry; 63 is beyond.
  HpackDecoder decoder;
  CHECK(decoded(decoder, "bd 40 01 61 01 62 be") ==
        Headers{{"www-authenticate", ""}, {"a", "b"}, {"a", "b"}});
  CHECK_FALSE(decoder.decode(hex("bf")));
}

TEST_CASE("truncated and overlong integers are refused", "[hpack]") {
  CHECK_THAT(refusal(hex("ff")), Catch::Contains("truncated integer"));
  CHECK_THAT(refusal(hex("ff 80")), Catch::Contains("truncated integer"));
  CHECK_THAT(refusal(hex("40 7f")), Catch::Contains("truncated integer"));
  // Five continuation bytes (zero-valued, so the value would be small): absurd, refused.
  CHECK_THAT(refusal(hex("ff 80 80 80 80 01")), Catch::Contains("continuation bytes"));
  // Four is the bound: a huge index, refused as an index instead.
  CHECK_THAT(refusal(hex("ff ff ff ff 7f")), Catch::Contains("index"));
}

TEST_CASE("truncated strings are refused", "[hpack]") {
  CHECK_THAT(refusal(hex("40")), Catch::Contains("truncated string"));
  CHECK_THAT(refusal(hex("40 0a 63 75")), Catch::Contains("truncated string"));
  CHECK_THAT(refusal(hex("00 03 61 62 63")), Catch::Contains("truncated string"));
  CHECK_THAT(refusal(hex("00 03 61 62 63 82 61")), Catch::Contains("truncated string"));
}

TEST_CASE("Huffman strings with EOS or bad padding are refused", "[hpack]") {
  // The value "a" is Huffman 00011 then three bits of padding.
  HpackDecoder decoder;
  CHECK(decoded(decoder, "00 01 6e 81 1f") == Headers{{"n", "a"}});
  // EOS (30 ones) alone, and after "a".
  CHECK_THAT(refusal(hex("00 01 6e 84 ff ff ff ff")), Catch::Contains("EOS"));
  CHECK_THAT(refusal(hex("00 01 6e 85 1f ff ff ff ff")), Catch::Contains("EOS"));
  // "a" then eleven ones, and a byte of ones alone: padding longer than 7 bits.
  CHECK_THAT(refusal(hex("00 01 6e 82 1f ff")), Catch::Contains("longer than 7 bits"));
  CHECK_THAT(refusal(hex("00 01 6e 81 ff")), Catch::Contains("longer than 7 bits"));
  // "a" then 000, and "a" then 110: padding that is not EOS's leading ones.
  CHECK_THAT(refusal(hex("00 01 6e 81 18")), Catch::Contains("not all ones"));
  CHECK_THAT(refusal(hex("00 01 6e 81 1e")), Catch::Contains("not all ones"));
  // Huffman in a literal name, too.
  CHECK_THAT(refusal(hex("00 81 18 01 61")), Catch::Contains("not all ones"));
}

TEST_CASE("size updates above the maximum or after a field are refused", "[hpack]") {
  CHECK_THAT(refusal(hex("3f e2 1f")), Catch::Contains("above the maximum of 4096"));
  CHECK_THAT(refusal(hex("3f e2 1f"), 256), Catch::Contains("above the maximum of 256"));
  CHECK_THAT(refusal(hex("82 20")), Catch::Contains("after a header field"));
}

TEST_CASE("size updates evict and bound later entries", "[hpack]") {
  HpackDecoder decoder;
  decoded(decoder, "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d");
  CHECK(decoder.table_size() == 57);
  // Two updates at the start of a block: to 0 (the table empties), then to 60.
  CHECK(decoded(decoder, "20 3f 1d") == Headers{});
  CHECK(decoder.table_size() == 0);
  CHECK_FALSE(decoder.decode(hex("be")));
  HpackDecoder bounded;
  CHECK(decoded(bounded, "3f 1d 40 01 61 01 62 40 01 63 01 64 be") ==
        Headers{{"a", "b"}, {"c", "d"}, {"c", "d"}});
  CHECK(bounded.table_size() == 34);  // the 60-byte table holds one 34-byte entry
  CHECK_FALSE(bounded.decode(hex("bf")));
}

TEST_CASE("an entry larger than the table empties it and is not added", "[hpack]") {
  HpackDecoder decoder(64);
  decoded(decoder, "400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572");
  CHECK(decoder.table_size() == 55);
  // custom-key (by its dynamic index 62) with a 30-byte value: 72 bytes, above 64.
  const std::string value(30, 'v');
  std::optional<Headers> headers = decoder.decode(hex("7e 1e") + value);
  REQUIRE(headers);
  CHECK(*headers == Headers{{"custom-key", value}});
  CHECK(decoder.table_size() == 0);
  CHECK_FALSE(decoder.decode(hex("be")));
}

TEST_CASE("an entry may name the entry its insertion evicts", "[hpack]") {
  HpackDecoder decoder(100);
  decoded(decoder, "400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572");
  // custom-key (index 62) with a 20-byte value: 62 bytes; 55 + 62 > 100 evicts the old entry.
  const std::string value(20, 'w');
  std::optional<Headers> headers = decoder.decode(hex("7e 14") + value);
  REQUIRE(headers);
  CHECK(*headers == Headers{{"custom-key", value}});
  CHECK(decoder.table_size() == 62);
  CHECK(decoded(decoder, "be") == Headers{{"custom-key", value}});
}

TEST_CASE("blocks beyond the byte and header bounds are refused", "[hpack]") {
  CHECK_THAT(refusal(std::string(kHpackBlockBytesMax + 1, '\x82')),
             Catch::Contains("above the limit"));
  CHECK_THAT(refusal(std::string(kHpackHeadersMax + 1, '\x82')),
             Catch::Contains("more than 1000 headers"));
  HpackDecoder decoder;
  std::optional<Headers> headers = decoder.decode(std::string(kHpackHeadersMax, '\x82'));
  REQUIRE(headers);
  CHECK(headers->size() == kHpackHeadersMax);
}

TEST_CASE("a decoder refuses every block after an error, with the first error", "[hpack]") {
  HpackDecoder decoder;
  CHECK_FALSE(decoder.decode(hex("80")));
  const std::string error = decoder.error();
  CHECK_FALSE(decoder.decode(hex("82")));
  CHECK(decoder.error() == error);
}

TEST_CASE("an empty block decodes to no headers", "[hpack]") {
  HpackDecoder decoder;
  CHECK(decoded(decoder, "") == Headers{});
}

// Captured from Node 20's http2 client (nghttp2) on loopback: two requests with grpc-js's
// headers on one connection, the second leaning on the dynamic table the first filled.
TEST_CASE("two requests from nghttp2 decode with the dynamic table they share", "[hpack]") {
  const Headers common = {{":scheme", "http"},
                          {":authority", "127.0.0.1:2379"},
                          {"content-type", "application/grpc"},
                          {"te", "trailers"},
                          {"user-agent", "grpc-node-js/1.14.7"},
                          {"grpc-accept-encoding", "identity,deflate,gzip"},
                          {"accept-encoding", "identity"}};
  const auto request = [&common](const std::string& path) {
    Headers headers = {{":method", "POST"}, {":path", path}};
    headers.insert(headers.end(), common.begin(), common.end());
    return headers;
  };
  HpackDecoder decoder;
  CHECK(decoded(decoder,
                "83048f60a924882d9dcb6571af9b8b1bfcd586418a089d5c0b8170dc132ebf5f8b1d75d0620d263d"
                "4c4d656440027465864d833505b11f7a8e9acac8b54790ab7443015c2d2eef408e9acac8b0c842d6"
                "958b510f21aa9b903485a9264fafa90b2d03497ea6f66aff50863485a9264faf") ==
        request("/etcdserverpb.KV/Txn"));
  // :authority 56, content-type 60, te 42, user-agent 61, grpc-accept-encoding 73,
  // accept-encoding 55.
  CHECK(decoder.table_size() == 347);
  CHECK(decoded(decoder, "83049560a924882d9dcb6571af9ca34158ce51a0b8ac1d4986c3c2c1c0bfbe") ==
        request("/etcdserverpb.Lease/LeaseGrant"));
  CHECK(decoder.table_size() == 347);
}

TEST_CASE("the encoder indexes exact static entries and writes the rest as plain literals",
          "[hpack]") {
  CHECK(hpack_encode({{":status", "200"}}) == hex("88"));
  CHECK(hpack_encode({{":authority", ""}}) == hex("81"));
  // content-type is static entry 31: 15 in the 4-bit prefix, then 16.
  CHECK(hpack_encode({{"content-type", "application/grpc"}}) ==
        hex("0f 10 10") + "application/grpc");
  CHECK(hpack_encode({{":status", "201"}}) == hex("08 03") + "201");
  CHECK(hpack_encode({{"grpc-status", "0"}}) == hex("00 0b") + "grpc-status" + hex("01") + "0");
  CHECK(hpack_encode({}).empty());
}

TEST_CASE("the encoder's blocks decode to the headers given, leaving no table", "[hpack]") {
  const Headers response = {{":status", "200"}, {"content-type", "application/grpc"}};
  const Headers trailers = {{"grpc-status", "0"},
                            {"grpc-message",
                             "etcdserver: request timed out, possibly due to "
                             "connection lost"},
                            {"x-lockstep-member", "member 2 of 3"},
                            {"user-agent", ""},
                            {"grpc-message", std::string(300, 'm')}};  // a 2-byte length
  HpackDecoder decoder;
  CHECK(decoded(decoder, "") == Headers{});  // a fresh decoder, as a client's is
  std::optional<Headers> first = decoder.decode(hpack_encode(response));
  REQUIRE(first);
  CHECK(*first == response);
  std::optional<Headers> second = decoder.decode(hpack_encode(trailers));
  REQUIRE(second);
  CHECK(*second == trailers);
  CHECK(decoder.table_size() == 0);
  CHECK(hpack_encode(trailers) == hpack_encode(trailers));
}

}  // namespace
}  // namespace lockstep::sim::h2
