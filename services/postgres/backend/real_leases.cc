#include "services/postgres/backend/real_leases.h"

#include <utility>
#include <vector>

namespace lockstep {

namespace {

// A session lock is promised until revoked: the history's lease gets a bound no real run reaches
// (a day, as the simulator's time bound), so it ends only by its revoke.
constexpr int64_t kRealSessionLeaseUs = 24LL * 3600 * 1'000'000;
constexpr const char* kLeaseGroup = "postgres";

// An adapter whose grants and sent releases go to `leases`. lockstep's own (advisory set) also says
// which locks it still believes held, so a session it found lost ends their leases; a library's
// (a co-simulated or driven one) says nothing of the kind, and its locks have no TTL: their
// validity is validity_us from the call (0: the adapter's own).
class RecordingAdapter final : public LockAdapter {
 public:
  RecordingAdapter(std::unique_ptr<LockAdapter> inner, const AdvisoryAdapter* advisory,
                   RealPgLeases& leases, int client, int64_t validity_us)
      : inner_(std::move(inner)),
        advisory_(advisory),
        leases_(leases),
        client_(client),
        validity_us_(validity_us) {}

  std::string_view name() const override { return inner_->name(); }
  FencingSupport fencing() const override { return inner_->fencing(); }
  AdapterResult create_lock(const LockSpec& spec) override {
    AdapterResult result = inner_->create_lock(spec);
    if (result.status == AdapterStatus::ok) {
      leases_.granted(client_, spec, result.fencing_token,
                      inner_->fencing() == FencingSupport::monotonic);
    }
    reconcile();
    return result;
  }
  AdapterResult release_lock(const LockSpec& spec) override {
    // Over by the time the server serves the unlock, at the latest.
    if (advisory_ == nullptr || advisory_->believes_held(spec)) {
      leases_.revoked(client_, spec, client_, "unlock");
    }
    AdapterResult result = inner_->release_lock(spec);
    reconcile();
    return result;
  }
  AdapterResult extend_lock(const LockSpec& spec, int64_t ttl_ms) override {
    AdapterResult result = inner_->extend_lock(spec, ttl_ms);
    reconcile();
    return result;
  }
  AdapterResult is_valid_lock(const LockSpec& spec) override {
    AdapterResult result = inner_->is_valid_lock(spec);
    reconcile();
    return result;
  }
  int64_t validity_end_us(const LockSpec& spec, int64_t requested_at_us,
                          int64_t ttl_ms) const override {
    if (validity_us_ > 0) return requested_at_us + validity_us_;
    return inner_->validity_end_us(spec, requested_at_us, ttl_ms);
  }

 private:
  void reconcile() {
    if (advisory_ != nullptr) leases_.reconcile(client_, *advisory_);
  }

  std::unique_ptr<LockAdapter> inner_;
  const AdvisoryAdapter* advisory_;  // inner_ itself, when it is lockstep's
  RealPgLeases& leases_;
  int client_;
  int64_t validity_us_;
};

}  // namespace

void RealPgLeases::granted(int client, const LockSpec& spec, uint64_t token, bool has_token) {
  std::lock_guard<std::mutex> guard(mutex_);
  held_[client][spec.key] = spec.value;
  recorder_.record(HistoryEvent{.kind = EventKind::grant,
                                .client = client,
                                .key = spec.key,
                                .has_token = has_token,
                                .token = has_token ? token : 0,
                                .server = kLeaseGroup,
                                .value = spec.value,
                                .ttl_us = kRealSessionLeaseUs,
                                .detail = "session lock"});
}

void RealPgLeases::revoke_locked(int client, const std::string& key, const std::string& value,
                                 int requester, const std::string& cause) {
  recorder_.record(HistoryEvent{.kind = EventKind::revoke,
                                .client = requester,
                                .key = key,
                                .server = kLeaseGroup,
                                .value = value,
                                .detail = cause});
  held_[client].erase(key);
}

void RealPgLeases::revoked(int client, const LockSpec& spec, int requester,
                           const std::string& cause) {
  std::lock_guard<std::mutex> guard(mutex_);
  auto& held = held_[client];
  auto it = held.find(spec.key);
  if (it == held.end() || it->second != spec.value) return;
  revoke_locked(client, spec.key, spec.value, requester, cause);
}

void RealPgLeases::revoke_all_of(int client, const std::string& cause) {
  std::lock_guard<std::mutex> guard(mutex_);
  const std::map<std::string, std::string> held = held_[client];
  for (const auto& [key, value] : held) revoke_locked(client, key, value, -1, cause);
}

void RealPgLeases::revoke_all(const std::string& cause) {
  std::lock_guard<std::mutex> guard(mutex_);
  for (auto& [client, held] : held_) {
    const std::map<std::string, std::string> copy = held;
    for (const auto& [key, value] : copy) revoke_locked(client, key, value, -1, cause);
  }
}

void RealPgLeases::reconcile(int client, const AdvisoryAdapter& adapter) {
  std::lock_guard<std::mutex> guard(mutex_);
  const std::map<std::string, std::string> held = held_[client];
  for (const auto& [key, value] : held) {
    if (adapter.believes_held(LockSpec{.key = key, .value = value})) continue;
    revoke_locked(client, key, value, -1, "its session was lost");
  }
}

std::unique_ptr<LockAdapter> recording_adapter(std::unique_ptr<AdvisoryAdapter> inner,
                                               RealPgLeases& leases, int client) {
  const AdvisoryAdapter* advisory = inner.get();
  return std::make_unique<RecordingAdapter>(std::move(inner), advisory, leases, client, 0);
}

std::unique_ptr<LockAdapter> library_recording_adapter(std::unique_ptr<LockAdapter> inner,
                                                       RealPgLeases& leases, int client,
                                                       int64_t validity_us) {
  return std::make_unique<RecordingAdapter>(std::move(inner), nullptr, leases, client, validity_us);
}

}  // namespace lockstep
