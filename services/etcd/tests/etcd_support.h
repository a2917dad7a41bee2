#pragma once
// What the etcd tests share: skipping (or, in CI, failing) without etcd, as tests/real_support.h
// does for the other servers.
#include <cstdlib>
#include <iostream>
#include <string>

#include <catch2/catch.hpp>

#include "real/server_errors.h"
#include "services/etcd/client/etcd_json.h"
#include "services/etcd/real/etcd_cluster.h"

namespace lockstep::testing {

inline constexpr int kEtcdSkipExitCode = 77;

// base64_encode, short enough for the tests' request tables.
inline std::string b(const std::string& s) { return etcd::base64_encode(s); }

// etcd-server is a Debian package the project installs (services/etcd/packages.txt): missing in
// CI is a failure, elsewhere a skip that says how to get it.
inline void require_etcd() {
  try {
    real::EtcdCluster::binary_path();
  } catch (const real::ServerUnavailable&) {
    if (std::getenv("CI") != nullptr) FAIL("required in CI: etcd (apt-get install etcd-server)");
    std::cout << "skipped: etcd not found (apt-get install etcd-server)" << std::endl;
    std::exit(kEtcdSkipExitCode);
  }
}

}  // namespace lockstep::testing
