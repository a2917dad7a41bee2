#include "sim/redis/sim_redis_stream.h"

#include <fmt/format.h>

#include "sim/redis/resp.h"
#include "sim/redis/sim_redis_connection.h"

namespace lockstep::sim {

namespace {

constexpr size_t kCommandsPerPieceMax = 100'000;  // a bound on one piece's parse loop

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  return s;
}

// What a client library sends on connecting that lockstep's command table does not have.
std::optional<RedisReply> front_reply(const std::vector<std::string>& argv) {
  const std::string name = upper(argv[0]);
  if (name == "INFO") {
    return RedisReply::string_of(
        "# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n\r\n# Persistence\r\n"
        "loading:0\r\n\r\n# Replication\r\nrole:master\r\n");
  }
  if (name == "CLIENT") return RedisReply::status_of("OK");
  if (name == "SELECT") {
    return argv.size() == 2 && argv[1] == "0"
               ? RedisReply::status_of("OK")
               : RedisReply::error_of("ERR DB index is out of range");
  }
  return std::nullopt;
}

// A reply as one bounded trace line (INFO's text has line breaks).
std::string one_line(std::string text) {
  constexpr size_t kShownMax = 80;
  if (text.size() > kShownMax) text = text.substr(0, kShownMax) + "..";
  for (char& c : text) c = c == '\n' || c == '\r' ? ' ' : c;
  return text;
}

}  // namespace

struct SimRedisStream::State {
  World& world;
  NodeId client_node;
  RedisNode* target;
  int client;
  std::string name;
  std::function<void(std::string)> on_bytes;
  uint64_t server_incarnation = 0;
  RespParser parser;
  uint64_t sent_to_server = 0;      // pieces numbered from 1, per direction
  uint64_t received_by_server = 0;  // the last piece the server took
  uint64_t sent_to_client = 0;
  uint64_t received_by_client = 0;
  bool broken = false;
  bool closed = false;

  void fail(std::string_view why) {
    if (std::exchange(broken, true)) return;
    world.trace_line(fmt::format("stream {} to {} broken: {}", name, target->name(), why));
  }

  // At the node: parse and run what arrived, return the reply bytes.
  std::string serve(const std::string& bytes) {
    parser.feed(bytes);
    std::string replies;
    for (size_t i = 0; i < kCommandsPerPieceMax; ++i) {
      std::optional<std::vector<std::string>> argv = parser.next();
      if (!argv) break;
      std::optional<RedisReply> reply = front_reply(*argv);
      if (!reply) reply = target->execute(*argv, client);
      world.trace_line(fmt::format("stream {} at {}: {} -> {}", name, target->name(),
                                   summarize_command(*argv), one_line(describe(*reply))));
      replies += encode_reply(*reply);
    }
    if (!parser.error().empty()) {
      replies += encode_reply(RedisReply::error_of("ERR " + parser.error()));
      fail(parser.error());
    }
    return replies;
  }
};

SimRedisStream::SimRedisStream(World& world, NodeId client_node, RedisNode& target, int client,
                               std::string name, std::function<void(std::string)> on_bytes)
    : state_(std::make_shared<State>(State{.world = world,
                                           .client_node = client_node,
                                           .target = &target,
                                           .client = client,
                                           .name = std::move(name),
                                           .on_bytes = std::move(on_bytes)})) {
  state_->server_incarnation = world.incarnation(target.node());
  world.trace_line(fmt::format("stream {} to {} open", state_->name, target.name()));
}

SimRedisStream::~SimRedisStream() {
  state_->closed = true;
  state_->on_bytes = nullptr;  // messages in flight reach nobody
}

bool SimRedisStream::broken() const { return state_->broken; }

void SimRedisStream::close() {
  if (std::exchange(state_->closed, true)) return;
  state_->world.trace_line(
      fmt::format("stream {} to {} closed by the client", state_->name, state_->target->name()));
}

std::string SimRedisStream::write_now(const std::string& bytes) {
  State& s = *state_;
  if (s.broken || s.closed) return {};
  return s.serve(bytes);
}

void SimRedisStream::write(std::string bytes) {
  State& s = *state_;
  if (s.broken || s.closed) return;
  const uint64_t seq = ++s.sent_to_server;
  const NodeId server = s.target->node();
  const std::string label = fmt::format("stream {} {}B", s.name, bytes.size());
  s.world.network().send(
      s.client_node, server, label, [state = state_, seq, bytes = std::move(bytes)] {
        State& st = *state;
        if (st.broken) return;
        if (st.world.incarnation(st.target->node()) != st.server_incarnation) {
          return st.fail("the server restarted");
        }
        if (seq != st.received_by_server + 1) {
          return st.fail(fmt::format("piece {} lost on the way to the server", seq - 1));
        }
        st.received_by_server = seq;
        std::string replies = st.serve(bytes);
        if (replies.empty()) return;
        const uint64_t back = ++st.sent_to_client;
        const std::string reply_label = fmt::format("stream {} reply {}B", st.name, replies.size());
        st.world.network().send(
            st.target->node(), st.client_node, reply_label,
            [state, back, replies = std::move(replies)] {
              State& c = *state;
              if (c.closed) return;
              if (back != c.received_by_client + 1) {
                c.fail(fmt::format("reply {} lost on the way to the client", back - 1));
              }
              if (c.broken) return;
              c.received_by_client = back;
              if (c.on_bytes) c.on_bytes(replies);
            });
      });
}

}  // namespace lockstep::sim
