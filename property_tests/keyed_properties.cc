// State-machine tests of the keyed lock cores against simple models (RapidCheck,
// rapidcheck/state.h): random sequences of requests, try-requests, releases, timeouts (withdrawals)
// and clears over several keys. After every command the core's grants and its whole observable
// state (per key: holders, queue; the number of keys with state) must equal the model's. Each
// property runs at least kSequencesMin command sequences whatever RC_PARAMS says (a larger
// max_success wins), with RC_PARAMS' seed, so RC_PARAMS="seed=N" still reproduces a failure it
// printed.
//
// The models say the rules in their own terms, not the cores':
// - keyed-rw: per key, the live requests in arrival order; the holders are exactly the longest
//   prefix that can run together (one exclusive at the front, or the shared requests before the
//   first exclusive). A new request is granted iff it lands in that prefix.
// - fifo: per key, the live requests in arrival order; the front one holds.
#include <rapidcheck.h>
#include <rapidcheck/catch.h>
#include <rapidcheck/state.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "services/keyed/adapter/fifo_core.h"
#include "services/keyed/adapter/rw_core.h"
#include "services/keyed/known_bad/bad_rw_reader_preference.h"

namespace lockstep {
namespace {

using keyed::RequestId;
using keyed::RwMode;

constexpr int kSequencesMin = 1000;

// Runs testable for at least min_success cases; returns whether it held (and how many passed).
template <class Testable>
bool check_at_least(const std::string& description, int min_success, Testable&& testable,
                    int* passed = nullptr) {
  rc::detail::TestParams params = rc::detail::configuration().testParams;
  params.maxSuccess = std::max(params.maxSuccess, min_success);
  rc::detail::TestMetadata metadata;
  metadata.id = description;
  metadata.description = description;
  const rc::detail::TestResult result =
      rc::detail::checkTestable(std::forward<Testable>(testable), metadata, params);
  std::ostringstream message;
  rc::detail::printResultMessage(result, message);
  INFO(description << ": " << message.str());
  if (passed != nullptr && result.template is<rc::detail::SuccessResult>()) {
    *passed = result.template get<rc::detail::SuccessResult>().numSuccess;
  }
  if (!result.template is<rc::detail::SuccessResult>()) UNSCOPED_INFO(message.str());
  return result.template is<rc::detail::SuccessResult>();
}

const std::vector<std::string> kKeys = {"a", "b", "c"};

// ------------------------------------------------------------------------------------------------
// keyed-rw

struct RwReq {
  RequestId id = 0;
  RwMode mode = RwMode::shared;
};

struct RwModel {
  std::map<std::string, std::vector<RwReq>> keys;  // live requests in arrival order; no empty lists
  RequestId next_id = 1;

  static size_t holders(const std::vector<RwReq>& live) {
    if (live.empty()) return 0;
    if (live.front().mode == RwMode::exclusive) return 1;
    size_t n = 0;
    while (n < live.size() && live[n].mode == RwMode::shared) ++n;
    return n;
  }
  const std::vector<RwReq>& live(const std::string& key) const {
    static const std::vector<RwReq> kNone;
    auto it = keys.find(key);
    return it == keys.end() ? kNone : it->second;
  }
  // The ids that hold after `after` but did not in `before`, in arrival order.
  static std::vector<RequestId> new_holders(const std::vector<RwReq>& before,
                                            const std::vector<RwReq>& after) {
    std::vector<RequestId> out;
    const size_t was = holders(before);
    for (size_t i = 0; i < holders(after); ++i) {
      const bool held_before =
          std::any_of(before.begin(), before.begin() + static_cast<std::ptrdiff_t>(was),
                      [&](const RwReq& r) { return r.id == after[i].id; });
      if (!held_before) out.push_back(after[i].id);
    }
    return out;
  }
  void set(const std::string& key, std::vector<RwReq> live_now) {
    if (live_now.empty()) {
      keys.erase(key);
    } else {
      keys[key] = std::move(live_now);
    }
  }
};

struct RwSut {
  std::unique_ptr<keyed::RwCore> core;
  std::vector<RequestId> granted;
};

using RwCommand = rc::state::Command<RwModel, RwSut>;

void check_rw_state(const RwModel& model, const keyed::RwCore& core) {
  RC_ASSERT(core.key_count() == model.keys.size());
  for (const std::string& key : kKeys) {
    const std::vector<RwReq>& live = model.live(key);
    keyed::RwKeySnapshot expected;
    const size_t held = RwModel::holders(live);
    for (size_t i = 0; i < live.size(); ++i) {
      if (i >= held) {
        expected.waiting.emplace_back(live[i].id, live[i].mode);
      } else if (live[i].mode == RwMode::shared) {
        ++expected.shared_holders;
      } else {
        expected.exclusive_holder = live[i].id;
      }
    }
    RC_ASSERT(core.snapshot(key) == expected);
    RC_ASSERT(core.entries(key) == live.size());
  }
}

rc::Gen<RwMode> gen_mode() { return rc::gen::element(RwMode::shared, RwMode::exclusive); }

struct RwRequest : RwCommand {
  std::string key = *rc::gen::elementOf(kKeys);
  RwMode mode = *gen_mode();
  bool try_only = *rc::gen::weightedElement<bool>({{3, false}, {1, true}});

