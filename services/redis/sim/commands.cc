#include "services/redis/sim/commands.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>

#include "services/redis/sim/lua_engine.h"

namespace lockstep::sim {
namespace {

using Argv = std::vector<std::string>;
using Handler = RedisReply (*)(const Argv&, CommandContext&);

struct CommandSpec {
  std::string_view name;  // lowercase, as Redis prints it in errors
  int arity;              // Redis's: n means exactly n, -n means at least n (name included)
  bool write;
  bool noscript;  // refused inside scripts
  Handler run;
};

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && lower(a) == lower(b);
}

RedisReply err(std::string text) { return RedisReply::error_of("ERR " + std::move(text)); }
RedisReply ok() { return RedisReply::status_of("OK"); }
RedisReply not_integer() { return err("value is not an integer or out of range"); }
RedisReply syntax_error() { return err("syntax error"); }
RedisReply arity_error(std::string_view name) {
  return err("wrong number of arguments for '" + std::string(name) + "' command");
}
RedisReply invalid_expire(std::string_view name) {
  return err("invalid expire time in '" + std::string(name) + "' command");
}
// Redis replaces CR and LF in errors that quote user input, to keep the protocol intact.
std::string no_newlines(std::string s) {
  std::replace_if(
      s.begin(), s.end(), [](char c) { return c == '\r' || c == '\n'; }, ' ');
  return s;
}

// --- strings ---

RedisReply cmd_get(const Argv& argv, CommandContext& ctx) {
  const Entry* e = ctx.keyspace.lookup(argv[1], ctx.now_ms, ctx.sink);
  return e ? RedisReply::string_of(e->value) : RedisReply::nil();
}

struct SetArgs {
  enum class Unit { none, ex, px, exat, pxat };
  bool nx = false, xx = false, get = false, keepttl = false;
  Unit unit = Unit::none;
  const std::string* expire = nullptr;
};

// Redis 7.0's parseExtendedStringArgumentsOrReply for SET: a repeated option is accepted (the
// last expiry wins); conflicting ones or a missing value are a syntax error.
bool parse_set_options(const Argv& argv, size_t first, SetArgs& a) {
  using Unit = SetArgs::Unit;
  for (size_t j = first; j < argv.size(); ++j) {
    const std::string opt = lower(argv[j]);
    const bool has_next = j + 1 < argv.size();
    const bool any_ttl = a.unit != Unit::none;
    if (opt == "nx" && !a.xx) {
      a.nx = true;
    } else if (opt == "xx" && !a.nx) {
      a.xx = true;
    } else if (opt == "get") {
      a.get = true;
    } else if (opt == "keepttl" && !any_ttl) {
      a.keepttl = true;
    } else if ((opt == "ex" || opt == "px" || opt == "exat" || opt == "pxat") && has_next &&
               !a.keepttl) {
      const Unit u = opt == "ex"     ? Unit::ex
                     : opt == "px"   ? Unit::px
                     : opt == "exat" ? Unit::exat
                                     : Unit::pxat;
      if (any_ttl && a.unit != u) return false;
      a.unit = u;
      a.expire = &argv[++j];
    } else {
      return false;
    }
  }
  return true;
}

// getExpireMillisecondsOrReply: the absolute expiry, or an error reply in `error`.
bool set_expire_at(const SetArgs& a, int64_t now_ms, int64_t& at_ms, RedisReply& error) {
  using Unit = SetArgs::Unit;
  int64_t v = 0;
  if (!parse_int64(*a.expire, v)) return error = not_integer(), false;
  const bool seconds = a.unit == Unit::ex || a.unit == Unit::exat;
  if (v <= 0 || (seconds && v > kInt64Max / 1000)) return error = invalid_expire("set"), false;
  if (seconds) v *= 1000;
  if (a.unit == Unit::ex || a.unit == Unit::px) {
    if (v > kInt64Max - now_ms) return error = invalid_expire("set"), false;
    v += now_ms;
  }
  at_ms = v;
  return true;
}

RedisReply set_generic(const std::string& key, const std::string& value, const SetArgs& a,
                       int64_t expire_at_ms, CommandContext& ctx) {
  RedisReply old = RedisReply::nil();
  const Entry* e = ctx.keyspace.lookup(key, ctx.now_ms, ctx.sink);
  if (a.get && e) old = RedisReply::string_of(e->value);
  const bool found = e != nullptr;
  if ((a.nx && found) || (a.xx && !found)) return old;  // nil unless GET
  if (a.keepttl && found) expire_at_ms = e->expire_at_ms;
  ctx.keyspace.set(key, value, expire_at_ms, ctx.now_ms, ctx.sink);
  return a.get ? old : ok();
}

RedisReply cmd_set(const Argv& argv, CommandContext& ctx) {
  SetArgs a;
  if (!parse_set_options(argv, 3, a)) return syntax_error();
  int64_t expire_at_ms = kNoExpiry;
  RedisReply error;
  if (a.expire && !set_expire_at(a, ctx.now_ms, expire_at_ms, error)) return error;
  return set_generic(argv[1], argv[2], a, expire_at_ms, ctx);
}

RedisReply cmd_setnx(const Argv& argv, CommandContext& ctx) {
  const RedisReply r = set_generic(argv[1], argv[2], SetArgs{.nx = true}, kNoExpiry, ctx);
  return RedisReply::integer_of(r.is_nil() ? 0 : 1);
}

RedisReply cmd_incr(const Argv& argv, CommandContext& ctx) {
  const Entry* e = ctx.keyspace.lookup(argv[1], ctx.now_ms, ctx.sink);
  int64_t v = 0;
  if (e && !parse_int64(e->value, v)) return not_integer();
  if (v == kInt64Max) return err("increment or decrement would overflow");
  const int64_t expire_at_ms = e ? e->expire_at_ms : kNoExpiry;  // INCR keeps the TTL
  ctx.keyspace.set(argv[1], std::to_string(v + 1), expire_at_ms, ctx.now_ms, ctx.sink);
  return RedisReply::integer_of(v + 1);
}

// --- keys ---

RedisReply cmd_del(const Argv& argv, CommandContext& ctx) {
  int64_t n = 0;
  for (size_t i = 1; i < argv.size(); ++i) n += ctx.keyspace.del(argv[i], ctx.now_ms, ctx.sink);
  return RedisReply::integer_of(n);
}

RedisReply cmd_exists(const Argv& argv, CommandContext& ctx) {
  int64_t n = 0;  // a key named twice counts twice, as in Redis
  for (size_t i = 1; i < argv.size(); ++i) {
    n += ctx.keyspace.lookup(argv[i], ctx.now_ms, ctx.sink) != nullptr;
  }
  return RedisReply::integer_of(n);
}

struct ExpireFlags {
  bool nx = false, xx = false, gt = false, lt = false;
};

bool parse_expire_flags(const Argv& argv, ExpireFlags& f, RedisReply& error) {
  for (size_t j = 3; j < argv.size(); ++j) {
    const std::string opt = lower(argv[j]);
    if (opt == "nx") {
      f.nx = true;
    } else if (opt == "xx") {
      f.xx = true;
    } else if (opt == "gt") {
      f.gt = true;
    } else if (opt == "lt") {
      f.lt = true;
    } else {
      return error = err("Unsupported option " + no_newlines(argv[j])), false;
    }
  }
  if (f.nx && (f.xx || f.gt || f.lt)) {
    return error = err("NX and XX, GT or LT options at the same time are not compatible"), false;
  }
  if (f.gt && f.lt)
    return error = err("GT and LT options at the same time are not compatible"), false;
  return true;
}

// Whether NX/XX/GT/LT allow the new expiry; no expiry counts as an infinite TTL (as in Redis).
bool expire_allowed(const ExpireFlags& f, int64_t current_ms, int64_t when_ms) {
  const bool none = current_ms == kNoExpiry;
  if (f.nx && !none) return false;
  if (f.xx && none) return false;
  if (f.gt && (none || when_ms <= current_ms)) return false;
  if (f.lt && !none && when_ms >= current_ms) return false;
  return true;
}

// expireGenericCommand: a relative expiry from now; one at or before now deletes the key.
RedisReply expire_generic(const Argv& argv, CommandContext& ctx, bool seconds,
                          std::string_view name) {
  ExpireFlags f;
  RedisReply error;
  if (!parse_expire_flags(argv, f, error)) return error;
  int64_t when = 0;
  if (!parse_int64(argv[2], when)) return not_integer();
  if (seconds) {
    if (when > kInt64Max / 1000 || when < kInt64Min / 1000) return invalid_expire(name);
    when *= 1000;
  }
  if (when > kInt64Max - ctx.now_ms) return invalid_expire(name);
  when += ctx.now_ms;
  const Entry* e = ctx.keyspace.lookup(argv[1], ctx.now_ms, ctx.sink);
  if (!e || !expire_allowed(f, e->expire_at_ms, when)) return RedisReply::integer_of(0);
  if (when <= ctx.now_ms) {
    ctx.keyspace.del(argv[1], ctx.now_ms, ctx.sink);
  } else {
    ctx.keyspace.set_expire(argv[1], when, ctx.now_ms, ctx.sink);
  }
  return RedisReply::integer_of(1);
}

RedisReply cmd_pexpire(const Argv& argv, CommandContext& ctx) {
  return expire_generic(argv, ctx, false, "pexpire");
}
RedisReply cmd_expire(const Argv& argv, CommandContext& ctx) {
  return expire_generic(argv, ctx, true, "expire");
}

RedisReply ttl_generic(const Argv& argv, CommandContext& ctx, bool seconds) {
  const Entry* e = ctx.keyspace.lookup(argv[1], ctx.now_ms, ctx.sink);
  if (!e) return RedisReply::integer_of(-2);
  if (e->expire_at_ms == kNoExpiry) return RedisReply::integer_of(-1);
  const int64_t ttl_ms = std::max<int64_t>(0, e->expire_at_ms - ctx.now_ms);
  return RedisReply::integer_of(seconds ? (ttl_ms + 500) / 1000 : ttl_ms);
}

RedisReply cmd_pttl(const Argv& argv, CommandContext& ctx) { return ttl_generic(argv, ctx, false); }
RedisReply cmd_ttl(const Argv& argv, CommandContext& ctx) { return ttl_generic(argv, ctx, true); }

RedisReply cmd_ping(const Argv& argv, CommandContext&) {
  if (argv.size() > 2) return arity_error("ping");
  return argv.size() == 2 ? RedisReply::string_of(argv[1]) : RedisReply::status_of("PONG");
}

// --- scripting ---

RedisReply eval_generic(const Argv& argv, CommandContext& ctx, bool by_sha) {
  int64_t numkeys = 0;
  if (!parse_int64(argv[2], numkeys)) return not_integer();
  if (numkeys > static_cast<int64_t>(argv.size()) - 3) {
    return err("Number of keys can't be greater than number of args");
  }
  if (numkeys < 0) return err("Number of keys can't be negative");
  if (ctx.lua == nullptr) return err("no Lua engine on this node");
  const std::span<const std::string> all(argv);
  const auto keys = all.subspan(3, static_cast<size_t>(numkeys));
  const auto args = all.subspan(3 + static_cast<size_t>(numkeys));
  return by_sha ? ctx.lua->evalsha(argv[1], keys, args, ctx)
                : ctx.lua->eval(argv[1], keys, args, ctx);
}

RedisReply cmd_eval(const Argv& argv, CommandContext& ctx) {
  return eval_generic(argv, ctx, false);
}
RedisReply cmd_evalsha(const Argv& argv, CommandContext& ctx) {
  return eval_generic(argv, ctx, true);
}

RedisReply cmd_script(const Argv& argv, CommandContext& ctx) {
  const std::string sub = lower(argv[1]);
  if (ctx.lua == nullptr) return err("no Lua engine on this node");
  if (sub == "load") {
    if (argv.size() != 3) return arity_error("script|load");
    return ctx.lua->load(argv[2]);
  }
  if (sub == "exists") {
    if (argv.size() < 3) return arity_error("script|exists");
    std::vector<RedisReply> found;
    for (size_t i = 2; i < argv.size(); ++i)
      found.push_back(RedisReply::integer_of(ctx.lua->exists(argv[i])));
    return RedisReply::array_of(std::move(found));
  }
  if (sub == "flush") {
    if (argv.size() > 3 ||
        (argv.size() == 3 && !iequals(argv[2], "sync") && !iequals(argv[2], "async"))) {
      return err("SCRIPT FLUSH only support SYNC|ASYNC option");
    }
    ctx.lua->flush();
    return ok();
  }
  return err("unknown subcommand '" + no_newlines(argv[1].substr(0, 128)) + "'. Try SCRIPT HELP.");
}

// Sorted by name.
constexpr CommandSpec kCommands[] = {
    {"del", -2, true, false, cmd_del},         {"eval", -3, false, true, cmd_eval},
    {"evalsha", -3, false, true, cmd_evalsha}, {"exists", -2, false, false, cmd_exists},
    {"expire", -3, true, false, cmd_expire},   {"get", 2, false, false, cmd_get},
    {"incr", 2, true, false, cmd_incr},        {"pexpire", -3, true, false, cmd_pexpire},
    {"ping", -1, false, false, cmd_ping},      {"pttl", 2, false, false, cmd_pttl},
    {"script", -2, false, true, cmd_script},   {"set", -3, true, false, cmd_set},
    {"setnx", 3, true, false, cmd_setnx},      {"ttl", 2, false, false, cmd_ttl},
};

const CommandSpec* find_command(std::string_view name) {
  const std::string key = lower(name);
  for (const CommandSpec& spec : kCommands) {
    if (spec.name == key) return &spec;
  }
  return nullptr;
}

// "ERR unknown command 'foo', with args beginning with: 'a' 'b' " (trailing space included):
// Redis quotes arguments until 128 characters of them are shown.
RedisReply unknown_command(const Argv& argv) {
  std::string args;
  for (size_t i = 1; i < argv.size() && args.size() < 128; ++i) {
    args += "'" + argv[i].substr(0, 128 - args.size()) + "' ";
  }
  return err(no_newlines("unknown command '" + argv[0].substr(0, 128) +
                         "', with args beginning with: " + args));
}

bool arity_ok(const CommandSpec& spec, size_t argc) {
  const auto n = static_cast<int64_t>(argc);
  return spec.arity > 0 ? n == spec.arity : n >= -spec.arity;
}

}  // namespace

