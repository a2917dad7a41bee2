#include "services/redlock/known_bad/known_bad_redlock.h"

#include <algorithm>
#include <map>

#include "services/redlock/adapter/redlock_adapter.h"
#include "services/redlock/adapter/redlock_steps.h"

namespace lockstep {

namespace {

struct Flaw {
  bool half_quorum = false;     // N/2 instead of N/2+1
  bool ignore_elapsed = false;  // validity = ttl - drift
  bool skip_cleanup = false;    // a failed attempt is not released
  bool double_elapsed = false;  // valid until start + (ttl - elapsed - drift): elapsed twice
};

class RedlockVariant final : public LockAdapter {
 public:
  RedlockVariant(std::string name, Flaw flaw, RedlockAdapterParts& parts)
      : name_(std::move(name)),
        flaw_(flaw),
        fanout_(parts.fanout),
        clock_(parts.clock),
        settings_(parts.settings),
        good_({.fanout = &parts.fanout,
               .clock = &parts.clock,
               .random = &parts.random,
               .settings = parts.settings}) {}

  std::string_view name() const override { return name_; }
  FencingSupport fencing() const override { return FencingSupport::none; }

  AdapterResult create_lock(const LockSpec& spec) override {
    RedlockSettings s = settings_;
    s.duration_ms = spec.ttl_ms;
    s.request_timeout_ms =
        std::clamp<int64_t>(std::min(s.request_timeout_ms, spec.ttl_ms / 2), 1, spec.ttl_ms);
    const std::string key = good_.manager().lock_key(spec.key);
    const int64_t started_us = clock_.monotonic_us();
    const NodeVotes votes =
        lock_all(fanout_, key, spec.value, s.duration_ms, s.request_timeout_ms * 1000);
    const int64_t answered_us = clock_.monotonic_us();
    const int64_t elapsed_us = flaw_.ignore_elapsed ? 0 : answered_us - started_us;
    const int needed =
        flaw_.half_quorum ? static_cast<int>(fanout_.size() / 2) : majority_of(fanout_.size());
    const int64_t validity = validity_us(s.duration_ms, elapsed_us, s);
    if (votes.yes >= needed && validity > 0) {
      // What is left from when the grants came back, as production counts it: the lock ends at
      // start + ttl - drift. Ignoring the time spent acquiring ends it that much later.
      // Counting that validity from the start instead subtracts the time spent twice (node-redlock
      // #296/#299): past half the TTL, the lock comes back already over by its own book.
      valid_until_us_.insert_or_assign(
          spec.value, (flaw_.double_elapsed ? started_us : answered_us) + validity);
      return {};
    }
    if (!flaw_.skip_cleanup) unlock_all(fanout_, key, spec.value, s.request_timeout_ms * 1000);
    return {.status = AdapterStatus::contended};
  }
  AdapterResult release_lock(const LockSpec& spec) override {
    valid_until_us_.erase(spec.value);
    return good_.release_lock(spec);
  }
  AdapterResult extend_lock(const LockSpec& spec, int64_t ttl_ms) override {
    return good_.extend_lock(spec, ttl_ms);
  }
  AdapterResult is_valid_lock(const LockSpec& spec) override { return good_.is_valid_lock(spec); }
  // The validity this variant computed at the grant (extends go to the production adapter, which
  // holds none of our locks, so they fail and never move it).
  int64_t validity_end_us(const LockSpec& spec, int64_t requested_at_us,
                          int64_t /*ttl_ms*/) const override {
    auto it = valid_until_us_.find(spec.value);
    return it == valid_until_us_.end() ? requested_at_us : it->second;
  }

 private:
  std::string name_;
  Flaw flaw_;
  RedisFanout& fanout_;  // the backend's, outlives the adapter (parts itself is a temporary)
  Clock& clock_;
  RedlockSettings settings_;
  RedlockAdapter good_;
  std::map<std::string, int64_t> valid_until_us_;  // by value, from the grant until the release
};

}  // namespace

std::unique_ptr<LockAdapter> make_known_bad_redlock_adapter(const std::string& name,
                                                            RedlockAdapterParts& parts) {
  if (name == "bad-redlock-half-quorum")
    return std::make_unique<RedlockVariant>(name, Flaw{.half_quorum = true}, parts);
  if (name == "bad-redlock-no-elapsed")
    return std::make_unique<RedlockVariant>(name, Flaw{.ignore_elapsed = true}, parts);
  if (name == "bad-redlock-double-elapsed")
    return std::make_unique<RedlockVariant>(name, Flaw{.double_elapsed = true}, parts);
  if (name == "bad-redlock-no-cleanup")
    return std::make_unique<RedlockVariant>(name, Flaw{.skip_cleanup = true}, parts);
  return nullptr;
}

}  // namespace lockstep
