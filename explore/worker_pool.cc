#include "explore/worker_pool.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>
#include <new>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "base/check.h"
#include "harness/usage_error.h"
#include "real/server_errors.h"

namespace lockstep {

namespace {

// One result on a worker's pipe: index, status ('R' a result, else work() threw: the kind of
// exception, below), length, bytes.
struct RecordHeader {
  uint64_t index = 0;
  char status = 'R';
  uint64_t length = 0;
};
constexpr size_t kHeaderBytes = sizeof(uint64_t) + 1 + sizeof(uint64_t);

// An exception crosses the pipe as its kind and message, and is thrown again in the parent as
// that kind: bad usage found by a worker (an option a cell's backend refuses), a missing
// environment, an unwritable output or a failed allocation are the same exit code with --jobs 1
// and --jobs N. Kinds the command line tells apart, most derived first; 'E' is any other (an
// internal error).
char error_status(const std::exception& e) {
  if (dynamic_cast<const WorldUnsupportedError*>(&e) != nullptr) return 'W';
  if (dynamic_cast<const UsageError*>(&e) != nullptr) return 'U';
  if (dynamic_cast<const OutputError*>(&e) != nullptr) return 'O';
  if (dynamic_cast<const real::ServerUnavailable*>(&e) != nullptr) return 'N';
  if (dynamic_cast<const real::ServerStartError*>(&e) != nullptr) return 'S';
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) return 'M';
  return 'E';
}

[[noreturn]] void rethrow(size_t index, char status, const std::string& message) {
  switch (status) {
    case 'W': throw WorldUnsupportedError(message);
    case 'U': throw UsageError(message);
    case 'O': throw OutputError(message);
    case 'N': throw real::ServerUnavailable(message);
    case 'S': throw real::ServerStartError(message);
    case 'M': throw std::bad_alloc();
    default: throw std::runtime_error(fmt::format("item {}: {}", index, message));
  }
}

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

void append_record(std::string& out, uint64_t index, char status, const std::string& body) {
  char header[kHeaderBytes];
  const uint64_t length = body.size();
  std::memcpy(header, &index, sizeof index);
  header[sizeof index] = status;
  std::memcpy(header + sizeof index + 1, &length, sizeof length);
  out.append(header, kHeaderBytes).append(body);
}

// A worker sends the results of quick items in batches: a write per result woke the parent per
// result, and on a machine with no core to spare each wakeup preempted a worker (--jobs 2 of redis
// seeds on two cores took 1.45 times the CPU of --jobs 1, and 1.2 times less wall time instead of
// 2). A batch leaves when it holds kBatchRecordsMax results or kBatchBytesMax bytes, when
// kBatchWait passed since its first result, at the end, after an error, and at once after an item
// that took kItemSlow or more (beside a slow item a wakeup costs nothing). So the result of a
// quick item may wait for the worker's next item to finish: the parent takes results, and shows
// progress, at most one item per worker late; what it takes is the same.
constexpr size_t kBatchRecordsMax = 64;
constexpr size_t kBatchBytesMax = 32 * 1024;
constexpr auto kBatchWait = std::chrono::milliseconds(50);
constexpr auto kItemSlow = std::chrono::milliseconds(5);

[[noreturn]] void worker_main(int fd, size_t first, size_t count, int jobs,
                              const std::function<std::string(size_t)>& work) {
  using Clock = std::chrono::steady_clock;
  std::signal(SIGPIPE, SIG_IGN);  // a parent that stopped reading: write fails, we leave
  std::string batch;
  size_t batched = 0;
  Clock::time_point batch_started;
  for (size_t i = first; i < count; i += static_cast<size_t>(jobs)) {
    const Clock::time_point item_started = Clock::now();
    std::string body;
    char status = 'R';
    try {
      body = work(i);
    } catch (const std::exception& e) {
      body = e.what();
      status = error_status(e);
    }
    const Clock::time_point now = Clock::now();
    if (batched == 0) batch_started = now;
    append_record(batch, i, status, body);
    ++batched;
    const bool last = status != 'R' || i + static_cast<size_t>(jobs) >= count;
    if (last || batched >= kBatchRecordsMax || batch.size() >= kBatchBytesMax ||
        now - item_started >= kItemSlow || now - batch_started >= kBatchWait) {
      if (!write_all(fd, batch.data(), batch.size()) || status != 'R') ::_exit(0);
      batch.clear();
      batched = 0;
    }
  }
  ::_exit(0);
}

// The forked workers, owned by PID: killed and reaped whatever way the pool is left.
class Workers {
 public:
  Workers() = default;
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;
  ~Workers() {
    for (pid_t pid : pids_) ::kill(pid, SIGKILL);
    for (int fd : fds_) {
      if (fd >= 0) ::close(fd);
    }
    for (pid_t pid : pids_) {
      while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
  }

  void start(size_t count, int jobs, const std::function<std::string(size_t)>& work) {
    std::fflush(stdout);  // nothing buffered is written twice
    std::fflush(stderr);
    const pid_t parent = ::getpid();
    for (int w = 0; w < jobs; ++w) {
      int ends[2];
      if (::pipe2(ends, O_CLOEXEC) != 0)
        throw std::runtime_error(fmt::format("worker pool: pipe: {}", std::strerror(errno)));
      const pid_t pid = ::fork();
      if (pid < 0) {
        ::close(ends[0]);
        ::close(ends[1]);
        throw std::runtime_error(fmt::format("worker pool: fork: {}", std::strerror(errno)));
      }
      if (pid == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) ::_exit(1);
        for (int fd : fds_) ::close(fd);  // the earlier workers' pipes are the parent's
        ::close(ends[0]);
        worker_main(ends[1], static_cast<size_t>(w), count, jobs, work);
      }
      ::close(ends[1]);
      pids_.push_back(pid);
      fds_.push_back(ends[0]);
    }
  }

