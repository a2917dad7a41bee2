// Differential test: the same random command sequences, run on the simulated Redis node and on a
// real redis-server the test starts, must give identical replies. Sequences mix the adapter's Lua
// scripts with plain commands, bad arguments, expiry edge cases, SCRIPT FLUSH, and (in every
// other sequence) a restart of both servers without persistence, after which keys and cached
// scripts are gone on both. In every fourth sequence time passes once: the test sleeps 1.2 s and
// the simulated node's clock moves as far, so keys set with a 1 s TTL (and no others) expire on
// both, and what follows meets them gone: GET, SET NX, the scripts, PTTL's -2. Otherwise TTLs are
// long (or <= 0, which deletes at once), far from any real elapsed time between two commands; PTTL
// is compared by sign, the one part of it that does not drift with real time. A second case holds
// the simulated replica to a redis-server replica: the primary's writes (the adapter's scripts
// among them), each waited for (WAIT on the real primary, the simulated network run dry), then a
// read or a refused write on the replica.
#include <catch2/catch.hpp>

#include <chrono>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "lockstep/random.h"
#include "services/redis/adapter/hiredis_connection.h"
#include "services/redis/adapter/scripts.h"
#include "services/redis/real/redis_server.h"
#include "services/redis/sim/redis_node.h"
#include "sim/world.h"
#include "tests/real_support.h"

namespace lockstep {
namespace {

using Argv = std::vector<std::string>;

class CommandGenerator {
 public:
  explicit CommandGenerator(uint64_t seed) : prng_(seed) {}

  Argv next() {
    switch (prng_.below(17)) {
      case 0: return set_command();
      case 1: return {"GET", key()};
      case 2: return prng_.chance(1, 2) ? Argv{"DEL", key()} : Argv{"DEL", key(), key()};
      case 3: return {"EXISTS", key(), key()};
      case 4: return {"PEXPIRE", key(), pick({"-5", "0", "100000", "abc", "9223372036854775807"})};
      case 5: return {"PTTL", key()};
      case 6: return {"INCR", key()};
      case 7: return script(grant_script(), {key(), "tok:" + key()}, {value(), ttl()});
      case 8: return script(release_script(), {key()}, {value()});
      case 9: return script(extend_script(), {key()}, {value(), ttl()});
      case 10: return {"EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"};
      case 11: return {"SCRIPT", "LOAD", pick({grant_script().source, release_script().source})};
      case 12: return {"SETNX", key(), value()};
      case 14:  // the script cache emptied under the adapter: its EVALSHA meets NOSCRIPT again
        return prng_.chance(1, 4) ? Argv{"SCRIPT", "FLUSH", pick({"SYNC", "ASYNC", "NOW"})}
                                  : Argv{"SCRIPT", "FLUSH"};
      case 13:
        return {
            pick({"SET", "GET", "DEL", "PEXPIRE", "INCR", "EVAL"})};  // wrong number of arguments
      case 15: return {"EXISTS", "k0", "k1", "k2", "tok:k0", "tok:k1", "tok:k2"};
      default:
        return {"EVAL",
                pick({"return redis.call('GET', KEYS[1])", "return {1, 'a', false, 3}",
                      "return redis.pcall('INCR', KEYS[1])", "return {ok='FINE'}",
                      "return redis.call('SET', KEYS[1], ARGV[1], 'PX', '100000', 'GET')"}),
                "1", key(), value()};
    }
  }

 private:
  Argv set_command() {
    Argv argv = {"SET", key(), value()};
    if (prng_.chance(1, 3)) argv.push_back(pick({"NX", "XX"}));
    if (prng_.chance(1, 2)) {
      argv.push_back(pick({"PX", "EX"}));
      argv.push_back(pick({"100000", "0", "-1", "x", "250", "1000"}));
    }
    if (prng_.chance(1, 4)) argv.push_back(pick({"GET", "NX", "KEEPTTL"}));
    return argv;
  }
  // EVAL sends the source (and caches it on the server), EVALSHA only the hash: NOSCRIPT until the
  // script was cached, on both servers alike.
  Argv script(const RedisScript& s, Argv keys, Argv args) {
    const bool by_source = prng_.chance(1, 2);
    Argv argv = {by_source ? "EVAL" : "EVALSHA", by_source ? s.source : s.sha1,
                 std::to_string(keys.size())};
    argv.insert(argv.end(), keys.begin(), keys.end());
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }
  std::string key() { return pick({"k0", "k1", "k2"}); }
  std::string value() { return pick({"a", "b", "7", "-3"}); }
  std::string ttl() { return pick({"100000", "250000", "0", "1000"}); }
  std::string pick(std::vector<std::string> choices) {
    return choices[prng_.below(choices.size())];
  }

