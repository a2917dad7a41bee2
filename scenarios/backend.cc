#include "scenarios/backend.h"

#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "adapters/memory/memory_adapter.h"
#include "scenarios/ext_backend.h"
#include "scenarios/keyed_backend.h"
#include "scenarios/mongo_backend.h"
#include "scenarios/redis_backend.h"
#include "scenarios/redlock_backend.h"
#include "sim/world.h"

namespace lockstep {

void Backend::failover() { throw WorldUnsupported("this adapter has no replica to fail over to"); }
void Backend::set_server_drift(int64_t) { throw WorldUnsupported("this adapter's server clock cannot drift here"); }
void Backend::partition(int, bool) { throw WorldUnsupported("this adapter has no network to partition"); }
void Backend::heal() { throw WorldUnsupported("this adapter has no network to heal"); }
void Backend::set_fixed_latency(int64_t) { throw WorldUnsupported("this world's latency cannot be fixed"); }
void Backend::crash_server(int) { throw WorldUnsupported("this adapter's servers cannot be crashed one by one here"); }
void Backend::restart_server(int) { throw WorldUnsupported("this adapter's servers cannot be restarted one by one here"); }
void Backend::pause_server(int, int64_t) { throw WorldUnsupported("this adapter's servers cannot be paused here"); }
void Backend::jump_server_clock(int, int64_t) { throw WorldUnsupported("this adapter's server clocks cannot jump here"); }
void Backend::partition_server(int, int, bool) {
  throw WorldUnsupported("this adapter has no per-server network to partition");
}

namespace {

class MemoryBackend final : public Backend {
 public:
  MemoryBackend(BackendEnv& env, bool bad_release) : sim_(env.sim) {
    Clock* clock = &system_clock_;
    if (sim_ != nullptr) {
      server_ = sim_->add_node("memory");
      clock = &sim_->clock(server_);
    }
    adapter_ = std::make_unique<MemoryAdapter>(MemoryAdapterOptions{.clock = clock,
                                                                   .observer = &env.recorder,
                                                                   .server_name = "memory",
                                                                   .bad_release_without_owner_check = bad_release});
  }

  LockAdapter& adapter_for(int, int) override { return *adapter_; }
  int server_count() const override { return 1; }
  bool records_leases() const override { return true; }
  void set_server_drift(int64_t drift_ppm) override {
    if (sim_ == nullptr) Backend::set_server_drift(drift_ppm);
    sim_->set_drift(server_, drift_ppm);
  }
  // No network between the clients and the store: nothing is ever on the wire.
  void set_fixed_latency(int64_t) override {}

 private:
  sim::World* sim_;
  sim::NodeId server_ = -1;
  SystemClock system_clock_;
  std::unique_ptr<MemoryAdapter> adapter_;
};

std::vector<AdapterEntry>& registry() {
  static std::vector<AdapterEntry> entries = {
      {.name = "memory",
       .description = "in-process TTL lease table with owner-checked release/extend and monotonic fencing tokens",
       .worlds = {"sim", "real"},
       .make_sim = [](BackendEnv& env) { return make_memory_backend(env); },
       .make_real = [](BackendEnv& env) { return make_memory_backend(env); }},
      {.name = "redis",
       .description = "single Redis: SET NX PX with a fencing token in the same script, Lua compare-and-delete "
                      "release and compare-and-pexpire extend",
       .worlds = {"sim", "real"},
       .options = redis_backend_options(),
       .make_sim = [](BackendEnv& env) { return make_redis_sim_backend(env, production_redis_adapter()); },
       .make_real = [](BackendEnv& env) { return make_redis_real_backend(env, production_redis_adapter()); }},
      {.name = "redlock",
       .description = "Redlock over N independent Redis nodes (nodes: 3, 5, 7): SET NX PX on all in parallel, a "
                      "majority and positive validity after elapsed time and drift, release everywhere on failure; "
                      "no fencing token",
       .worlds = {"sim", "real"},
       .options = redlock_backend_options(),
       .make_sim = [](BackendEnv& env) { return make_redlock_sim_backend(env, production_redlock_adapter()); },
       .make_real = [](BackendEnv& env) { return make_redlock_real_backend(env, production_redlock_adapter()); }},
      {.name = "mongo",
       .description = "MongoDB: upsert against a unique index on key, expiry by the server's $$NOW (or the "
                      "client's clock), TTL index, owner-checked release and extend, a fencing counter per key",
       .worlds = {"sim", "real"},
       .options = mongo_backend_options(),
       .make_sim = [](BackendEnv& env) { return make_mongo_sim_backend(env, production_mongo_adapter()); },
       .make_real = [](BackendEnv& env) { return make_mongo_real_backend(env, production_mongo_adapter()); }},
      {.name = "keyed-rw",
       .description = "in-process keyed shared/exclusive mutex: writer preference, exclusives in request order, "
                      "per-key state freed when idle",
       .worlds = {"sim"},
       .make_sim = [](BackendEnv& env) { return make_keyed_rw_sim_backend(env); }},
      {.name = "fifo",
       .description = "in-process FIFO keyed lock: one caller per key in arrival order, max wait, bounded queues, "
                      "clear() that keeps exclusion",
       .worlds = {"sim"},
       .options = fifo_backend_options(),
       .make_sim = [](BackendEnv& env) { return make_fifo_sim_backend(env); }},
  };
  // Lock libraries in other languages, driven through the ext process protocol (ext_backend.h).
  static const bool ext_added = [] {
    for (AdapterEntry& entry : ext_adapter_entries()) entries.push_back(std::move(entry));
    return true;
  }();
  (void)ext_added;
  return entries;
}

}  // namespace

std::unique_ptr<Backend> make_memory_backend(BackendEnv& env, bool bad_release_without_owner_check) {
  return std::make_unique<MemoryBackend>(env, bad_release_without_owner_check);
}

const std::vector<AdapterEntry>& adapters() { return registry(); }

const AdapterEntry* find_adapter(const std::string& name) {
  for (const AdapterEntry& entry : registry()) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

void register_adapter(AdapterEntry entry) {
  if (find_adapter(entry.name) != nullptr) {
    throw std::logic_error(fmt::format("adapter {} registered twice", entry.name));
  }
  registry().push_back(std::move(entry));
}

std::string adapter_names() {
  std::vector<std::string> names;
  for (const AdapterEntry& entry : registry()) names.push_back(entry.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace lockstep