bool parse_int64(std::string_view s, int64_t& out) {
  if (s.empty() || s.size() > 20) return false;
  if (s == "0") return out = 0, true;
  const bool negative = s[0] == '-';
  const size_t start = negative ? 1 : 0;
  if (start == s.size() || s[start] < '1' || s[start] > '9') return false;
  uint64_t v = 0;
  for (size_t i = start; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    const auto digit = static_cast<uint64_t>(s[i] - '0');
    if (v > (UINT64_MAX - digit) / 10) return false;
    v = v * 10 + digit;
  }
  const auto magnitude_max = static_cast<uint64_t>(kInt64Max);
  if (negative) {
    if (v > magnitude_max + 1) return false;
    out = v == magnitude_max + 1 ? kInt64Min : -static_cast<int64_t>(v);
  } else {
    if (v > magnitude_max) return false;
    out = static_cast<int64_t>(v);
  }
  return true;
}

bool is_write_command(std::string_view name) {
  const CommandSpec* spec = find_command(name);
  return spec != nullptr && spec->write;
}

RedisReply run_command(const Argv& argv, CommandContext& ctx) {
  if (argv.empty()) return err("empty command");
  const CommandSpec* spec = find_command(argv[0]);
  if (ctx.from_script) {
    // scriptCall's checks and wording (Redis 7.0 script.c).
    if (spec == nullptr) return err("Unknown Redis command called from script");
    if (!arity_ok(*spec, argv.size()))
      return err("Wrong number of args calling Redis command from script");
    if (spec->noscript) return err("This Redis command is not allowed from script");
  } else {
    if (spec == nullptr) return unknown_command(argv);
    if (!arity_ok(*spec, argv.size())) return arity_error(spec->name);
  }
  if (spec->write && ctx.read_only) {
    return RedisReply::error_of("READONLY You can't write against a read only replica.");
  }
  return spec->run(argv, ctx);
}

}  // namespace lockstep::sim
