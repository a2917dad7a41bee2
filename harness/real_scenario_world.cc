#include "harness/real_scenario_world.h"

#include <algorithm>
#include <chrono>
#include <system_error>
#include <thread>

#include <fmt/format.h>

namespace lockstep {

namespace {

thread_local int current_node_id = -1;

// Thrown through a client's code when one of its sleeps reaches the run's bound: it ends the
// client as a crash would (adapters unwind it like ClientKilled), and the run as an error.
struct RunBoundReached {};

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

// The machine's clock, whose sleeps end at the run's bound.
class RealScenarioWorld::BoundedClock final : public Clock {
 public:
  BoundedClock(RealScenarioWorld& world, int64_t skew_us) : world_(world), system_(skew_us) {}
  int64_t now_us() override { return system_.now_us(); }
  int64_t monotonic_us() override { return system_.monotonic_us(); }
  void sleep_for_us(int64_t duration_us) override {
    if (!world_.sleep_within_bound(duration_us)) throw RunBoundReached{};
  }

 private:
  RealScenarioWorld& world_;
  SystemClock system_;
};

bool RealScenarioWorld::sleep_within_bound(TimeUs duration_us) {
  if (duration_us <= 0) return now_us() <= options_.run_time_max_us;
  const TimeUs left_us = options_.run_time_max_us - now_us();
  if (left_us <= 0) return false;
  std::this_thread::sleep_for(std::chrono::microseconds(std::min(duration_us, left_us)));
  return duration_us <= left_us;
}

RealScenarioWorld::RealScenarioWorld(RealWorldOptions options)
    : options_(options), prng_(options.seed) {}

RealScenarioWorld::~RealScenarioWorld() = default;

TimeUs RealScenarioWorld::now_us() {
  return origin_ns_ == 0 ? 0 : (steady_ns() - origin_ns_) / 1000;
}

size_t RealScenarioWorld::add_trace_line(const sim::TraceLine& line) {
  std::lock_guard<std::mutex> guard(mutex_);
  return trace_.add(now_us(), line);
}

int RealScenarioWorld::add_client_node(const std::string& name, int64_t clock_offset_us,
                                       int64_t drift_ppm) {
  if (drift_ppm != 0)
    throw WorldUnsupported("the real world cannot make a client clock drift; use --world sim");
  nodes_.push_back({.name = name, .clock = std::make_unique<BoundedClock>(*this, clock_offset_us)});
  return static_cast<int>(nodes_.size()) - 1;
}

Clock& RealScenarioWorld::clock(int node) { return *nodes_.at(static_cast<size_t>(node)).clock; }

// Every real client reads the machine's one monotonic clock, which true time is measured on too.
TimeUs RealScenarioWorld::true_time_at_monotonic(int node, int64_t monotonic_us) {
  return now_us() + (monotonic_us - clock(node).monotonic_us());
}

int64_t RealScenarioWorld::draw_between(int64_t lo, int64_t hi) {
  std::lock_guard<std::mutex> guard(mutex_);
  return prng_.between(lo, hi);
}

uint64_t RealScenarioWorld::draw_u64() {
  std::lock_guard<std::mutex> guard(mutex_);
  return prng_.next_u64();
}

void RealScenarioWorld::spawn(int node, const std::string& name, std::function<void()> body,
                              TimeUs start_us) {
  processes_.push_back({.node = node, .name = name, .body = std::move(body), .start_us = start_us});
}

void RealScenarioWorld::at(TimeUs t_us, std::function<void()> fn) {
  faults_.emplace(t_us, std::move(fn));
}

void RealScenarioWorld::pause(int node, TimeUs duration_us) {
  if (current_node() != node) {
    throw WorldUnsupported(
        "the real world cannot stop another client's thread from outside; use --world sim");
  }
  auto [first, last] = client_processes_.equal_range(node);
  for (auto it = first; it != last; ++it) it->second.stop();
  const bool within = sleep_within_bound(duration_us);  // this client stops; others run
  for (auto it = first; it != last; ++it) it->second.resume();
  if (!within) throw RunBoundReached{};
}

void RealScenarioWorld::attach_client_process(int node, ClientProcessHooks hooks) {
  client_processes_.emplace(node, std::move(hooks));
}

void RealScenarioWorld::crash(int node) {
  if (current_node() != node) {
    throw WorldUnsupported(
        "the real world cannot kill another client's thread from outside; use --world sim");
  }
  auto [first, last] = client_processes_.equal_range(node);
  for (auto it = first; it != last; ++it) it->second.kill();
  throw ClientKilled{};
}

int RealScenarioWorld::current_node() { return current_node_id; }

void RealScenarioWorld::sleep_until(TimeUs t_us) {
  if (!sleep_within_bound(t_us - now_us())) throw RunBoundReached{};
}

void RealScenarioWorld::fail(const std::string& message) {
  std::lock_guard<std::mutex> guard(mutex_);
  if (failure_.empty()) failure_ = message;
}

void RealScenarioWorld::run_process(const Process& process) {
  current_node_id = process.node;
  try {
    sleep_until(process.start_us);  // the scripted start time: a schedule, not synchronisation
    process.body();
  } catch (const ClientKilled&) {
    trace_linef("client {} killed", process.name);
  } catch (const RunBoundReached&) {
    trace_linef("client {} stopped at the run's bound", process.name);
    fail(fmt::format("the run reached its bound of {}s of wall time (a real-world run is bounded)",
                     options_.run_time_max_us / 1'000'000));
  } catch (const ClientProtocolBroken& e) {
    // Its message is the run's, whatever failed before: the run is judged by nothing else.
    std::lock_guard<std::mutex> guard(mutex_);
    if (!protocol_broken_) failure_ = fmt::format("client {} failed: {}", process.name, e.what());
    protocol_broken_ = true;
  } catch (const std::exception& e) {
    fail(fmt::format("client {} failed: {}", process.name, e.what()));
  }
  current_node_id = -1;
}

void RealScenarioWorld::run_faults() {
  for (auto& [t_us, fn] : faults_) {
    if (!sleep_within_bound(t_us - now_us())) return;  // the run is over: no more faults
    try {
      fn();
    } catch (const std::exception& e) {
      fail(fmt::format("fault at {}us failed: {}", t_us, e.what()));
    }
  }
}

RealRunResult RealScenarioWorld::run() {
  origin_ns_ = steady_ns();
  std::vector<std::thread> threads;
  threads.reserve(processes_.size() + 1);
  // A thread that cannot be started (out of memory for its stack) fails the run; the ones
  // already running are joined all the same (a joinable thread destroyed is std::terminate).
  try {
    threads.emplace_back([this] { run_faults(); });
    for (const Process& process : processes_)
      threads.emplace_back([this, &process] { run_process(process); });
  } catch (const std::system_error& e) {
    fail(fmt::format("could not start the thread of client {} of {}: {}", threads.size(),
                     processes_.size(), e.what()));
  }
  // Every client's waits are bounded (command timeouts, retry limits), so every thread ends.
  for (std::thread& thread : threads) thread.join();
  RealRunResult result{.time_us = now_us()};
  std::lock_guard<std::mutex> guard(mutex_);
  result.protocol_broken = protocol_broken_;
  if (!failure_.empty()) {
    result.complete = false;
    result.message = failure_;
  } else if (result.time_us > options_.run_time_max_us) {
    result.complete = false;
    result.message = fmt::format("the run took {}us, more than its bound of {}us", result.time_us,
                                 options_.run_time_max_us);
  }
  return result;
}

}  // namespace lockstep
