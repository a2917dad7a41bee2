// A lockstep binary with locks registered the way a user registers theirs: the outsider locks of
// examples/own-adapter (my_keyed_locks.cc, my_deadline_lock.cc, my_whole_client.cc and
// my_fenced_lock.cc, compiled here from the same source) and keyed locks whose calls throw, for tests/user_keyed_cli_test.cc
// and tests/user_deadline_cli_test.cc. The example itself is built against the installed
// package by scripts/own_adapter.sh; this binary lets the plain suite hold the same locks to the
// command line's exit codes without installing anything.
#include <map>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>

#include "examples/own-adapter/my_deadline_lock.h"
#include "examples/own-adapter/my_fenced_lock.h"
#include "examples/own-adapter/my_keyed_locks.h"
#include "examples/own-adapter/my_whole_client.h"
#include "lockstep/cli.h"
#include "lockstep/registry.h"
#include "services/keyed/backend/keyed_backend.h"

namespace {

using lockstep::keyed::FifoLimits;
using lockstep::keyed::KeyRef;
using lockstep::keyed::RequestId;
using lockstep::keyed::RwMode;

// The outsider locks, every call passed on: each misbehaving lock below overrides what it breaks.
class ForwardingRw : public lockstep::keyed::RwStateMachine {
 public:
  lockstep::keyed::RwAdmission request(const KeyRef& key, RwMode mode) override {
    return inner_.request(key, mode);
  }
  std::optional<RequestId> try_acquire(const KeyRef& key, RwMode mode) override {
    return inner_.try_acquire(key, mode);
  }
  void release(const KeyRef& key, RequestId id, RwMode mode,
               std::vector<RequestId>& granted) override {
    inner_.release(key, id, mode, granted);
  }
  bool cancel(const KeyRef& key, RequestId id, std::vector<RequestId>& granted) override {
    return inner_.cancel(key, id, granted);
  }
  size_t key_count() const override { return inner_.key_count(); }
  size_t entries(std::string_view key) const override { return inner_.entries(key); }

 protected:
  my_keyed::ReadWriteTable inner_;
};

class ForwardingFifo : public lockstep::keyed::FifoStateMachine {
 public:
  explicit ForwardingFifo(FifoLimits limits) : inner_(limits) {}
  lockstep::keyed::FifoAdmission request(const KeyRef& key) override { return inner_.request(key); }
  std::optional<RequestId> try_acquire(const KeyRef& key) override {
    return inner_.try_acquire(key);
  }
  RequestId release(const KeyRef& key, RequestId holder) override {
    return inner_.release(key, holder);
  }
  bool cancel(const KeyRef& key, RequestId id) override { return inner_.cancel(key, id); }
  std::vector<lockstep::keyed::FifoRejection> clear() override { return inner_.clear(); }
  bool held(std::string_view key) const override { return inner_.held(key); }
  size_t waiting(std::string_view key) const override { return inner_.waiting(key); }
  size_t size() const override { return inner_.size(); }
  FifoLimits limits() const override { return inner_.limits(); }

 protected:
  my_keyed::FifoTable inner_;
};

// Which call throws, on its `after`th use (so the run has a history before it).
enum class Throws { request, release, clear };

// A correct outsider lock whose one call throws, as a user's hook might (a failed allocation, a
// logic_error of its own, a non-std exception).
class ThrowingRw final : public ForwardingRw {
 public:
  explicit ThrowingRw(Throws where) : where_(where) {}
  lockstep::keyed::RwAdmission request(const KeyRef& key, RwMode mode) override {
    if (where_ == Throws::request && ++calls_ == kAfter)
      throw std::runtime_error("my table is full");
    return ForwardingRw::request(key, mode);
  }
  void release(const KeyRef& key, RequestId id, RwMode mode,
               std::vector<RequestId>& granted) override {
    if (where_ == Throws::release && ++calls_ == kAfter) throw 42;  // not a std::exception
    ForwardingRw::release(key, id, mode, granted);
  }

