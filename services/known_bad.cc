#include "services/known_bad.h"

#include "base/check.h"

#include "lockstep/registry.h"
#include "services/etcd/known_bad/etcd_known_bad.h"
#include "services/keyed/known_bad/keyed_known_bad.h"
#include "services/memory/known_bad/memory_known_bad.h"
#include "services/mongo/known_bad/mongo_known_bad.h"
#include "services/postgres/known_bad/postgres_known_bad.h"
#include "services/redis/known_bad/redis_known_bad.h"
#include "services/redlock/known_bad/redlock_known_bad.h"

namespace lockstep {

namespace {

const AdapterEntry& sibling(const std::string& name) {
  const AdapterEntry* entry = find_adapter(name);
  LOCKSTEP_CHECK(entry != nullptr, "a known-bad adapter's sibling is registered");
  return *entry;
}

}  // namespace

void register_known_bad_adapters() {
  if (find_adapter("bad-memory-no-owner-check") != nullptr) return;
  // Each service's known-bad locks, copies of its production ones with one thing wrong.
  std::vector<AdapterEntry> all = redis_known_bad(sibling("redis"));
  for (AdapterEntry& e : redlock_known_bad(sibling("redlock"))) all.push_back(std::move(e));
  for (AdapterEntry& e : memory_known_bad(sibling("memory"))) all.push_back(std::move(e));
  for (AdapterEntry& e : mongo_known_bad(sibling("mongo"))) all.push_back(std::move(e));
  for (AdapterEntry& e : etcd_known_bad(sibling("etcd"), sibling("etcd-lock")))
    all.push_back(std::move(e));
  for (AdapterEntry& e : keyed_known_bad(sibling("keyed-rw"), sibling("fifo")))
    all.push_back(std::move(e));
  for (AdapterEntry& e : postgres_known_bad(sibling("postgres-session")))
    all.push_back(std::move(e));
  for (AdapterEntry& entry : all) register_adapter(std::move(entry));
}

}  // namespace lockstep
