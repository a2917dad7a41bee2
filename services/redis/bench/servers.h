// The servers of a lockstep_bench run, shared by every file that benchmarks against them, so
// lockstep's own adapters and the ext libraries (ext_bench.cc) run on the same redis-servers in the
// same run: one redis-server, and the 5 Redlock nodes. Each set is started on first use, from a
// benchmark's main thread (a server gets SIGKILL when the thread that started it ends:
// PR_SET_PDEATHSIG; the main thread lives as long as the run), and stopped at exit by the static's
// destructor, or by the process registry's atexit and signal handlers if that never runs.
// Without redis-server, `error` says why and every case that needs it skips with redis_skip().
#pragma once

#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "services/redis/real/redis_server.h"

namespace lockstep::bench {

constexpr int kRedlockNodes = 5;

struct RedisServers {
  std::vector<std::unique_ptr<real::RedisServerProcess>> servers;  // empty: none could start
  std::string error;                                               // why

  std::vector<int> ports() const {
    std::vector<int> out;
    for (const auto& s : servers) out.push_back(s->port());
    return out;
  }
};

inline RedisServers start_redis_servers(int count) {
  RedisServers out;
  try {
    for (int i = 0; i < count; ++i)
      out.servers.push_back(std::make_unique<real::RedisServerProcess>());
  } catch (const std::exception& e) {  // ServerUnavailable, ServerStartError
    out.servers.clear();
    out.error = e.what();
  }
  return out;
}

// The one redis-server of the Redis cases.
inline RedisServers& shared_redis() {
  static RedisServers shared = start_redis_servers(1);
  return shared;
}

// The 5 nodes of the Redlock cases.
inline RedisServers& shared_redlock_nodes() {
  static RedisServers shared = start_redis_servers(kRedlockNodes);
  return shared;
}

// True when `servers` has them; else skips the case with the reason (never a zero figure).
inline bool servers_or_skip(benchmark::State& state, const RedisServers& servers) {
  if (!servers.servers.empty()) return true;
  state.SkipWithError(("skipped: redis-server not available: " + servers.error).c_str());
  return false;
}

}  // namespace lockstep::bench
