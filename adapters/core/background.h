#pragma once
// ThreadBackground: the real world's Background (include/lockstep/background.h), a thread per task.
#include <functional>
#include <memory>
#include <string>

#include "lockstep/background.h"

namespace lockstep {

// Real: one std::thread per task; waits on a condition variable against steady_clock.
class ThreadBackground final : public Background {
 public:
  std::unique_ptr<BackgroundTask> start(std::string name,
                                        std::function<void(StopWaiter&)> body) override;
  std::shared_ptr<CallGate> make_gate() override;
};

}  // namespace lockstep
