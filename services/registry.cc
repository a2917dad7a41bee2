#include "lockstep/registry.h"

#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "services/service.h"

namespace lockstep {

// Each service's one function (services/NAME/backend/NAME_service.h), declared from the list.
#define LOCKSTEP_SERVICE(name) Service name##_service();
#define LOCKSTEP_SERVICE_WITH_KNOWN_BAD(name) LOCKSTEP_SERVICE(name)
#include "services/services.inc"
#undef LOCKSTEP_SERVICE
#undef LOCKSTEP_SERVICE_WITH_KNOWN_BAD

const std::vector<Service>& services() {
  static const std::vector<Service> all = {
#define LOCKSTEP_SERVICE(name) name##_service(),
#define LOCKSTEP_SERVICE_WITH_KNOWN_BAD(name) LOCKSTEP_SERVICE(name)
#include "services/services.inc"
#undef LOCKSTEP_SERVICE
#undef LOCKSTEP_SERVICE_WITH_KNOWN_BAD
  };
  return all;
}

void prepare_services() {
  static const bool prepared = [] {
    for (const Service& service : services()) {
      if (service.at_start != nullptr) service.at_start();
    }
    return true;
  }();
  (void)prepared;
}

namespace {

std::vector<AdapterEntry>& registry() {
  static std::vector<AdapterEntry> entries = [] {
    std::vector<AdapterEntry> all;
    for (const Service& service : services()) {
      for (AdapterEntry& entry : service.adapters()) all.push_back(std::move(entry));
    }
    return all;
  }();
  return entries;
}

}  // namespace

const std::vector<AdapterEntry>& adapters() { return registry(); }

const AdapterEntry& production_adapter(const std::string& name) {
  const AdapterEntry* entry = find_adapter(name);
  if (entry == nullptr) {
    throw std::logic_error(fmt::format("no production adapter {} to copy", name));
  }
  return *entry;
}

const AdapterEntry* find_adapter(const std::string& name) {
  for (const AdapterEntry& entry : registry()) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

void register_adapter(AdapterEntry entry) {
  if (find_adapter(entry.name) != nullptr) {
    throw std::logic_error(fmt::format("adapter {} registered twice", entry.name));
  }
  registry().push_back(std::move(entry));
}

std::string adapter_names() {
  std::vector<std::string> names;
  for (const AdapterEntry& entry : registry()) names.push_back(entry.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace lockstep
