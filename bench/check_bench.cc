// BM_Check_*: how fast the checkers judge a history, in history events per second.
//
// The history is synthetic but shaped like a clean run of the memory adapter: many clients take
// many keys one holder at a time (invoke, grant, acquire ok, enter, read, write, exit, release,
// revoke, release ok), sometimes with a contended attempt by another client during the hold, all
// keys interleaved in true time. Every checker runs over it and finds nothing, the common case.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "checkers/checkers.h"
#include "history/history.h"

namespace lockstep {
namespace {

constexpr int kClients = 256;
constexpr int kKeys = 1024;
constexpr TimeUs kLeaseTtlUs = 10'000'000;
constexpr TimeUs kLivenessBoundUs = 1'000'000;

// splitmix64: small, fast, and the same sequence everywhere (no std:: distributions).
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // In [lo, hi]; the modulo bias is irrelevant here.
  int64_t between(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1));
  }

 private:
  uint64_t state_;
};

struct KeyState {
  TimeUs free_at_us = 0;  // the previous lease's revoke
  uint64_t token = 0;
  int64_t counter = 0;
};

// Builds events out of time order (holds on different keys overlap); sorted before use.
class HoldGenerator {
 public:
  explicit HoldGenerator(uint64_t seed) : rng_(seed), keys_(kKeys) {}

  size_t size() const { return events_.size(); }
  std::vector<HistoryEvent> take() { return std::move(events_); }

  // One holder takes one key, works, and releases: 10 events, 12 with a contended attempt.
  void hold() {
    const int k = static_cast<int>(rng_.between(0, kKeys - 1));
    const int client = static_cast<int>(rng_.between(0, kClients - 1));
    KeyState& key = keys_[static_cast<size_t>(k)];
    const std::string name = fmt::format("key-{}", k);
    const std::string value = fmt::format("{:06x}{:06x}", holds_++, rng_.next() & 0xffffff);
    const uint64_t token = ++key.token;
    TimeUs t = key.free_at_us + rng_.between(0, 2000);
    add(t, EventKind::invoke, client, name, Op::acquire);
    t += rng_.between(50, 300);
    add_lease(t, EventKind::grant, client, name, value, token);
    t += rng_.between(50, 300);
    add(t, EventKind::complete, client, name, Op::acquire, Outcome::ok, token);
    add(t, EventKind::cs_enter, client, name);
    if (rng_.next() % 4 == 0) contended_attempt(t, client, name);
    t += rng_.between(1000, 2000);
    add(t, EventKind::access, client, name, Op::read, Outcome::ok, token, key.counter);
    t += rng_.between(100, 1000);
    add(t, EventKind::access, client, name, Op::write, Outcome::ok, token, ++key.counter);
    t += rng_.between(100, 1000);
    add(t, EventKind::cs_exit, client, name);
    add(t, EventKind::invoke, client, name, Op::release);
    t += rng_.between(50, 300);
    add_lease(t, EventKind::revoke, client, name, value, 0);
    key.free_at_us = t;
    t += rng_.between(50, 300);
    add(t, EventKind::complete, client, name, Op::release, Outcome::ok);
  }

 private:
  // Another client asks while the key is held and is told so quickly.
  void contended_attempt(TimeUs held_from_us, int holder, const std::string& name) {
    const int other = (holder + 1 + static_cast<int>(rng_.between(0, kClients - 2))) % kClients;
    const TimeUs t = held_from_us + rng_.between(1, 500);
    add(t, EventKind::invoke, other, name, Op::acquire);
    add(t + rng_.between(50, 400), EventKind::complete, other, name, Op::acquire,
        Outcome::contended);
  }

  void add(TimeUs t, EventKind kind, int client, const std::string& key, Op op = Op::none,
           Outcome outcome = Outcome::none, uint64_t token = 0, int64_t counter = 0) {
    HistoryEvent e;
    e.index = events_.size();  // generation order breaks ties in time
    e.time_us = t;
    e.kind = kind;
    e.client = client;
    e.key = key;
    e.op = op;
    e.outcome = outcome;
    e.has_token = token != 0;
    e.token = token;
    e.counter = counter;
    events_.push_back(std::move(e));
  }

  void add_lease(TimeUs t, EventKind kind, int client, const std::string& key,
                 const std::string& value, uint64_t token) {
    add(t, kind, client, key, Op::none, Outcome::none, token);
    events_.back().server = "memory";
    events_.back().value = value;
    events_.back().ttl_us = kind == EventKind::grant ? kLeaseTtlUs : 0;
  }