  Prng prng_;
};

// PTTL of a key with a TTL counts down in real time: compare its sign only.
RedisReply normalized(const Argv& argv, RedisReply reply) {
  if (argv[0] == "PTTL" && reply.type == RedisReply::Type::integer && reply.integer > 0)
    reply.integer = 1;
  return reply;
}

std::string show(const Argv& argv) {
  std::string out;
  for (const std::string& a : argv)
    out += (out.empty() ? "" : " ") + (a.size() > 40 ? a.substr(0, 37) + "..." : a);
  return out;
}

}  // namespace

TEST_CASE("the simulated Redis node answers like redis-server 7.0", "[redis][real][differential]") {
  testing::require_redis_server();
  real::RedisServerProcess server;
  HiredisConnection real_connection({.port = server.port()});
  std::map<RedisReply::Type, int> compared;  // the edges the sequences reached
  int noscript = 0;
  int restarts = 0;
  int flushes = 0;
  int passes = 0;
  int expired_by_pass = 0;  // keys alive before a pass and gone after it, on both servers
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    REQUIRE(real_connection.command({"FLUSHALL"}).ok());
    REQUIRE(real_connection.command({"SCRIPT", "FLUSH"}).ok());
    sim::World world({.seed = seed});
    sim::RedisNode node(world, {.name = "redis-0"});
    CommandGenerator generator(seed);
    std::vector<std::string> log;
    const int restart_at = seed % 2 == 0 ? 40 + static_cast<int>(seed * 7 % 60) : -1;
    const int pass_at = seed % 4 == 1 ? 60 + static_cast<int>(seed * 11 % 60) : -1;
    // Both servers answer the same command, or the test fails with the sequence so far.
    auto compare = [&](const Argv& argv, int i) {
      const RedisResult real_result = real_connection.command(argv);
      REQUIRE(real_result.ok());
      const RedisReply expected = normalized(argv, real_result.reply);
      const RedisReply actual = normalized(argv, node.execute(argv, 0));
      log.push_back(fmt::format("{} -> {}", show(argv), describe(expected)));
      ++compared[expected.type];
      noscript += expected.is_error() && expected.str.rfind("NOSCRIPT", 0) == 0;
      if (actual != expected) {
        std::string context;
        for (const std::string& line : log) context += "  " + line + "\n";
        FAIL(fmt::format("seed {} command {}: {}\n  real: {}\n  sim:  {}\nsequence:\n{}", seed, i,
                         show(argv), describe(expected), describe(actual), context));
      }
      return expected;
    };
    const Argv all_keys = {"EXISTS", "k0", "k1", "k2", "tok:k0", "tok:k1", "tok:k2"};
    for (int i = 0; i < 150; ++i) {
      if (i == pass_at) {  // 1.2 s pass on both: keys with a 1 s TTL expire, the others do not
        compare({"SET", "k2", "p", "PX", "1000"}, i);    // one that must expire,
        compare({"SET", "k1", "q", "PX", "100000"}, i);  // one that must not
        const int64_t before = compare(all_keys, i).integer;
        std::this_thread::sleep_for(std::chrono::milliseconds(1200));
        world.jump_clock(node.node(), 1'200'000);
        log.push_back("-- 1.2 s passed on both servers");
        const int64_t after = compare(all_keys, i).integer;
        expired_by_pass += static_cast<int>(before - after);
        ++passes;
      }
      if (i == restart_at) {  // persistence none on both: they come back empty, scripts too
        server.restart();
        world.crash(node.node());
        world.restart(node.node());
        log.push_back("-- both servers restarted");
        ++restarts;
      }
      const Argv argv = generator.next();
      flushes += argv[0] == "SCRIPT" && argv[1] == "FLUSH";
      compare(argv, i);
    }
  }
  // Every kind of reply was compared, errors and scripts' tables included.
  for (RedisReply::Type type :
       {RedisReply::Type::status, RedisReply::Type::error, RedisReply::Type::integer,
        RedisReply::Type::nil, RedisReply::Type::string, RedisReply::Type::array}) {
    CHECK(compared[type] >= 10);
  }
  CHECK(noscript >= 10);
  CHECK(flushes >= 10);
  CHECK(restarts == 10);
  CHECK(passes == 5);
  CHECK(expired_by_pass >= 5);
}

}  // namespace lockstep

namespace lockstep {
namespace {

// A primary's writes and a replica's reads: what the simulated replica holds once a write has
// replicated must be what a redis-server replica holds once WAIT says it has the write.
class ReplicationGenerator {
 public:
  explicit ReplicationGenerator(uint64_t seed) : prng_(seed) {}

