#include "services/keep_warm.h"

#include <vector>

#include "services/service.h"

namespace lockstep {

struct KeepBackendsWarm::Kept {
  std::vector<std::unique_ptr<WarmScope>> scopes;
};

KeepBackendsWarm::KeepBackendsWarm() : kept_(std::make_unique<Kept>()) {
  for (const Service& service : services()) {
    if (service.keep_warm != nullptr) kept_->scopes.push_back(service.keep_warm());
  }
}

KeepBackendsWarm::~KeepBackendsWarm() = default;

}  // namespace lockstep
