#pragma once
// The guarded resource of a workload: one counter per key that each holder reads, works on, and
// writes back incremented.
//
// In fencing mode every access, read or write, carries the holder's token, and the resource
// refuses any token lower than the highest it has seen for that key (checking reads too: otherwise
// an old holder could write between a new holder's read and write). An access without a token
// (an adapter that cannot issue them) is served: the resource cannot tell, which is what fencing
// off costs. Every access is recorded in the history, served or refused. Thread-safe: each access
// is atomic, as a real resource's would be.
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "harness/recorder.h"

namespace lockstep {

struct ResourceOptions {
  bool fencing_on = false;
};

class GuardedResource {
 public:
  GuardedResource(Recorder& recorder, ResourceOptions options)
      : recorder_(recorder), options_(options) {}

  // The counter, or nothing if the access was refused.
  std::optional<int64_t> read(int client, const std::string& key, std::optional<uint64_t> token);
  // Stores value; false if refused.
  bool write(int client, const std::string& key, std::optional<uint64_t> token, int64_t value);
  // Records each key's final counter (a final_value event per key, in key order).
  void record_final_values();

  bool fencing_on() const { return options_.fencing_on; }

 private:
  struct Cell {
    int64_t counter = 0;
    uint64_t token_seen_max = 0;
  };
  bool admit(Cell& cell, std::optional<uint64_t> token) const;
  void record_access(int client, const std::string& key, Op op, bool served,
                     std::optional<uint64_t> token, int64_t counter);

  Recorder& recorder_;
  ResourceOptions options_;
  std::mutex mutex_;
  std::map<std::string, Cell> cells_;
};

}  // namespace lockstep