 private:
  static constexpr int kAfter = 3;
  Throws where_;
  int calls_ = 0;
};

class ThrowingFifo final : public ForwardingFifo {
 public:
  using ForwardingFifo::ForwardingFifo;
  std::vector<lockstep::keyed::FifoRejection> clear() override {
    throw std::logic_error("clear() is not\nimplemented");  // a line break the report must fold
  }
};

// Grants a request that does not wait: the driver cannot carry that out.
class GrantsStranger final : public ForwardingRw {
 public:
  void release(const KeyRef& key, RequestId id, RwMode mode,
               std::vector<RequestId>& granted) override {
    ForwardingRw::release(key, id, mode, granted);
    granted.push_back(id);  // the request that just left
  }
};

// Gives every request the same id: the second live request would share the first's.
class ReusesId final : public ForwardingRw {
 public:
  lockstep::keyed::RwAdmission request(const KeyRef& key, RwMode mode) override {
    lockstep::keyed::RwAdmission admission = ForwardingRw::request(key, mode);
    admission.id = 1;
    return admission;
  }
};

// clear() also names the holders of the keys that have waiters, as if they were waiting.
class ClearRejectsHolder final : public ForwardingFifo {
 public:
  using ForwardingFifo::ForwardingFifo;
  lockstep::keyed::FifoAdmission request(const KeyRef& key) override {
    const lockstep::keyed::FifoAdmission admission = ForwardingFifo::request(key);
    if (admission.admit == lockstep::keyed::FifoAdmit::granted)
      holders_[std::string(key.key)] = admission.id;
    return admission;
  }
  RequestId release(const KeyRef& key, RequestId holder) override {
    const RequestId next = ForwardingFifo::release(key, holder);
    holders_[std::string(key.key)] = next;
    return next;
  }
  std::vector<lockstep::keyed::FifoRejection> clear() override {
    std::vector<lockstep::keyed::FifoRejection> rejected = ForwardingFifo::clear();
    if (!rejected.empty())
      rejected.push_back({rejected.front().key, holders_[rejected.front().key]});
    return rejected;
  }

 private:
  std::map<std::string, RequestId> holders_;
};

void register_throwing_rw(std::string name, Throws where) {
  lockstep::register_adapter(lockstep::keyed_rw_adapter(
      {.name = std::move(name),
       .description = "test: a keyed RW lock whose call throws",
       .make_machine = [where] { return std::make_unique<ThrowingRw>(where); }}));
}

}  // namespace

int main(int argc, char** argv) {
  my_keyed::register_my_keyed_locks();
  my_deadline::register_my_deadline_locks();
  my_whole_client::register_my_whole_clients();
  my_fenced::register_my_fenced_locks();
  register_throwing_rw("throws-in-acquire", Throws::request);
  register_throwing_rw("throws-in-release", Throws::release);
  lockstep::register_adapter(lockstep::keyed_fifo_adapter(
      {.name = "throws-in-clear",
       .description = "test: a keyed FIFO lock whose clear() throws",
       .make_machine = [](FifoLimits limits) { return std::make_unique<ThrowingFifo>(limits); }}));
  lockstep::register_adapter(lockstep::keyed_rw_adapter(
      {.name = "grants-stranger",
       .description = "test: a keyed RW lock whose release grants the request that left",
       .make_machine = [] { return std::make_unique<GrantsStranger>(); }}));
  lockstep::register_adapter(lockstep::keyed_rw_adapter(
      {.name = "reuses-id",
       .description = "test: a keyed RW lock that gives every request id 1",
       .make_machine = [] { return std::make_unique<ReusesId>(); }}));
  lockstep::register_adapter(lockstep::keyed_fifo_adapter(
      {.name = "clear-rejects-holder",
       .description = "test: a keyed FIFO lock whose clear() names a holder as a waiter",
       .make_machine = [](FifoLimits limits) {
         return std::make_unique<ClearRejectsHolder>(limits);
       }}));
  lockstep::register_adapter(lockstep::keyed_rw_adapter(
      {.name = "throws-in-make",
       .description = "test: a keyed RW lock whose factory throws",
       .make_machine = []() -> std::unique_ptr<lockstep::keyed::RwStateMachine> {
         throw std::bad_alloc();
       }}));
  return lockstep::cli_main(argc, argv);
}
