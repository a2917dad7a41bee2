#pragma once
// What the tests of etcd's protobuf messages share: a message decoded, or the test failed with why
// it is not one.
#include <string_view>

#include <catch2/catch.hpp>

#include "services/etcd/sim/etcd_proto.h"

namespace lockstep::sim::etcd::testing {

inline EtcdJson decoded(EtcdMessage message, std::string_view bytes) {
  const ProtoDecoded out = proto_decode(message, bytes);
  INFO(out.error);
  REQUIRE(out.ok());
  return *out.json;
}

}  // namespace lockstep::sim::etcd::testing
