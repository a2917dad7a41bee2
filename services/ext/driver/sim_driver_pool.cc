#include "services/ext/driver/sim_driver_pool.h"

#include <unistd.h>

#include <algorithm>
#include <deque>
#include <utility>

namespace lockstep::ext {

namespace {

struct PoolState {
  pid_t owner = 0;  // the process whose drivers `idle` holds
  int scopes = 0;
  uint64_t started = 0;
  std::deque<std::unique_ptr<SimDriverProcess>> idle;  // oldest first
};

PoolState& state() {
  static PoolState pool;
  if (pool.owner != ::getpid()) {  // a forked child: the idle drivers are its parent's
    for (auto& driver : pool.idle) driver->abandon();
    pool.idle.clear();
    pool.owner = ::getpid();
  }
  return pool;
}

bool same_command(const SimDriverOptions& a, const SimDriverOptions& b) {
  return a.program == b.program && a.args == b.args;
}

}  // namespace

SimDriverPool::Scope::Scope() { ++state().scopes; }

SimDriverPool::Scope::~Scope() {
  PoolState& pool = state();
  if (--pool.scopes == 0) pool.idle.clear();  // each destructor kills and reaps its driver
}

std::unique_ptr<SimDriverProcess> SimDriverPool::take(const SimDriverOptions& options) {
  PoolState& pool = state();
  auto match = std::find_if(pool.idle.begin(), pool.idle.end(), [&](const auto& driver) {
    return same_command(driver->options(), options);
  });
  if (match == pool.idle.end()) {
    ++pool.started;
    return std::make_unique<SimDriverProcess>(options);
  }
  std::unique_ptr<SimDriverProcess> driver = std::move(*match);
  pool.idle.erase(match);
  driver->rename(options.name);
  return driver;
}

void SimDriverPool::give_back(std::unique_ptr<SimDriverProcess> driver) {
  if (driver == nullptr) return;
  PoolState& pool = state();
  if (pool.scopes == 0 || !driver->reset()) return;  // killed and reaped as it goes
  pool.idle.push_back(std::move(driver));
  if (pool.idle.size() > kIdleDriversMax) pool.idle.pop_front();
}

size_t SimDriverPool::idle_count() { return state().idle.size(); }
uint64_t SimDriverPool::started_count() { return state().started; }

}  // namespace lockstep::ext
