#pragma once
// The steps Redlock is made of, each one round of parallel requests to every node through the
// RedisFanout seam. RedlockManager composes them; the known-bad variants in property_tests
// recompose them with one step wrong, so the production algorithm carries no "bad" switches.
//
// Per node: acquire is a plain SET key value NX PX ttl (Redlock has no fencing counter); release
// and extend are the compare-and-delete and compare-and-pexpire scripts of the single-node lock
// (services/redis/adapter/scripts.h), sent by EVALSHA and, to the nodes that answer NOSCRIPT (a restarted
// node), by EVAL in a second round: a round takes at most twice the timeout, only after a restart.
#include <cstdint>
#include <string>
#include <vector>

#include "services/redlock/client/redis_fanout.h"

namespace lockstep {

// How the nodes answered one round.
struct NodeVotes {
  int yes = 0;            // granted / deleted / extended / holds our value
  int no = 0;             // answered, but not for us (held by another owner, or gone)
  int failed = 0;         // timeout, connection error, or an error reply
  int maybe_applied = 0;  // of the failed: sent whole, no reply (io_status.h: it may have applied)
  std::string failures;   // "sim:redis-2: timeout (...); ..." for messages

  int answered() const { return yes + no; }
};

// N/2 + 1: the smallest majority of n nodes.
int majority_of(size_t nodes);

NodeVotes lock_all(RedisFanout& fanout, const std::string& lock_key, const std::string& value,
                   int64_t ttl_ms, int64_t timeout_us);
NodeVotes unlock_all(RedisFanout& fanout, const std::string& lock_key, const std::string& value,
                     int64_t timeout_us);
NodeVotes extend_all(RedisFanout& fanout, const std::string& lock_key, const std::string& value,
                     int64_t ttl_ms, int64_t timeout_us);
// GET on every node: yes where it holds value.
NodeVotes check_all(RedisFanout& fanout, const std::string& lock_key, const std::string& value,
                    int64_t timeout_us);

}  // namespace lockstep
