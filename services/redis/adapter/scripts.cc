#include "services/redis/adapter/scripts.h"

#include "services/redis/client/sha1.h"

namespace lockstep {

namespace {

RedisScript make_script(std::string name, std::string source) {
  std::string sha1 = sha1_hex(source);
  return {.name = std::move(name), .source = std::move(source), .sha1 = std::move(sha1)};
}

std::vector<std::string> script_argv(const std::string& verb, const std::string& script_ref,
                                     const std::vector<std::string>& keys,
                                     const std::vector<std::string>& args) {
  std::vector<std::string> argv;
  argv.reserve(3 + keys.size() + args.size());  // one allocation per command, on a hot path
  argv.push_back(verb);
  argv.push_back(script_ref);
  argv.push_back(std::to_string(keys.size()));
  argv.insert(argv.end(), keys.begin(), keys.end());
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

bool is_noscript(const RedisResult& result) {
  return result.ok() && result.reply.is_error() && result.reply.str.rfind("NOSCRIPT", 0) == 0;
}

}  // namespace

const RedisScript& grant_script() {
  static const RedisScript script =
      make_script("grant", R"lua(if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return redis.call('INCR', KEYS[2])
end
return false
)lua");
  return script;
}

const RedisScript& release_script() {
  static const RedisScript script =
      make_script("release", R"lua(if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
)lua");
  return script;
}

const RedisScript& extend_script() {
  static const RedisScript script =
      make_script("extend", R"lua(if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
)lua");
  return script;
}

RedisResult run_script(RedisConnection& connection, const RedisScript& script,
                       const std::vector<std::string>& keys, const std::vector<std::string>& args) {
  RedisResult result = connection.command(script_argv("EVALSHA", script.sha1, keys, args));
  if (!is_noscript(result)) return result;
  return connection.command(script_argv("EVAL", script.source, keys, args));
}

}  // namespace lockstep
