#include "real/process_registry.h"

#include <signal.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <mutex>

#include "base/check.h"

namespace lockstep::real {
namespace {

std::array<std::atomic<pid_t>, kMaxChildren> g_children{};

constexpr std::array<int, 2> kFatalSignals = {SIGINT, SIGTERM};
// The action each signal had before ours; the handler hands the signal on to it.
std::array<struct sigaction, kFatalSignals.size()> g_previous{};
std::mutex g_install_mutex;

void on_fatal_signal(int signal_number) {
  kill_registered_children();
  for (size_t i = 0; i < kFatalSignals.size(); ++i) {
    if (kFatalSignals[i] == signal_number) sigaction(signal_number, &g_previous[i], nullptr);
  }
  raise(signal_number);  // blocked until we return, then delivered to the previous action
}

void install_handlers() {
  const std::lock_guard lock(g_install_mutex);
  for (size_t i = 0; i < kFatalSignals.size(); ++i) {
    struct sigaction current {};
    sigaction(kFatalSignals[i], nullptr, &current);
    if (current.sa_handler == on_fatal_signal || current.sa_handler == SIG_IGN) continue;
    struct sigaction ours {};
    ours.sa_handler = on_fatal_signal;
    sigemptyset(&ours.sa_mask);
    g_previous[i] = current;
    sigaction(kFatalSignals[i], &ours, nullptr);
  }
  static std::once_flag at_exit_once;
  std::call_once(at_exit_once, [] { std::atexit(kill_registered_children); });
}

}  // namespace

void register_child(pid_t pid) {
  LOCKSTEP_CHECK(pid > 0, "a real child pid");
  install_handlers();
  for (auto& slot : g_children) {
    pid_t empty = 0;
    if (slot.compare_exchange_strong(empty, pid)) return;
  }
  LOCKSTEP_CHECK(false, "at most kMaxChildren child processes at once");
}

void unregister_child(pid_t pid) {
  for (auto& slot : g_children) {
    pid_t expected = pid;
    if (slot.compare_exchange_strong(expected, 0)) return;
  }
}

void kill_registered_children() {
  for (auto& slot : g_children) {
    const pid_t pid = slot.load();
    if (pid > 0) kill(pid, SIGKILL);
  }
}

size_t registered_child_count() {
  size_t count = 0;
  for (const auto& slot : g_children) count += slot.load() > 0 ? 1 : 0;
  return count;
}

}  // namespace lockstep::real
