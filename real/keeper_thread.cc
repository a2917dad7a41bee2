#include "real/keeper_thread.h"

namespace lockstep::real {

KeeperThread::KeeperThread() : thread_([this] { loop(); }) {}

KeeperThread::~KeeperThread() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void KeeperThread::run(std::function<void()> job) {
  std::unique_lock<std::mutex> lock(mutex_);
  wake_.wait(lock, [this] { return !job_; });  // one job at a time, whoever calls
  job_ = std::move(job);
  failure_ = nullptr;
  wake_.notify_all();
  wake_.wait(lock, [this] { return !job_; });
  if (failure_) std::rethrow_exception(failure_);
}

void KeeperThread::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || job_; });
    if (stopping_) return;
    try {
      job_();
    } catch (...) {
      failure_ = std::current_exception();
    }
    job_ = nullptr;
    wake_.notify_all();
  }
}

}  // namespace lockstep::real
