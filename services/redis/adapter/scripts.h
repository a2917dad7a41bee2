#pragma once
// The Lua scripts of the Redis lock, and how they are sent: by SHA (EVALSHA), falling back to the
// full text (EVAL) when the server answers NOSCRIPT (a restarted or flushed server has an empty
// script cache). Scripts run verbatim in real Redis and in the simulator's embedded Lua 5.1.
#include <string>
#include <vector>

#include "lockstep/redis_connection.h"

namespace lockstep {

struct RedisScript {
  std::string name;
  std::string source;
  std::string sha1;  // of source, computed once
};

// KEYS[1] lock key, KEYS[2] fencing counter key; ARGV[1] owner value, ARGV[2] ttl ms.
// Sets the lock if free and takes the next token in the same atomic step; nil when held.
const RedisScript& grant_script();
// KEYS[1] lock key; ARGV[1] owner value. 1 if it deleted our lock, 0 otherwise.
const RedisScript& release_script();
// KEYS[1] lock key; ARGV[1] owner value, ARGV[2] ttl ms. 1 if it extended our lock, 0 otherwise;
// never re-creates a missing key.
const RedisScript& extend_script();

// EVALSHA, then EVAL on NOSCRIPT. The transport result of the last command sent.
RedisResult run_script(RedisConnection& connection, const RedisScript& script,
                       const std::vector<std::string>& keys, const std::vector<std::string>& args);

}  // namespace lockstep
