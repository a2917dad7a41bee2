#include "services/etcd/backend/etcd_service.h"

#include <fmt/format.h>

#include "services/etcd/adapter/etcd_adapter.h"
#include "services/etcd/adapter/etcd_lock_adapter.h"
#include "services/etcd/backend/etcd_backend.h"

namespace lockstep {

namespace {

std::vector<OptionSpec> with(std::vector<OptionSpec> a, const std::vector<OptionSpec>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<AdapterEntry> etcd_adapters() {
  return {
      {.name = "etcd",
       .description =
           "etcd's concurrency recipe over its JSON gateway: a lease per lock, a key under the "
           "lock's prefix, the first created holds; waits for its predecessor's delete (up to "
           "half the TTL) and checks its key after the wait; the create revision is the token",
       .worlds = {WorldKind::sim, WorldKind::real},
       .traits = kEtcdTraits,
       .options = etcd_backend_options(),
       .findings = etcd_findings(EtcdLockKind::recipe),
       .make_sim =
           [](BackendEnv& env) { return make_etcd_sim_backend(env, etcd_recipe_adapter()); },
       .make_real =
           [](BackendEnv& env) { return make_etcd_real_backend(env, etcd_recipe_adapter()); }},
      {.name = "etcd-lock",
       .description =
           "etcd's Lock RPC (v3lock): a lease per lock, the server queues the caller by create "
           "revision; the client keeps its lease alive while queued and checks its key when Lock "
           "answers (lease_check=off: trusts the answer, as the API documents it; etcd 3.4 then "
           "hands out locks whose lease expired in the queue, etcd-io/etcd#11456)",
       .worlds = {WorldKind::sim, WorldKind::real},
       .traits = kEtcdTraits,
       .options = with(etcd_backend_options(), etcd_lock_options()),
       .findings = etcd_findings(EtcdLockKind::lock_rpc),
       .make_sim = [](BackendEnv& env) { return make_etcd_sim_backend(env, etcd_lock_adapter()); },
       .make_real =
           [](BackendEnv& env) { return make_etcd_real_backend(env, etcd_lock_adapter()); }},
  };
}

}  // namespace

std::vector<OptionSpec> etcd_backend_options() {
  return {
      {.name = "members",
       .default_value = "3",
       .help = "etcd members (1 or 3)",
       .choices = {"1", "3"}},
      {.name = "request_timeout_ms",
       .default_value = "1000",
       .help = "client timeout per request (then the next member)",
       .min = 1,
       .max = 600'000},
      {.name = "heartbeat_ms",
       .default_value = "100",
       .help = "etcd's --heartbeat-interval",
       .min = 10,
       .max = 10'000},
      {.name = "election_timeout_ms",
       .default_value = "500",
       .help = "etcd's --election-timeout (500: leases of at least 1 s; etcd's default 1000: 2 s)",
       .min = 50,
       .max = 600'000},
  };
}

std::vector<OptionSpec> etcd_lock_options() {
  return {
      {.name = "lease_check",
       .default_value = "on",
       .help = "keep the lease alive while queued and check the key Lock returns (off: trust it)",
       .choices = {"on", "off"}},
      {.name = "lock_wait_ms",
       .default_value = "30000",
       .help = "how long one acquire waits in the server's queue",
       .min = 1,
       .max = 600'000},
  };
}

int etcd_member(int server, int members) {
  if (server < 0 || server >= members) {
    throw WorldUnsupported(fmt::format("no etcd member {} (the cluster has {})", server, members));
  }
  return server;
}

EtcdAdapterFactory etcd_recipe_adapter() {
  return
      [](EtcdConnection& connection, Clock& clock, const Options&) -> std::unique_ptr<LockAdapter> {
        return std::make_unique<EtcdAdapter>(
            EtcdLockOptions{.connection = &connection, .clock = &clock});
      };
}

EtcdAdapterFactory etcd_lock_adapter() {
  return [](EtcdConnection& connection, Clock& clock,
            const Options& options) -> std::unique_ptr<LockAdapter> {
    return std::make_unique<EtcdLockAdapter>(
        EtcdLockOptions{.connection = &connection, .clock = &clock},
        EtcdLockRpcOptions{.lease_check = options.get("lease_check") == "on",
                           .lock_wait_ms = options.get_int("lock_wait_ms")});
  };
}

Service etcd_service() { return {.name = "etcd", .adapters = etcd_adapters}; }

}  // namespace lockstep
