#include "harness/recorder.h"

#include <iterator>
#include <mutex>
#include <string>
#include <thread>

#include "base/check.h"

namespace lockstep {
namespace {

// Each enum's values fit the byte EventLine packs it in.
static_assert(kEventKindsAll.size() <= 256 && kOpsAll.size() <= 256 && kOutcomesAll.size() <= 256 &&
              kFaultKindsAll.size() <= 256);

// An event's trace line: its record is the event's fields (all but those History::add sets), its
// text describe()'s.
class EventLine final : public sim::TraceLine {
 public:
  explicit EventLine(const HistoryEvent& e) : e_(e) {}

  void hash_into(sim::TraceHasher& hasher) const override {
    // Most numbers and strings of most events are zero or empty: bits say which are not, and
    // only those follow, in this order, so the record still reads one way.
    const uint64_t numbers[] = {e_.token,
                                static_cast<uint64_t>(e_.ttl_us),
                                static_cast<uint64_t>(e_.counter),
                                static_cast<uint64_t>(e_.end_us),
                                static_cast<uint64_t>(e_.amount),
                                static_cast<uint64_t>(e_.local_now_us),
                                static_cast<uint64_t>(e_.local_valid_until_us),
                                static_cast<uint64_t>(e_.lease_since_us)};
    const std::string* texts[] = {&e_.key, &e_.server, &e_.value, &e_.detail};
    uint64_t present = 0;
    for (size_t i = 0; i < std::size(numbers); ++i) present |= uint64_t{numbers[i] != 0} << i;
    for (size_t i = 0; i < std::size(texts); ++i)
      present |= uint64_t{!texts[i]->empty()} << (8 + i);
    // The small fields and those bits packed into one word, each in its own bits.
    hasher.word(static_cast<uint64_t>(e_.kind) | static_cast<uint64_t>(e_.op) << 8 |
                static_cast<uint64_t>(e_.outcome) << 16 | static_cast<uint64_t>(e_.fault) << 24 |
                static_cast<uint64_t>(e_.has_token) << 32 | static_cast<uint64_t>(e_.shared) << 33 |
                static_cast<uint64_t>(e_.kills_client) << 34 | present << 40);
    hasher.word(static_cast<uint64_t>(static_cast<int64_t>(e_.client)));
    for (const uint64_t number : numbers) {
      if (number != 0) hasher.word(number);
    }
    for (const std::string* text : texts) {
      if (!text->empty()) hasher.bytes(*text);
    }
  }
  void write_text(fmt::memory_buffer& out) const override { out.append(describe(e_)); }

 private:
  const HistoryEvent& e_;
};

}  // namespace

size_t Recorder::record(HistoryEvent e) {
  // A simulated run's lock was ~1.4% of a seed, for a thread that is always the same one.
  std::unique_lock<std::mutex> guard(mutex_, std::defer_lock);
  if (hooks_.one_thread) {
    LOCKSTEP_CHECK(std::this_thread::get_id() == owner_,
                   "a one-thread recorder (a simulated run's) got an event from another thread");
  } else {
    guard.lock();
  }
  if (closed_ || full_) return static_cast<size_t>(-1);
  if (history_.size() >= hooks_.events_max) {
    full_ = true;
    if (hooks_.on_full) hooks_.on_full();
    return static_cast<size_t>(-1);
  }
  e.time_us = hooks_.now_us();
  e.trace_line = hooks_.trace_line(EventLine(e));
  const size_t index = history_.add(std::move(e));
  if (watcher_) {
    const HistoryEvent recorded = history_[index];  // the watcher may record: no reference kept
    watcher_(recorded);
  }
  return index;
}

void Recorder::watch(std::function<void(const HistoryEvent&)> watcher) {
  LOCKSTEP_CHECK(hooks_.one_thread, "only a simulated run's history is watched");
  LOCKSTEP_CHECK(!watcher_, "one watcher per run");
  watcher_ = std::move(watcher);
}

void Recorder::on_grant(std::string_view server, std::string_view key, std::string_view value,
                        int64_t ttl_us, uint64_t fencing_token) {
  record({.kind = EventKind::grant,
          .client = hooks_.current_client(),
          .key = std::string(key),
          .has_token = true,
          .token = fencing_token,
          .server = std::string(server),
          .value = std::string(value),
          .ttl_us = ttl_us});
}

void Recorder::on_extend(std::string_view server, std::string_view key, std::string_view value,
                         int64_t ttl_us) {
  record({.kind = EventKind::extend,
          .client = hooks_.current_client(),
          .key = std::string(key),
          .server = std::string(server),
          .value = std::string(value),
          .ttl_us = ttl_us});
}

void Recorder::on_revoke(std::string_view server, std::string_view key, std::string_view value,
                         RevokeCause cause) {
  record({.kind = EventKind::revoke,
          .client = hooks_.current_client(),
          .key = std::string(key),
          .server = std::string(server),
          .value = std::string(value),
          .detail = cause == RevokeCause::release ? "release" : "overwrite"});
}

}  // namespace lockstep
