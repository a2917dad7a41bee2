#include "my_deadline_lock.h"

#include <memory>
#include <utility>

#include "lockstep/registry.h"
#include "redis_lock_kit.h"

namespace my_deadline {

namespace {

using lockstep::AdapterResult;
using lockstep::AdapterStatus;
using lockstep::RedisReply;
using lockstep::RedisResult;

// KEYS[1] lock key; ARGV[1] owner, ARGV[2] now (ms, the caller's wall clock), ARGV[3] the new
// deadline. Takes the key when it is missing or its deadline is not after now.
constexpr const char* kAcquireScript = R"lua(
local held = redis.call("GET", KEYS[1])
if held then
  local deadline = tonumber(string.match(held, ":(%d+)$"))
  if deadline and deadline > tonumber(ARGV[2]) then return 0 end
end
redis.call("SET", KEYS[1], ARGV[1] .. ":" .. ARGV[3])
return 1
)lua";

// The bug: the holder's deadline is compared with the one this caller would write (ARGV[3]), so
// every lock that ends before a new one would counts as over.
constexpr const char* kBuggyAcquireScript = R"lua(
local held = redis.call("GET", KEYS[1])
if held then
  local deadline = tonumber(string.match(held, ":(%d+)$"))
  if deadline and deadline > tonumber(ARGV[3]) then return 0 end
end
redis.call("SET", KEYS[1], ARGV[1] .. ":" .. ARGV[3])
return 1
)lua";

// KEYS[1] lock key; ARGV[1] owner. Deletes the lock only if it is still ours.
constexpr const char* kReleaseScript = R"lua(
local held = redis.call("GET", KEYS[1])
if held and string.match(held, "^(.*):%d+$") == ARGV[1] then
  return redis.call("DEL", KEYS[1])
end
return 0
)lua";

// KEYS[1] lock key; ARGV[1] owner, ARGV[2] now, ARGV[3] the new deadline. Moves our deadline only
// while our lock is ours and not over: an expired lock may already be someone else's to take.
constexpr const char* kExtendScript = R"lua(
local held = redis.call("GET", KEYS[1])
if not held then return 0 end
local owner, deadline = string.match(held, "^(.*):(%d+)$")
if owner ~= ARGV[1] or tonumber(deadline) <= tonumber(ARGV[2]) then return 0 end
redis.call("SET", KEYS[1], ARGV[1] .. ":" .. ARGV[3])
return 1
)lua";

// KEYS[1] lock key; ARGV[1] owner, ARGV[2] now. 1 while our lock is ours and not over.
constexpr const char* kValidScript = R"lua(
local held = redis.call("GET", KEYS[1])
if not held then return 0 end
local owner, deadline = string.match(held, "^(.*):(%d+)$")
if owner == ARGV[1] and tonumber(deadline) > tonumber(ARGV[2]) then return 1 end
return 0
)lua";

// Integer 1: done; 0: the lock is not ours (or gone, or over); a write with no reply: it may have
// been done (outcome unknown); anything else: the backend failed.
AdapterResult verdict(const RedisResult& r, AdapterStatus refused, bool writes) {
  if (r.ok() && r.reply.type == RedisReply::Type::integer) {
    return r.reply.integer == 1 ? AdapterResult{} : AdapterResult{.status = refused};
  }
  return writes ? my_redis::write_failed(r) : my_redis::backend_error(r);
}

}  // namespace

AdapterResult MyDeadlineLock::run(const char* script, const lockstep::LockSpec& spec,
                                  std::vector<std::string> args, AdapterStatus refused,
                                  bool writes) {
  std::vector<std::string> argv{"EVAL", script, "1", spec.key, spec.value};
  for (std::string& a : args) argv.push_back(std::move(a));
  return verdict(connection_.command(argv), refused, writes);
}

AdapterResult MyDeadlineLock::create_lock(const lockstep::LockSpec& spec) {
  const char* script = takeover_ == Takeover::past_deadline ? kAcquireScript : kBuggyAcquireScript;
  const int64_t now_ms = clock_.now_ms();
  return run(script, spec, {std::to_string(now_ms), std::to_string(now_ms_up() + spec.ttl_ms)},
             AdapterStatus::contended);
}

AdapterResult MyDeadlineLock::release_lock(const lockstep::LockSpec& spec) {
  return run(kReleaseScript, spec, {}, AdapterStatus::not_owner);
}

AdapterResult MyDeadlineLock::extend_lock(const lockstep::LockSpec& spec, int64_t ttl_ms) {
  const int64_t now_ms = clock_.now_ms();
  return run(kExtendScript, spec, {std::to_string(now_ms), std::to_string(now_ms_up() + ttl_ms)},
             AdapterStatus::not_owner);
}

AdapterResult MyDeadlineLock::is_valid_lock(const lockstep::LockSpec& spec) {
  return run(kValidScript, spec, {std::to_string(clock_.now_ms())}, AdapterStatus::not_owner,
             /*writes=*/false);
}

namespace {

lockstep::AdapterEntry deadline_lock(std::string name, MyDeadlineLock::Takeover takeover,
                                     std::string description) {
  // A lease lock on one Redis whose expiry is the deadline in its value, compared by the clients'
  // wall clocks (client_value: lockstep then reads its leases from the values it writes, and
  // counts a client clock's offset, jump or fast rate outside what it survives).
  return my_redis::redis_lock_entry(
      std::move(name), std::move(description),
      {.tokens = lockstep::TokenKind::none, .server_expiry = lockstep::ExpiryClock::client_value},
      [takeover](lockstep::RedisConnection& c,
                 lockstep::ClientSeams seams) -> std::unique_ptr<lockstep::LockAdapter> {
        return std::make_unique<MyDeadlineLock>(c, seams.clock, takeover);
      });
}

}  // namespace

void register_my_deadline_locks() {
  lockstep::register_adapter(deadline_lock(
      "my-deadline", MyDeadlineLock::Takeover::past_deadline,
      "my owner:deadline Redis lock (expiry in the value, judged by the clients' clocks)"));
  lockstep::AdapterEntry buggy = deadline_lock(
      "my-deadline-buggy", MyDeadlineLock::Takeover::before_my_deadline,
      "owner:deadline lock that takes over a live lock (compares with its own deadline)");
  // A calibration variant: `calibrate` must find it breaking this.
  buggy.known_bad = true;
  buggy.breaks = "lease_exclusion";
  buggy.sibling = "my-deadline";
  lockstep::register_adapter(std::move(buggy));
}

}  // namespace my_deadline