  std::vector<int>& fds() { return fds_; }

 private:
  std::vector<pid_t> pids_;
  std::vector<int> fds_;  // read ends, by worker; -1 once at end of file
};

struct Received {
  char status = 'R';
  std::string body;
};

// Parses every whole record in `buffer` into `out`, leaving a partial one for later.
void parse_records(std::string& buffer, std::map<size_t, Received>& out, size_t& next_of_worker,
                   bool& errored, int jobs) {
  size_t at = 0;
  while (buffer.size() - at >= kHeaderBytes) {
    RecordHeader h;
    std::memcpy(&h.index, buffer.data() + at, sizeof h.index);
    h.status = buffer[at + sizeof h.index];
    std::memcpy(&h.length, buffer.data() + at + sizeof h.index + 1, sizeof h.length);
    if (buffer.size() - at - kHeaderBytes < h.length) break;
    LOCKSTEP_CHECK(h.index == next_of_worker, "a worker sends its indices in order");
    out[h.index] = {h.status, buffer.substr(at + kHeaderBytes, h.length)};
    errored = errored || h.status != 'R';
    next_of_worker += static_cast<size_t>(jobs);
    at += kHeaderBytes + h.length;
  }
  buffer.erase(0, at);
}

void run_in_workers(size_t count, int jobs, const std::function<std::string(size_t)>& work,
                    const std::function<bool(size_t, const std::string&)>& take,
                    const std::function<bool()>& stop) {
  Workers workers;
  workers.start(count, jobs, work);
  std::vector<std::string> buffers(static_cast<size_t>(jobs));
  std::vector<size_t> next_of(static_cast<size_t>(jobs));       // the index each worker sends next
  std::vector<bool> errored(static_cast<size_t>(jobs), false);  // it sent an 'E' and stopped
  for (int w = 0; w < jobs; ++w) next_of[static_cast<size_t>(w)] = static_cast<size_t>(w);
  std::map<size_t, Received> ready;
  size_t next = 0;
  while (next < count) {
    if (stop && stop()) return;
    if (auto it = ready.find(next); it != ready.end()) {
      if (it->second.status != 'R') rethrow(next, it->second.status, it->second.body);
      const bool go_on = take(next, it->second.body);
      ready.erase(it);
      ++next;
      if (!go_on) return;
      continue;
    }
    std::vector<pollfd> polled;
    std::vector<size_t> owner;
    for (size_t w = 0; w < workers.fds().size(); ++w) {
      if (workers.fds()[w] < 0 || next_of[w] > next + kLookaheadMax) continue;
      polled.push_back({.fd = workers.fds()[w], .events = POLLIN, .revents = 0});
      owner.push_back(w);
    }
    LOCKSTEP_CHECK(!polled.empty(), "the worker of the next index is always read");
    if (::poll(polled.data(), polled.size(), stop ? kStopPollMs : -1) < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(fmt::format("worker pool: poll: {}", std::strerror(errno)));
    }
    // A signal that stops the pool may have reached the workers too: what they send or how they end
    // from here on is not a result.
    if (stop && stop()) return;
    for (size_t p = 0; p < polled.size(); ++p) {
      if (polled[p].revents == 0) continue;
      const size_t w = owner[p];
      char chunk[65536];
      const ssize_t n = ::read(polled[p].fd, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n > 0) {
        buffers[w].append(chunk, static_cast<size_t>(n));
        bool failed = errored[w];
        parse_records(buffers[w], ready, next_of[w], failed, jobs);
        errored[w] = failed;
        continue;
      }
      ::close(workers.fds()[w]);
      workers.fds()[w] = -1;
      // Done, or stopped after reporting a work() that threw (thrown when its turn comes).
      if (next_of[w] < count && !errored[w]) {
        throw std::runtime_error(
            fmt::format("worker pool: the worker for item {} died before answering", next_of[w]));
      }
    }
  }
}

}  // namespace

void run_in_order(size_t count, int jobs, const std::function<std::string(size_t index)>& work,
                  const std::function<bool(size_t index, const std::string& result)>& take,
                  const std::function<bool()>& stop) {
  LOCKSTEP_CHECK(jobs >= 1 && jobs <= kJobsMax, "jobs is in [1, kJobsMax]");
  const int workers = static_cast<int>(std::min<size_t>(static_cast<size_t>(jobs), count));
  if (workers <= 1) {
    for (size_t i = 0; i < count; ++i) {
      if (stop && stop()) return;
      std::string result = work(i);
      if (stop && stop()) return;
      if (!take(i, result)) return;
    }
    return;
  }
  run_in_workers(count, workers, work, take, stop);
}

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return std::clamp(CPU_COUNT(&set), 1, kJobsMax);
}

}  // namespace lockstep