  bool lands_in_prefix(const RwModel& m) const {
    std::vector<RwReq> after = m.live(key);
    after.push_back({m.next_id, mode});
    return RwModel::holders(after) == after.size() || RwModel::holders(after) > m.live(key).size();
  }
  void apply(RwModel& m) const override {
    if (try_only && !lands_in_prefix(m)) return;
    std::vector<RwReq> after = m.live(key);
    after.push_back({m.next_id++, mode});
    m.set(key, std::move(after));
  }
  void run(const RwModel& m, RwSut& sut) const override {
    const bool granted_now = lands_in_prefix(m);
    if (try_only) {
      const std::optional<RequestId> id = sut.core->try_acquire(key, mode);
      RC_ASSERT(id.has_value() == granted_now);
      if (id) RC_ASSERT(*id == m.next_id);
    } else {
      const keyed::RwAdmission admission = sut.core->request(key, mode);
      RC_ASSERT(admission.id == m.next_id);
      RC_ASSERT(admission.granted == granted_now);
    }
    RwModel next = m;
    apply(next);
    check_rw_state(next, *sut.core);
  }
  void show(std::ostream& os) const override {
    os << (try_only ? "try_" : "") << (mode == RwMode::shared ? "lock_shared" : "lock") << "("
       << key << ")";
  }
};

// Ends a hold (release) or a wait (a waiter gives up: cancel), chosen among the key's live
// requests.
struct RwLeave : RwCommand {
  std::string key;
  size_t index = 0;

  explicit RwLeave(const RwModel& m) {
    std::vector<std::string> live_keys;
    for (const auto& [k, live] : m.keys) live_keys.push_back(k);
    RC_PRE(!live_keys.empty());
    key = *rc::gen::elementOf(live_keys);
    index = *rc::gen::inRange<size_t>(0, m.live(key).size());
  }
  void checkPreconditions(const RwModel& m) const override { RC_PRE(index < m.live(key).size()); }
  void apply(RwModel& m) const override {
    std::vector<RwReq> after = m.live(key);
    after.erase(after.begin() + static_cast<std::ptrdiff_t>(index));
    m.set(key, std::move(after));
  }
  void run(const RwModel& m, RwSut& sut) const override {
    const std::vector<RwReq>& before = m.live(key);
    const RwReq target = before[index];
    RwModel next = m;
    apply(next);
    sut.granted.clear();
    if (index < RwModel::holders(before)) {
      sut.core->release(key, target.id, target.mode, sut.granted);
    } else {
      RC_ASSERT(sut.core->cancel(key, target.id, sut.granted));
    }
    RC_ASSERT(sut.granted == RwModel::new_holders(before, next.live(key)));
    check_rw_state(next, *sut.core);
  }
  void show(std::ostream& os) const override {
    os << "leave(" << key << ", live request #" << index << ")";
  }
};

template <class Core>
void rw_state_machine() {
  RwSut sut{std::make_unique<Core>(), {}};
  rc::state::check(RwModel{}, sut,
                   rc::state::gen::execOneOfWithArgs<RwRequest, RwRequest, RwLeave>());
}

// ------------------------------------------------------------------------------------------------
// fifo

constexpr keyed::FifoLimits kFifoLimits{.max_key_length = 3, .max_waiters_per_key = 2};
const std::vector<std::string> kFifoKeys = {"a", "bb", "ccc", "dddd"};  // "dddd" is too long

struct FifoModel {
  std::map<std::string, std::vector<RequestId>> keys;  // front holds; no empty lists
  RequestId next_id = 1;

