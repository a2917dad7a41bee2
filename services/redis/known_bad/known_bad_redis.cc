#include "services/redis/known_bad/known_bad_redis.h"

#include <map>

#include "services/redis/adapter/redis_adapter.h"

namespace lockstep {

namespace {

// The production adapter with one operation replaced.
class RedisVariant : public LockAdapter {
 public:
  RedisVariant(std::string name, RedisConnection& connection)
      : name_(std::move(name)), connection_(connection), good_({.connection = &connection}) {}

  std::string_view name() const override { return name_; }
  FencingSupport fencing() const override { return FencingSupport::monotonic; }
  AdapterResult create_lock(const LockSpec& spec) override { return good_.create_lock(spec); }
  AdapterResult release_lock(const LockSpec& spec) override { return good_.release_lock(spec); }
  AdapterResult extend_lock(const LockSpec& spec, int64_t ttl_ms) override {
    return good_.extend_lock(spec, ttl_ms);
  }
  AdapterResult is_valid_lock(const LockSpec& spec) override { return good_.is_valid_lock(spec); }

 protected:
  // 1 -> ok, 0 -> the given status, anything else -> backend_error.
  static AdapterResult from_integer(const RedisResult& r, AdapterStatus on_zero) {
    if (r.ok() && r.reply.type == RedisReply::Type::integer) {
      return r.reply.integer > 0 ? AdapterResult{} : AdapterResult{.status = on_zero};
    }
    return {.status = AdapterStatus::backend_error,
            .message = r.ok() ? describe(r.reply) : r.message};
  }
  RedisResult send(const std::vector<std::string>& argv) { return connection_.command(argv); }
  std::string lock_key(const LockSpec& spec) const { return good_.lock_key(spec.key); }
  std::string fencing_key(const LockSpec& spec) const { return good_.fencing_key(spec.key); }

 private:
  std::string name_;
  RedisConnection& connection_;
  RedisAdapter good_;
};

// Release by plain DEL: deletes whoever's lock is there.
class DelRelease final : public RedisVariant {
 public:
  explicit DelRelease(RedisConnection& c) : RedisVariant("bad-del-release", c) {}
  AdapterResult release_lock(const LockSpec& spec) override {
    return from_integer(send({"DEL", lock_key(spec)}), AdapterStatus::not_owner);
  }
};

// GET, compare in the client, then DEL in a second call: the lock can change hands in between.
class GetDelRelease final : public RedisVariant {
 public:
  explicit GetDelRelease(RedisConnection& c) : RedisVariant("bad-get-del-release", c) {}
  AdapterResult release_lock(const LockSpec& spec) override {
    const RedisResult got = send({"GET", lock_key(spec)});
    if (!got.ok() || got.reply.type != RedisReply::Type::string || got.reply.str != spec.value) {
      return {.status = got.ok() ? AdapterStatus::not_owner : AdapterStatus::backend_error,
              .message = got.message};
    }
    return from_integer(send({"DEL", lock_key(spec)}), AdapterStatus::not_owner);
  }
};

// Extend by plain PEXPIRE: lengthens whoever's lock is there.
class PexpireExtend final : public RedisVariant {
 public:
  explicit PexpireExtend(RedisConnection& c) : RedisVariant("bad-pexpire-extend", c) {}
  AdapterResult extend_lock(const LockSpec& spec, int64_t ttl_ms) override {
    return from_integer(send({"PEXPIRE", lock_key(spec), std::to_string(ttl_ms)}),
                        AdapterStatus::not_owner);
  }
};

// SETNX, then PEXPIRE in a second call: a client that dies in between leaves a lock that never
// expires.
class SetnxExpire final : public RedisVariant {
 public:
  explicit SetnxExpire(RedisConnection& c) : RedisVariant("bad-setnx-expire", c) {}
  AdapterResult create_lock(const LockSpec& spec) override {
    AdapterResult set =
        from_integer(send({"SETNX", lock_key(spec), spec.value}), AdapterStatus::contended);
    if (!set.ok()) return set;
    AdapterResult expire =
        from_integer(send({"PEXPIRE", lock_key(spec), std::to_string(spec.ttl_ms)}),
                     AdapterStatus::backend_error);
    if (!expire.ok()) return expire;
    const RedisResult token = send({"INCR", fencing_key(spec)});
    if (!token.ok() || token.reply.type != RedisReply::Type::integer)
      return from_integer(token, AdapterStatus::backend_error);
    return {.fencing_token = static_cast<uint64_t>(token.reply.integer)};
  }
};

// A token drawn from the (random) owner value instead of a counter, while claiming monotonic.
class RandomToken final : public RedisVariant {
 public:
  explicit RandomToken(RedisConnection& c) : RedisVariant("bad-random-token", c) {}
  AdapterResult create_lock(const LockSpec& spec) override {
    AdapterResult result = RedisVariant::create_lock(spec);
    if (result.ok()) result.fencing_token = std::stoull(spec.value.substr(0, 12), nullptr, 16) + 1;
    return result;
  }
};

// Keeps no validity of its own: a lock is believed held until an extension fails (node-redlock's
// using(), redis-semaphore's refresh), so an auto-extending holder learns of a loss only when the
// failing extension times out, after its lease may already be someone else's.
class LateLossSignal final : public RedisVariant {
 public:
  explicit LateLossSignal(RedisConnection& c) : RedisVariant("bad-late-loss-signal", c) {}
  int64_t validity_end_us(const LockSpec&, int64_t, int64_t) const override {
    return kValidityForeverUs;
  }

