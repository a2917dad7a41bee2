#include "lockstep/registry.h"

#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "services/etcd/backend/etcd_service.h"
#include "services/ext/backend/ext_service.h"
#include "services/keyed/backend/keyed_service.h"
#include "services/memory/backend/memory_service.h"
#include "services/mongo/backend/mongo_service.h"
#include "services/postgres/backend/postgres_service.h"
#include "services/redis/backend/redis_service.h"
#include "services/redlock/backend/redlock_service.h"
#include "services/service.h"

namespace lockstep {

const std::vector<Service>& services() {
  static const std::vector<Service> all = {
      memory_service(), redis_service(), redlock_service(),  mongo_service(),
      keyed_service(),  ext_service(),   postgres_service(), etcd_service(),
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