  const std::vector<RequestId>& live(const std::string& key) const {
    static const std::vector<RequestId> kNone;
    auto it = keys.find(key);
    return it == keys.end() ? kNone : it->second;
  }
  keyed::FifoAdmit admit(const std::string& key) const {
    if (key.size() > kFifoLimits.max_key_length) return keyed::FifoAdmit::invalid_key;
    const size_t n = live(key).size();
    if (n == 0) return keyed::FifoAdmit::granted;
    return n - 1 >= kFifoLimits.max_waiters_per_key ? keyed::FifoAdmit::queue_full
                                                    : keyed::FifoAdmit::queued;
  }
};

struct FifoSut {
  keyed::FifoCore core{kFifoLimits};
};

using FifoCommand = rc::state::Command<FifoModel, FifoSut>;

void check_fifo_state(const FifoModel& model, const keyed::FifoCore& core) {
  RC_ASSERT(core.size() == model.keys.size());
  for (const std::string& key : kFifoKeys) {
    const std::vector<RequestId>& live = model.live(key);
    RC_ASSERT(core.held(key) == !live.empty());
    RC_ASSERT(core.holder(key) == (live.empty() ? keyed::kNoRequest : live.front()));
    const std::vector<RequestId> waiting =
        live.empty() ? std::vector<RequestId>{}
                     : std::vector<RequestId>(live.begin() + 1, live.end());
    RC_ASSERT(core.queue(key) == waiting);
  }
}

struct FifoRequest : FifoCommand {
  std::string key = *rc::gen::elementOf(kFifoKeys);
  bool try_only = *rc::gen::weightedElement<bool>({{4, false}, {1, true}});

