#include "cli/interrupt.h"

#include <time.h>

#include <atomic>
#include <string_view>

#include <fmt/format.h>

#include "base/check.h"
#include "harness/usage_error.h"
#include "lockstep/options.h"

namespace lockstep {

namespace {

volatile std::sig_atomic_t g_caught = 0;
volatile std::sig_atomic_t g_active = 0;
// When the first signal came (CLOCK_MONOTONIC, ns). Lock-free, so a handler may touch it.
std::atomic<int64_t> g_first_ns{0};
static_assert(std::atomic<int64_t>::is_always_lock_free);

// A repeat within this long is the same request: GNU timeout sends its signal to the command and
// then to the command's whole process group, so the command gets it twice at once.
constexpr int64_t kRepeatWindowNs = 1'000'000'000;

int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);  // async-signal-safe
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

void on_interrupt(int signal_number) {
  if (g_active != 0 && g_caught == 0) {
    g_caught = signal_number;
    g_first_ns.store(monotonic_ns());
    return;
  }
  // The same request, also once the watch has ended: the command may have finished and dropped
  // its watch before timeout's signal to the process group arrives.
  if (g_caught != 0 && monotonic_ns() - g_first_ns.load() < kRepeatWindowNs) return;
  // No watch and nothing caught, or a second request: end as the default action would. The
  // signal is blocked while this handler runs, so it is delivered when the handler returns.
  std::signal(signal_number, SIG_DFL);
  std::raise(signal_number);
}

void restore_if_ours(int signal_number, const struct sigaction& previous) {
  struct sigaction current {};
  sigaction(signal_number, nullptr, &current);
  if (current.sa_handler == on_interrupt) sigaction(signal_number, &previous, nullptr);
}

}  // namespace

InterruptWatch::InterruptWatch() {
  LOCKSTEP_CHECK(g_active == 0, "one InterruptWatch at a time");
  g_caught = 0;
  g_active = 1;
  struct sigaction ours {};
  ours.sa_handler = on_interrupt;
  sigemptyset(&ours.sa_mask);
  sigaction(SIGINT, &ours, &previous_int_);
  sigaction(SIGTERM, &ours, &previous_term_);
}

InterruptWatch::~InterruptWatch() {
  g_active = 0;
  // Once a signal was caught, the handler stays to take its repeat (and end the process on a
  // later one); the command is ending anyway.
  if (g_caught != 0) return;
  restore_if_ours(SIGINT, previous_int_);
  restore_if_ours(SIGTERM, previous_term_);
}

int InterruptWatch::caught() { return g_caught; }

int interrupted_exit_code(int signal_number) { return 128 + signal_number; }

int64_t parse_duration_us(const std::string& flag, const std::string& text) {
  constexpr int64_t kMaxUs = int64_t{7} * 24 * 3600 * 1'000'000;
  const std::string_view view(text);
  const size_t digits = view.find_first_not_of("0123456789");
  const std::string_view unit = digits == std::string_view::npos ? "" : view.substr(digits);
  const std::optional<uint64_t> count = parse_decimal_unsigned(view.substr(0, digits));
  int64_t scale = 0;
  if (unit.empty() || unit == "s") scale = 1'000'000;
  if (unit == "ms") scale = 1'000;
  if (unit == "m") scale = 60'000'000;
  if (unit == "h") scale = 3'600'000'000;
  if (!count || scale == 0 || *count == 0 || *count > static_cast<uint64_t>(kMaxUs / scale)) {
    throw UsageError(fmt::format(
        "{} {}: must be a duration: a decimal count greater than 0 with a unit, ms, s, m or h "
        "(e.g. 30s, 5m, 1h; plain digits are seconds), at most 7 days",
        flag, quote_value(text)));
  }
  return static_cast<int64_t>(*count) * scale;
}

}  // namespace lockstep
