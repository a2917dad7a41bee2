#include "services/redis/sim/sim_redis_stream.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "services/redis/sim/resp.h"
#include "services/redis/sim/sim_redis_connection.h"
#include "sim/connection_resets.h"

namespace lockstep::sim {

namespace {

constexpr size_t kCommandsPerPieceMax = 100'000;  // a bound on one piece's parse loop
constexpr TimeUs kRtoUs = 200'000;  // Linux's minimum retransmission timeout, doubled per try
constexpr int kRetriesMax = 8;      // then the connection is reset (about 51 s of trying)

// What a client library sends on connecting that lockstep's command table does not have.
std::optional<RedisReply> front_reply(const std::vector<std::string>& argv) {
  const std::string name = upper_ascii(argv[0]);
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
  std::function<void()> on_reset;
  uint64_t server_incarnation = 0;
  RespParser parser;
  uint64_t sent_to_server = 0;      // pieces numbered from 1, per direction
  uint64_t received_by_server = 0;  // the last piece the server took
  uint64_t sent_to_client = 0;
  uint64_t received_by_client = 0;
  bool broken = false;
  bool closed = false;
  TimeUs reset_writes_until_us = 0;  // a reset window: pieces written before then are doomed
  // Retransmission events of the pieces not yet taken, by piece number (ordered maps: nothing
  // here walks them by hash). Bounded by the pieces in flight.
  std::map<uint64_t, EventId> retransmit_to_server;
  std::map<uint64_t, EventId> retransmit_to_client;

  void fail(std::string_view why) {
    if (std::exchange(broken, true)) return;
    world.trace_linef("stream {} to {} broken: {}", name, target->name(), why);
  }
  // At the client: the stream is reset (once; not after the client closed it).
  void reset_client() {
    if (closed || !on_reset) return;
    closed = true;
    world.trace_linef("stream {} to {} reset at the client", name, target->name());
    on_reset();
  }
  // At the node: it broke the stream; its reset travels back like any message.
  void send_reset(const std::shared_ptr<State>& self) {
    world.network().send(
        target->node(), client_node, [&] { return fmt::format("stream {} reset", name); },
        [self] { self->reset_client(); });
  }
  // An RST for a piece the node refused (doomed, or to a restarted node that forgot the
  // connection), sent again while the client has not heard it (it was lost): the client's
  // retransmission of its piece, or of its next one, would draw another. Bounded as a piece's tries.
  static void send_reset_until_heard(const std::shared_ptr<State>& self, int attempt) {
    State& s = *self;
    s.send_reset(self);
    s.world.scheduler().after(kRtoUs << attempt, [self, attempt] {
      State& st = *self;
      if (st.closed || attempt + 1 >= kRetriesMax || !st.world.alive(st.client_node)) return;
      st.world.trace_linef("stream {} sends its reset again (try {})", st.name, attempt + 2);
      send_reset_until_heard(self, attempt + 1);
    });
  }

  // One piece towards the node, and its retransmission (TCP's RTO, doubling) until the node took
  // it, the stream broke, or kRetriesMax tries went unanswered (then it resets, as TCP gives up).
  // A piece written in a reset window carries its doom (SimCall::Doom::none otherwise).
  static void to_server(const std::shared_ptr<State>& self, uint64_t seq,
                        std::shared_ptr<const std::string> bytes, int attempt, SimCall::Doom doom) {
    State& s = *self;
    s.world.network().send(
        s.client_node, s.target->node(),
        [&] { return fmt::format("stream {} {}B", s.name, bytes->size()); },
        [self, seq, bytes, doom] { self->server_receives(self, seq, *bytes, doom); });
    s.retransmit_to_server[seq] = s.world.scheduler().after(kRtoUs << attempt, [self, seq, bytes,
                                                                                attempt, doom] {
      State& st = *self;
      st.retransmit_to_server.erase(seq);
      if (st.broken || st.closed || st.received_by_server >= seq) return;
      if (attempt + 1 >= kRetriesMax) {
        st.fail(fmt::format("piece {} unanswered after {} tries", seq, kRetriesMax));
        return st.reset_client();
      }
      st.world.trace_linef("stream {} retransmits piece {} (try {})", st.name, seq, attempt + 2);
      to_server(self, seq, bytes, attempt + 1, doom);
    });
  }

  void server_receives(const std::shared_ptr<State>& self, uint64_t seq, const std::string& bytes,
                       SimCall::Doom doom) {
    if (broken) return;
    if (world.incarnation(target->node()) != server_incarnation) {
      fail("the server restarted: it refuses the connection");
      return send_reset_until_heard(self, 0);
    }
    if (seq != received_by_server + 1) return;  // a copy, or ahead of a lost piece: resent later
    if (doom == SimCall::Doom::lost_on_the_way) {
      fail(fmt::format("piece {} written during a reset, lost on the way: an RST back", seq));
      return send_reset_until_heard(self, 0);
    }
    received_by_server = seq;
    if (auto it = retransmit_to_server.find(seq); it != retransmit_to_server.end()) {
      world.scheduler().cancel(it->second);  // taken: no retransmission (an ACK, in effect)
      retransmit_to_server.erase(it);
    }
    std::string replies = serve(bytes);
    if (doom == SimCall::Doom::reply_lost) {
      fail(fmt::format("piece {} written during a reset ran, its {}B of replies lost: an RST back",
                       seq, replies.size()));
      return send_reset_until_heard(self, 0);
    }
    if (!replies.empty()) {
      to_client(self, ++sent_to_client, std::make_shared<const std::string>(std::move(replies)), 0);
    }
  }

  // One piece of replies towards the client, retransmitted the same way while the node that sent
  // it is still the same incarnation (a restarted node remembers no connection).
  static void to_client(const std::shared_ptr<State>& self, uint64_t seq,
                        std::shared_ptr<const std::string> bytes, int attempt) {
    State& s = *self;
    s.world.network().send(
        s.target->node(), s.client_node,
        [&] { return fmt::format("stream {} reply {}B", s.name, bytes->size()); },
        [self, seq, bytes] { self->client_receives(seq, *bytes); });
    s.retransmit_to_client[seq] =
        s.world.scheduler().after(kRtoUs << attempt, [self, seq, bytes, attempt] {
          State& st = *self;
          st.retransmit_to_client.erase(seq);
          if (st.broken || st.closed || st.received_by_client >= seq) return;
          if (st.world.incarnation(st.target->node()) != st.server_incarnation ||
              !st.world.alive(st.target->node())) {
            return;
          }
          if (attempt + 1 >= kRetriesMax) {
            st.fail(fmt::format("reply piece {} unanswered after {} tries", seq, kRetriesMax));
            return st.send_reset(self);
          }
          st.world.trace_linef("stream {} retransmits reply piece {} (try {})", st.name, seq,
                               attempt + 2);
          to_client(self, seq, bytes, attempt + 1);
        });
  }

  void client_receives(uint64_t seq, const std::string& bytes) {
    if (closed || broken) return;
    if (seq != received_by_client + 1) return;  // a copy, or ahead of a lost piece
    received_by_client = seq;
    if (auto it = retransmit_to_client.find(seq); it != retransmit_to_client.end()) {
      world.scheduler().cancel(it->second);
      retransmit_to_client.erase(it);
    }
    if (on_bytes) on_bytes(bytes);
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
      world.trace_line_by([&] {
        return fmt::format("stream {} at {}: {} -> {}", name, target->name(),
                           summarize_command(*argv), one_line(describe(*reply)));
      });
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
                               std::string name, std::function<void(std::string)> on_bytes,
                               std::function<void()> on_reset)
    : state_(std::make_shared<State>(State{.world = world,
                                           .client_node = client_node,
                                           .target = &target,
                                           .client = client,
                                           .name = std::move(name),
                                           .on_bytes = std::move(on_bytes),
                                           .on_reset = std::move(on_reset)})) {
  state_->server_incarnation = world.incarnation(target.node());
  world.trace_linef("stream {} to {} open", state_->name, target.name());
}

SimRedisStream::~SimRedisStream() {
  state_->closed = true;
  state_->on_bytes = nullptr;  // messages in flight reach nobody
  state_->on_reset = nullptr;
}

bool SimRedisStream::broken() const { return state_->broken; }

void SimRedisStream::set_target(RedisNode& target) {
  State& s = *state_;
  s.world.trace_linef("stream {} to {} now to {} (failover)", s.name, s.target->name(),
                      target.name());
  s.target = &target;
  s.server_incarnation = s.world.incarnation(target.node());
}

const RedisNode& SimRedisStream::target() const { return *state_->target; }

void SimRedisStream::reset() {
  State& s = *state_;
  if (s.closed) return;  // the client heard of a break already, or closed it
  if (s.broken) {
    // Broken before, and the client not told yet (the node's RST is on its way, or was lost):
    // this RST reaches it now.
    s.world.trace_linef("stream {} to {} reset: broken already, the client not told", s.name,
                        s.target->name());
  } else {
    s.broken = true;  // what is on the wire either way is dropped on arrival
    s.world.trace_linef("stream {} to {} reset: {} pieces and {} reply pieces in flight lost",
                        s.name, s.target->name(), s.sent_to_server - s.received_by_server,
                        s.sent_to_client - s.received_by_client);
  }
  // The client's kernel has the RST now; its reader hears it as soon as the client runs.
  s.world.deliver_at(s.client_node, s.world.incarnation(s.client_node), s.world.now_us(),
                     [self = state_] { self->reset_client(); });
}

void SimRedisStream::reset_writes_until(TimeUs until_us) {
  state_->reset_writes_until_us = std::max(state_->reset_writes_until_us, until_us);
}

void SimRedisStream::close() {
  if (std::exchange(state_->closed, true)) return;
  state_->world.trace_linef("stream {} to {} closed by the client", state_->name,
                            state_->target->name());
}

std::string SimRedisStream::write_now(const std::string& bytes) {
  State& s = *state_;
  if (s.broken || s.closed) return {};
  return s.serve(bytes);
}

void SimRedisStream::write(std::string bytes) {
  State& s = *state_;
  if (s.broken || s.closed) return;
  const SimCall::Doom doom =
      s.world.now_us() < s.reset_writes_until_us ? draw_doom(s.world) : SimCall::Doom::none;
  State::to_server(state_, ++s.sent_to_server,
                   std::make_shared<const std::string>(std::move(bytes)), 0, doom);
}

}  // namespace lockstep::sim
