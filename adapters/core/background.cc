#include "adapters/core/background.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace lockstep {

namespace {

class ThreadTask final : public BackgroundTask, public StopWaiter {
 public:
  explicit ThreadTask(std::function<void(StopWaiter&)> body)
      : thread_([this, body = std::move(body)] { body(*this); }) {}
  ~ThreadTask() override {
    request_stop();
    join();
  }

  bool wait_for_us(int64_t duration_us) override {
    std::unique_lock lock(mutex_);
    return !stopped_.wait_for(lock, std::chrono::microseconds(std::max<int64_t>(duration_us, 0)),
                              [this] { return stop_requested_; });
  }
  bool stop_requested() const override {
    std::lock_guard lock(mutex_);
    return stop_requested_;
  }
  void request_stop() override {
    {
      std::lock_guard lock(mutex_);
      stop_requested_ = true;
    }
    stopped_.notify_all();
  }
  void join() override {
    if (thread_.joinable()) thread_.join();
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable stopped_;
  bool stop_requested_ = false;  // guarded by mutex_
  std::thread thread_;           // last: starts once the members it uses exist
};

class MutexGate final : public CallGate {
 public:
  void enter() override { mutex_.lock(); }
  void leave() override { mutex_.unlock(); }

 private:
  std::mutex mutex_;
};

}  // namespace

std::shared_ptr<CallGate> ThreadBackground::make_gate() { return std::make_shared<MutexGate>(); }

std::unique_ptr<BackgroundTask> ThreadBackground::start(std::string /*name*/,
                                                        std::function<void(StopWaiter&)> body) {
  return std::make_unique<ThreadTask>(std::move(body));
}

}  // namespace lockstep