  // A write (or a read) for the primary.
  Argv primary_command() {
    switch (prng_.below(8)) {
      case 0: return {"SET", key(), value(), "PX", "100000"};
      case 1: return {"SET", key(), value()};
      case 2: return {"DEL", key()};
      case 3: return {"PEXPIRE", key(), pick({"100000", "0", "-5"})};
      case 4: return {"INCR", "tok:" + key()};
      case 5: return {"EVAL", grant_script().source, "2", key(), "tok:" + key(), value(), "100000"};
      case 6: return {"EVAL", release_script().source, "1", key(), value()};
      default: return {"EVAL", extend_script().source, "1", key(), value(), "100000"};
    }
  }
  // A read, or a write the replica must refuse.
  Argv replica_command() {
    switch (prng_.below(6)) {
      case 0: return {"GET", key()};
      case 1: return {"EXISTS", "k0", "k1", "k2", "tok:k0", "tok:k1", "tok:k2"};
      case 2: return {"PTTL", key()};
      case 3: return {"GET", "tok:" + key()};
      case 4: return {"SET", key(), value()};
      default: return {"EVAL", "return redis.call('GET', KEYS[1])", "1", key()};
    }
  }

 private:
  std::string key() { return pick({"k0", "k1", "k2"}); }
  std::string value() { return pick({"a", "b"}); }
  std::string pick(std::vector<std::string> choices) {
    return choices[prng_.below(choices.size())];
  }

  Prng prng_;
};

}  // namespace

TEST_CASE("the simulated Redis replica holds what a redis-server replica holds",
          "[redis][real][differential]") {
  testing::require_redis_server();
  real::RedisServerProcess primary_server;
  real::RedisServerProcess replica_server;
  HiredisConnection primary_connection({.port = primary_server.port()});
  HiredisConnection replica_connection({.port = replica_server.port()});
  // The replica follows the primary; readiness is its link reported up, within a bound.
  REQUIRE(primary_connection.command({"CONFIG", "SET", "repl-diskless-sync-delay", "0"}).ok());
  REQUIRE(
      replica_connection.command({"REPLICAOF", "127.0.0.1", std::to_string(primary_server.port())})
          .ok());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (true) {
    const RedisResult info = replica_connection.command({"INFO", "replication"});
    if (info.ok() && info.reply.str.find("master_link_status:up") != std::string::npos) break;
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // polling the link, bounded
  }
  int replica_reads = 0;
  int readonly_refusals = 0;
  int values_read = 0;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    REQUIRE(primary_connection.command({"FLUSHALL"}).ok());
    sim::World world({.seed = seed});
    sim::RedisNode primary(world, {.name = "redis-0"});
    sim::RedisNode replica(world, {.name = "redis-1"});
    primary.add_replica(replica);
    ReplicationGenerator generator(seed);
    std::vector<std::string> log;
    auto fail_with = [&](int i, const Argv& argv, const RedisReply& expected,
                         const RedisReply& actual) {
      std::string context;
      for (const std::string& line : log) context += "  " + line + "\n";
      FAIL(fmt::format("seed {} command {}: {}\n  real: {}\n  sim:  {}\nsequence:\n{}", seed, i,
                       show(argv), describe(expected), describe(actual), context));
    };
    for (int i = 0; i < 100; ++i) {
      const Argv write = generator.primary_command();
      const RedisResult real_write = primary_connection.command(write);
      REQUIRE(real_write.ok());
      const RedisReply actual_write = primary.execute(write, 0);
      log.push_back(fmt::format("primary: {} -> {}", show(write), describe(real_write.reply)));
      if (actual_write != real_write.reply) fail_with(i, write, real_write.reply, actual_write);
      // Until both replicas have everything: WAIT on the real primary, the network in the sim.
      const RedisResult acked = primary_connection.command({"WAIT", "1", "5000"});
      REQUIRE(acked.ok());
      REQUIRE(acked.reply.integer == 1);
      world.run();
      const Argv read = generator.replica_command();
      const RedisResult real_read = replica_connection.command(read);
      REQUIRE(real_read.ok());
      const RedisReply expected = normalized(read, real_read.reply);
      const RedisReply actual = normalized(read, replica.execute(read, 9));
      log.push_back(fmt::format("replica: {} -> {}", show(read), describe(expected)));
      if (actual != expected) fail_with(i, read, expected, actual);
      ++replica_reads;
      readonly_refusals += expected.is_error() && expected.str.rfind("READONLY", 0) == 0;
      values_read += expected.type == RedisReply::Type::string;
    }
  }
  CHECK(replica_reads == 1000);
  CHECK(readonly_refusals >= 50);
  CHECK(values_read >= 100);
}

}  // namespace lockstep