  void apply(FifoModel& m) const override {
    const keyed::FifoAdmit admit = m.admit(key);
    if (admit == keyed::FifoAdmit::invalid_key || admit == keyed::FifoAdmit::queue_full) return;
    if (try_only && admit != keyed::FifoAdmit::granted) return;
    m.keys[key].push_back(m.next_id++);
  }
  void run(const FifoModel& m, FifoSut& sut) const override {
    const keyed::FifoAdmit expected = m.admit(key);
    if (try_only) {
      const std::optional<RequestId> id = sut.core.try_acquire(key);
      RC_ASSERT(id.has_value() == (expected == keyed::FifoAdmit::granted));
      if (id) RC_ASSERT(*id == m.next_id);
    } else {
      const keyed::FifoAdmission admission = sut.core.request(key);
      RC_ASSERT(admission.admit == expected);
      const bool takes_id =
          expected == keyed::FifoAdmit::granted || expected == keyed::FifoAdmit::queued;
      RC_ASSERT(admission.id == (takes_id ? m.next_id : keyed::kNoRequest));
    }
    FifoModel next = m;
    apply(next);
    check_fifo_state(next, sut.core);
  }
  void show(std::ostream& os) const override {
    os << (try_only ? "try(" : "request(") << key << ")";
  }
};

std::vector<std::string> held_keys(const FifoModel& m) {
  std::vector<std::string> out;
  for (const auto& [key, live] : m.keys) out.push_back(key);
  return out;
}

struct FifoRelease : FifoCommand {
  std::string key;
  explicit FifoRelease(const FifoModel& m) {
    RC_PRE(!m.keys.empty());
    key = *rc::gen::elementOf(held_keys(m));
  }
  void checkPreconditions(const FifoModel& m) const override { RC_PRE(!m.live(key).empty()); }
  void apply(FifoModel& m) const override {
    std::vector<RequestId>& live = m.keys[key];
    live.erase(live.begin());
    if (live.empty()) m.keys.erase(key);
  }
  void run(const FifoModel& m, FifoSut& sut) const override {
    const std::vector<RequestId>& live = m.live(key);
    const RequestId next_holder = live.size() > 1 ? live[1] : keyed::kNoRequest;
    RC_ASSERT(sut.core.release(key, live.front()) == next_holder);
    FifoModel next = m;
    apply(next);
    check_fifo_state(next, sut.core);
  }
  void show(std::ostream& os) const override { os << "release(" << key << ")"; }
};

// A waiter's max wait runs out: it withdraws; nobody else changes.
struct FifoTimeout : FifoCommand {
  std::string key;
  size_t waiter = 0;
  explicit FifoTimeout(const FifoModel& m) {
    std::vector<std::string> with_waiters;
    for (const auto& [k, live] : m.keys) {
      if (live.size() > 1) with_waiters.push_back(k);
    }
    RC_PRE(!with_waiters.empty());
    key = *rc::gen::elementOf(with_waiters);
    waiter = *rc::gen::inRange<size_t>(1, m.live(key).size());
  }
  void checkPreconditions(const FifoModel& m) const override {
    RC_PRE(waiter >= 1 && waiter < m.live(key).size());
  }
  void apply(FifoModel& m) const override {
    std::vector<RequestId>& live = m.keys[key];
    live.erase(live.begin() + static_cast<std::ptrdiff_t>(waiter));
  }
  void run(const FifoModel& m, FifoSut& sut) const override {
    RC_ASSERT(sut.core.cancel(key, m.live(key)[waiter]));
    FifoModel next = m;
    apply(next);
    check_fifo_state(next, sut.core);
  }
  void show(std::ostream& os) const override {
    os << "timeout(" << key << ", waiter #" << waiter << ")";
  }
};

// clear(): every waiter is rejected, in request order; holders keep their keys.
struct FifoClear : FifoCommand {
  void apply(FifoModel& m) const override {
    for (auto& [key, live] : m.keys) live.resize(1);
  }
  void run(const FifoModel& m, FifoSut& sut) const override {
    std::vector<keyed::FifoRejection> expected;
    for (const auto& [key, live] : m.keys) {
      for (size_t i = 1; i < live.size(); ++i) expected.push_back({.key = key, .id = live[i]});
    }
    std::sort(expected.begin(), expected.end(),
              [](const auto& a, const auto& b) { return a.id < b.id; });
    RC_ASSERT(sut.core.clear() == expected);
    FifoModel next = m;
    apply(next);
    check_fifo_state(next, sut.core);
  }
  void show(std::ostream& os) const override { os << "clear()"; }
};

}  // namespace

TEST_CASE("keyed-rw core matches its model over random command sequences",
          "[property][keyed][keyed-rw]") {
  int passed = 0;
  CHECK(check_at_least(
      "keyed-rw core vs model", kSequencesMin, [] { rw_state_machine<keyed::RwCore>(); }, &passed));
  CHECK(passed >= kSequencesMin);
}

TEST_CASE("the known-bad reader-preferring keyed-rw core is caught by the model",
          "[property][keyed][known-bad]") {
  // The property must fail for the calibration variant: readers pass a queued writer.
  CHECK_FALSE(check_at_least("bad-rw-reader-preference vs model", kSequencesMin,
                             [] { rw_state_machine<ReaderPreferenceRwCore>(); }));
}

TEST_CASE("fifo core matches its model over random command sequences", "[property][keyed][fifo]") {
  int passed = 0;
  CHECK(check_at_least(
      "fifo core vs model", kSequencesMin,
      [] {
        FifoSut sut;
        rc::state::check(FifoModel{}, sut,
                         rc::state::gen::execOneOfWithArgs<FifoRequest, FifoRequest, FifoRelease,
                                                           FifoTimeout, FifoClear>());
      },
      &passed));
  CHECK(passed >= kSequencesMin);
}

}  // namespace lockstep
