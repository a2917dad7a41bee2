#include "services/memory/backend/memory_backend.h"

#include "base/check.h"
#include "sim/world.h"

namespace lockstep {

namespace {

class MemoryBackend final : public Backend {
 public:
  MemoryBackend(BackendEnv& env, const MemoryAdapterWrapper& wrap,
                const StoreClockWrapper& wrap_clock, MemoryClientWrapper wrap_client = {})
      : sim_(env.sim), seams_(env), wrap_client_(std::move(wrap_client)) {
    Clock* clock = &system_clock_;
    if (sim_ != nullptr) {
      server_ = sim_->add_node("memory");
      clock = &sim_->clock(server_);
    }
    if (wrap_clock) {
      store_clock_ = wrap_clock(*clock);
      clock = store_clock_.get();
    }
    adapter_ = std::make_unique<MemoryAdapter>(
        MemoryAdapterOptions{.clock = clock, .observer = &env.recorder, .server_name = "memory"});
    if (wrap) wrapped_ = wrap(*adapter_);
  }

  LockAdapter& adapter_for(int client, int node) override {
    if (wrap_client_) {
      per_client_.push_back(wrap_client_(*adapter_, seams_.for_client(client, node)));
      return *per_client_.back();
    }
    if (wrapped_ != nullptr) return *wrapped_;
    return *adapter_;
  }
  int server_count() const override { return 1; }
  bool records_leases() const override { return true; }
  void set_server_drift(int64_t drift_ppm) override {
    if (sim_ == nullptr) Backend::set_server_drift(drift_ppm);
    sim_->set_drift(server_, drift_ppm);
  }
  void jump_server_clock(int server, int64_t delta_us) override {
    if (sim_ == nullptr) Backend::jump_server_clock(server, delta_us);
    LOCKSTEP_CHECK(server == 0, "the memory store is server 0");
    sim_->jump_clock(server_, delta_us);
  }
  // No network between the clients and the store: nothing is ever on the wire.
  void set_fixed_latency(int64_t) override {}

 private:
  sim::World* sim_;
  sim::NodeId server_ = -1;
  SystemClock system_clock_;
  std::unique_ptr<Clock> store_clock_;  // what the store reads, when wrapped
  std::unique_ptr<MemoryAdapter> adapter_;
  std::unique_ptr<LockAdapter> wrapped_;  // what the clients use, when given
  ClientSeamsSource seams_;
  MemoryClientWrapper wrap_client_;
  std::vector<std::unique_ptr<LockAdapter>> per_client_;  // one per client, with wrap_client_
};

}  // namespace

std::unique_ptr<Backend> make_memory_backend(BackendEnv& env, const MemoryAdapterWrapper& wrap,
                                             const StoreClockWrapper& wrap_clock) {
  return std::make_unique<MemoryBackend>(env, wrap, wrap_clock);
}

std::unique_ptr<Backend> make_memory_backend(BackendEnv& env, MemoryClientWrapper wrap_client) {
  return std::make_unique<MemoryBackend>(env, MemoryAdapterWrapper{}, StoreClockWrapper{},
                                         std::move(wrap_client));
}

}  // namespace lockstep