 private:
  static constexpr int64_t kValidityForeverUs = INT64_MAX / 4;
};

// Reports an extend done whatever came of it: one the server refused (the lease had ended) or one
// whose reply never came (outcome unknown). The Locker then moves the holder's validity on and
// lost() stays false though the lease did not move: what the Locker itself once did with such
// extends (issue 38, bug 2), kept here so calibrate shows the sweep still catches it.
class RefusedExtendOk final : public RedisVariant {
 public:
  explicit RefusedExtendOk(RedisConnection& c) : RedisVariant("bad-refused-extend-ok", c) {}
  AdapterResult extend_lock(const LockSpec& spec, int64_t ttl_ms) override {
    AdapterResult result = RedisVariant::extend_lock(spec, ttl_ms);
    if (result.status == AdapterStatus::not_owner ||
        result.status == AdapterStatus::outcome_unknown) {
      return {};
    }
    return result;
  }
};

// Reads a write that got no reply as not applied: a timeout or a reset after the request was sent
// becomes a backend error, which says nothing happened, though the script may have run. What the
// Redis and Mongo adapters once did with a reset or an EOF after the request (issue 38, bug 3).
class UnknownAsError final : public RedisVariant {
 public:
  explicit UnknownAsError(RedisConnection& c) : RedisVariant("bad-unknown-as-error", c) {}
  AdapterResult create_lock(const LockSpec& spec) override {
    return as_error(RedisVariant::create_lock(spec));
  }
  AdapterResult release_lock(const LockSpec& spec) override {
    return as_error(RedisVariant::release_lock(spec));
  }
  AdapterResult extend_lock(const LockSpec& spec, int64_t ttl_ms) override {
    return as_error(RedisVariant::extend_lock(spec, ttl_ms));
  }

 private:
  static AdapterResult as_error(AdapterResult result) {
    if (result.status == AdapterStatus::outcome_unknown)
      result.status = AdapterStatus::backend_error;
    return result;
  }
};

// Renews its own leases, as Redisson's watchdog does: each grant starts a task on the client's
// background that extends the lease for its TTL every third of it, over the same connection as
// the caller's own calls, without taking turns with them (no Background::make_gate). Two callers
// then wait on one stream at once and either may read the other's reply: an acquire takes the
// extension's 1 for a grant with token 1 while another client holds the key. What the Locker's
// auto-extension once did on its own thread (issue 38, bug 1), kept here so calibrate shows the
// simulator still catches it. Its renewals stop at release, at the first that fails, or after
// kRenewalsMax (a bounded hold, as a lease time caps one): a holder that never releases does not
// keep the key forever, which would be another bug than the one it keeps.
class UngatedWatchdog final : public RedisVariant {
 public:
  UngatedWatchdog(RedisConnection& c, Background& background)
      : RedisVariant("bad-ungated-watchdog", c), background_(background) {}
  ~UngatedWatchdog() override { watchdogs_.clear(); }  // stops them before the adapter goes

  AdapterResult create_lock(const LockSpec& spec) override {
    AdapterResult result = RedisVariant::create_lock(spec);
    if (result.ok()) watch(spec);
    return result;
  }
  AdapterResult release_lock(const LockSpec& spec) override {
    stop(spec.value);
    return RedisVariant::release_lock(spec);
  }

 private:
  static constexpr size_t kWatchdogsMax = 64;  // locks one client holds at once
  static constexpr int kRenewalsMax = 8;

  // Stops and joins the lock's watchdog (outside a destructor: a join may be cut by a crash).
  void stop(const std::string& value) {
    const auto it = watchdogs_.find(value);
    if (it == watchdogs_.end()) return;
    it->second->request_stop();
    it->second->join();
    watchdogs_.erase(it);
  }

  void watch(const LockSpec& spec) {
    stop(spec.value);
    if (watchdogs_.size() >= kWatchdogsMax) return;  // renews no more: its leases just expire
    watchdogs_[spec.value] = background_.start("watchdog", [this, spec](StopWaiter& waiter) {
      for (int renewal = 0; renewal < kRenewalsMax && waiter.wait_for_us(spec.ttl_ms * 1000 / 3);
           ++renewal) {
        const AdapterResult renewed = RedisVariant::extend_lock(spec, spec.ttl_ms);
        if (waiter.stop_requested() || !renewed.ok()) return;
      }
    });
  }

  Background& background_;
  std::map<std::string, std::unique_ptr<BackgroundTask>> watchdogs_;  // by lock value
};

}  // namespace

std::unique_ptr<LockAdapter> make_known_bad_redis_adapter(const std::string& name,
                                                          RedisConnection& connection,
                                                          ClientSeams seams) {
  if (name == "bad-del-release") return std::make_unique<DelRelease>(connection);
  if (name == "bad-get-del-release") return std::make_unique<GetDelRelease>(connection);
  if (name == "bad-pexpire-extend") return std::make_unique<PexpireExtend>(connection);
  if (name == "bad-setnx-expire") return std::make_unique<SetnxExpire>(connection);
  if (name == "bad-random-token") return std::make_unique<RandomToken>(connection);
  if (name == "bad-late-loss-signal") return std::make_unique<LateLossSignal>(connection);
  if (name == "bad-refused-extend-ok") return std::make_unique<RefusedExtendOk>(connection);
  if (name == "bad-unknown-as-error") return std::make_unique<UnknownAsError>(connection);
  if (name == "bad-ungated-watchdog")
    return std::make_unique<UngatedWatchdog>(connection, seams.background);
  return nullptr;
}

}  // namespace lockstep