  SplitMix64 rng_;
  std::vector<KeyState> keys_;
  std::vector<HistoryEvent> events_;
  uint64_t holds_ = 0;
};

// Every key's final counter: the accepted writes that survived truncation, a prefix per key.
void add_final_values(History& history, TimeUs at_us) {
  std::map<std::string, int64_t> writes;
  for (int k = 0; k < kKeys; ++k) writes[fmt::format("key-{}", k)] = 0;
  for (const HistoryEvent& e : history.events()) {
    if (e.kind == EventKind::access && e.op == Op::write) ++writes[e.key];
  }
  for (const auto& [key, count] : writes) {
    HistoryEvent e;
    e.time_us = at_us;
    e.kind = EventKind::final_value;
    e.key = key;
    e.counter = count;
    history.add(std::move(e));
  }
}

std::unique_ptr<History> make_history(size_t events_total) {
  const size_t hold_events = events_total - static_cast<size_t>(kKeys);
  HoldGenerator generator(0x10c5'7e90);
  while (generator.size() < hold_events) generator.hold();
  std::vector<HistoryEvent> events = generator.take();
  std::sort(events.begin(), events.end(), [](const HistoryEvent& a, const HistoryEvent& b) {
    return a.time_us != b.time_us ? a.time_us < b.time_us : a.index < b.index;
  });
  events.resize(hold_events);  // the tail of the run: some holds cut short, as at any end
  auto history = std::make_unique<History>();
  history->reserve(events_total);
  for (HistoryEvent& e : events) history->add(std::move(e));
  const TimeUs end_us = history->events().back().time_us + 1;
  add_final_values(*history, end_us);
  history->meta = HistoryMeta{.clients = kClients,
                              .servers = 1,
                              .quorum = 1,
                              .fencing_on = true,
                              .monotonic_tokens = true,
                              .end_us = end_us,
                              .heal_us = 0,
                              .liveness_bound_us = kLivenessBoundUs};
  return history;
}

// Built once per size, outside any timed loop.
const History& synthetic_history(size_t events_total) {
  static std::map<size_t, std::unique_ptr<History>> cache;
  auto [it, inserted] = cache.try_emplace(events_total);
  if (inserted) it->second = make_history(events_total);
  return *it->second;
}

template <typename Check>
void run_checker(benchmark::State& state, Check check) {
  const History& history = synthetic_history(static_cast<size_t>(state.range(0)));
  // The generator makes a clean run; a violation means the generator or a checker is wrong.
  if (!check(history, CheckOptions{}).empty()) {
    state.SkipWithError("the synthetic history has violations");
    return;
  }
  for (auto _ : state) {
    std::vector<Violation> found = check(history, CheckOptions{});
    benchmark::DoNotOptimize(found.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(history.size()));
  state.counters["events"] = static_cast<double>(history.size());
}

void BM_Check_All(benchmark::State& state) { run_checker(state, check_all); }
void BM_Check_MutualExclusion(benchmark::State& state) {
  run_checker(state, check_mutual_exclusion);
}

BENCHMARK(BM_Check_All)->Arg(1'000'000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Check_MutualExclusion)->Arg(1'000'000)->Unit(benchmark::kMillisecond);

// BM_Check_One/INVARIANT: each checker alone over the same history, so BM_Check_All's time can be
// told apart. Their sum is more than BM_Check_All: alone, each walks the million events itself;
// check_all's checkers share one walk.
[[maybe_unused]] const bool registered_each = [] {
  using Checker = std::vector<Violation> (*)(const History&, const CheckOptions&);
  const std::pair<Invariant, Checker> kEach[] = {
      {Invariant::mutual_exclusion, check_mutual_exclusion},
      {Invariant::lease_exclusion, check_lease_exclusion},
      {Invariant::ownership, check_ownership},
      {Invariant::fencing, check_fencing},
      {Invariant::no_lost_update, check_no_lost_update},
      {Invariant::liveness, check_liveness},
      {Invariant::fifo, check_fifo},
      {Invariant::writer_preference, check_writer_preference},
      {Invariant::no_leak, check_no_leak},
      {Invariant::valid_on_return, check_valid_on_return}};
  static_assert(std::size(kEach) == 10, "one case per Invariant");
  for (const auto& [invariant, checker] : kEach) {
    benchmark::RegisterBenchmark(
        fmt::format("BM_Check_One/{}", to_string(invariant)).c_str(),
        [checker = checker](benchmark::State& state) { run_checker(state, checker); })
        ->Arg(1'000'000)
        ->Unit(benchmark::kMillisecond);
  }
  return true;
}();

}  // namespace
}  // namespace lockstep
