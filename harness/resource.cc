#include "harness/resource.h"

#include <algorithm>

namespace lockstep {

bool GuardedResource::admit(Cell& cell, std::optional<uint64_t> token) const {
  if (!options_.fencing_on || !token) return true;
  if (*token < cell.token_seen_max) return false;
  cell.token_seen_max = *token;
  return true;
}

std::optional<int64_t> GuardedResource::read(int client, const std::string& key,
                                             std::optional<uint64_t> token) {
  std::lock_guard<std::mutex> guard(mutex_);
  Cell& cell = cells_[key];
  const bool served = admit(cell, token);
  record_access(client, key, Op::read, served, token, served ? cell.counter : 0);
  if (!served) return std::nullopt;
  return cell.counter;
}

bool GuardedResource::write(int client, const std::string& key, std::optional<uint64_t> token,
                            int64_t value) {
  std::lock_guard<std::mutex> guard(mutex_);
  Cell& cell = cells_[key];
  const bool served = admit(cell, token);
  if (served) cell.counter = value;
  record_access(client, key, Op::write, served, token, value);
  return served;
}

void GuardedResource::record_final_values() {
  std::lock_guard<std::mutex> guard(mutex_);
  for (const auto& [key, cell] : cells_) {
    recorder_.record({.kind = EventKind::final_value, .key = key, .counter = cell.counter});
  }
}

void GuardedResource::record_access(int client, const std::string& key, Op op, bool served,
                                    std::optional<uint64_t> token, int64_t counter) {
  recorder_.record({.kind = EventKind::access,
                    .client = client,
                    .key = key,
                    .op = op,
                    .outcome = served ? Outcome::ok : Outcome::refused,
                    .has_token = token.has_value(),
                    .token = token.value_or(0),
                    .counter = counter});
}

}  // namespace lockstep
