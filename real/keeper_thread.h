#pragma once
// KeeperThread: a thread that lives as long as its owner (a real-world backend) and runs jobs for
// callers, one at a time, each caller waiting for its own.
//
// Why: a server process dies with the thread that started it (PR_SET_PDEATHSIG), and faults run on
// the world's fault thread, which ends before the run does; so servers that a fault restarts must
// be started here. Invariants: at most one job is pending; run() returns when its job is done and
// rethrows what the job threw; the destructor finishes the current job and joins.
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace lockstep::real {

class KeeperThread {
 public:
  KeeperThread();
  ~KeeperThread();
  KeeperThread(const KeeperThread&) = delete;
  KeeperThread& operator=(const KeeperThread&) = delete;

  // Runs job on the keeper and returns when it is done, rethrowing what it threw.
  void run(std::function<void()> job);

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::function<void()> job_;
  std::exception_ptr failure_;
  bool stopping_ = false;
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace lockstep::real
