#include "services/redlock/adapter/redlock_steps.h"

#include <fmt/format.h>

#include "services/redis/adapter/scripts.h"

namespace lockstep {

namespace {

enum class Vote { yes, no, failed };

void count(NodeVotes& votes, Vote vote, const RedisFanout& fanout, size_t node,
           const RedisResult& result) {
  if (vote == Vote::yes) ++votes.yes;
  if (vote == Vote::no) ++votes.no;
  if (vote != Vote::failed) return;
  ++votes.failed;
  if (may_have_applied(result.status)) ++votes.maybe_applied;
  const std::string why = result.ok()
                              ? "unexpected reply " + describe(result.reply)
                              : std::string(to_string(result.status)) + " (" + result.message + ")";
  votes.failures +=
      fmt::format("{}{}: {}", votes.failures.empty() ? "" : "; ", fanout.endpoint(node), why);
}

// 1 -> yes, 0 -> no, anything else -> failed.
Vote from_integer(const RedisResult& r) {
  if (!r.ok() || r.reply.type != RedisReply::Type::integer) return Vote::failed;
  return r.reply.integer == 1 ? Vote::yes : r.reply.integer == 0 ? Vote::no : Vote::failed;
}

std::vector<std::string> script_argv(const std::string& verb, const std::string& ref,
                                     const std::string& key, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {verb, ref, "1", key};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

bool is_noscript(const RedisResult& r) {
  return r.ok() && r.reply.is_error() && r.reply.str.rfind("NOSCRIPT", 0) == 0;
}

// EVALSHA on every node, then EVAL on those that do not have the script.
std::vector<RedisResult> run_script_all(RedisFanout& fanout, const RedisScript& script,
                                        const std::string& key,
                                        const std::vector<std::string>& args, int64_t timeout_us) {
  std::vector<std::vector<std::string>> argvs(fanout.size(),
                                              script_argv("EVALSHA", script.sha1, key, args));
  std::vector<RedisResult> results = fanout.command_all(argvs, timeout_us);
  bool again = false;
  for (size_t i = 0; i < results.size(); ++i) {
    const bool missing = is_noscript(results[i]);
    argvs[i] = missing ? script_argv("EVAL", script.source, key, args) : std::vector<std::string>{};
    again = again || missing;
  }
  if (!again) return results;
  std::vector<RedisResult> second = fanout.command_all(argvs, timeout_us);
  for (size_t i = 0; i < results.size(); ++i) {
    if (!argvs[i].empty()) results[i] = std::move(second[i]);
  }
  return results;
}

NodeVotes tally(const RedisFanout& fanout, const std::vector<RedisResult>& results,
                Vote (*vote_of)(const RedisResult&)) {
  NodeVotes votes;
  for (size_t i = 0; i < results.size(); ++i)
    count(votes, vote_of(results[i]), fanout, i, results[i]);
  return votes;
}

}  // namespace

int majority_of(size_t nodes) { return static_cast<int>(nodes / 2 + 1); }

NodeVotes lock_all(RedisFanout& fanout, const std::string& lock_key, const std::string& value,
                   int64_t ttl_ms, int64_t timeout_us) {
  const std::vector<std::vector<std::string>> argvs(
      fanout.size(), {"SET", lock_key, value, "NX", "PX", std::to_string(ttl_ms)});
  return tally(fanout, fanout.command_all(argvs, timeout_us), [](const RedisResult& r) {
    if (!r.ok()) return Vote::failed;
    if (r.reply.is_nil()) return Vote::no;  // held by another owner
    return r.reply.type == RedisReply::Type::status && r.reply.str == "OK" ? Vote::yes
                                                                           : Vote::failed;
  });
}

NodeVotes unlock_all(RedisFanout& fanout, const std::string& lock_key, const std::string& value,
                     int64_t timeout_us) {
  return tally(fanout, run_script_all(fanout, release_script(), lock_key, {value}, timeout_us),
               from_integer);
}

NodeVotes extend_all(RedisFanout& fanout, const std::string& lock_key, const std::string& value,
                     int64_t ttl_ms, int64_t timeout_us) {
  return tally(fanout,
               run_script_all(fanout, extend_script(), lock_key, {value, std::to_string(ttl_ms)},
                              timeout_us),
               from_integer);
}

NodeVotes check_all(RedisFanout& fanout, const std::string& lock_key, const std::string& value,
                    int64_t timeout_us) {
  const std::vector<std::vector<std::string>> argvs(fanout.size(), {"GET", lock_key});
  const std::vector<RedisResult> results = fanout.command_all(argvs, timeout_us);
  NodeVotes votes;
  for (size_t i = 0; i < results.size(); ++i) {
    const RedisResult& r = results[i];
    Vote vote = Vote::failed;
    if (r.ok() && r.reply.is_nil()) vote = Vote::no;
    if (r.ok() && r.reply.type == RedisReply::Type::string)
      vote = r.reply.str == value ? Vote::yes : Vote::no;
    count(votes, vote, fanout, i, r);
  }
  return votes;
}

}  // namespace lockstep
