#pragma once
// A lock service as the registry sees it: its production adapters and the few process-wide hooks
// it needs. Each service folder defines one function returning its Service
// (services/NAME/backend/NAME_service.h); services/services.inc lists the services, one line each,
// and that list is the only place outside a service's folder that names it.
#include <memory>
#include <string>
#include <vector>

#include "harness/backend.h"

namespace lockstep {

// What a service keeps warm while a KeepBackendsWarm lives (services/keep_warm.h): destroying it
// stops, by PID, whatever it kept.
class WarmScope {
 public:
  virtual ~WarmScope() = default;
};

struct Service {
  const char* name = "";
  // Its production adapters, in the order `list` shows them.
  std::vector<AdapterEntry> (*adapters)() = nullptr;
  // Before the command line runs anything: process-wide preparation (files a killed earlier
  // process left). May be null.
  void (*at_start)() = nullptr;
  // What to keep warm across the runs of one process (sweeps, the matrix). May be null.
  std::unique_ptr<WarmScope> (*keep_warm)() = nullptr;
};

// Every service this build has, in registry order.
const std::vector<Service>& services();
// Runs every service's at_start hook, once per process.
void prepare_services();
// The registered production adapter `name`, which a service's known-bad variants copy. Throws
// std::logic_error when there is none (a known-bad list naming a sibling that is not registered).
const AdapterEntry& production_adapter(const std::string& name);

}  // namespace lockstep
