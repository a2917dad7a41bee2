#include "sim/byte_stream.h"

#include <map>
#include <utility>

#include <fmt/format.h>

#include "sim/assert.h"
#include "sim/connection_resets.h"

namespace lockstep::sim {

namespace {

constexpr TimeUs kRtoUs = 200'000;  // Linux's minimum retransmission timeout, doubled per try
constexpr int kRetriesMax = 8;      // then the connection is reset (about 51 s of trying)

}  // namespace

struct ServerEnd::State {
  World& world;
  ByteStreamOptions options;
  std::unique_ptr<StreamFront> front;
  std::function<void(std::string)> on_bytes;
  std::function<void()> on_reset;
  uint64_t server_incarnation = 0;
  uint64_t sent_to_server = 0;      // pieces numbered from 1, per direction
  uint64_t received_by_server = 0;  // the last piece the server took
  uint64_t sent_to_client = 0;
  uint64_t received_by_client = 0;
  bool broken = false;
  bool closed = false;         // the client closed it or heard it end: nothing more reaches it
  bool fin_sent = false;       // closed by the client towards a front that hears it: keep sending
  bool server_closed = false;  // the server sent its FIN
  TimeUs reset_writes_until_us = 0;  // a reset window: pieces written before then are doomed
  // Retransmission events of the pieces not yet taken, by piece number (ordered maps: nothing
  // here walks them by hash). Bounded by the pieces in flight.
  std::map<uint64_t, EventId> retransmit_to_server;
  std::map<uint64_t, EventId> retransmit_to_client;

  NodeId kernel() const { return options.kernel_node.value_or(options.client_node); }
  const std::string& name() const { return options.name; }
  std::string_view server_name() const { return front->name(); }
  NodeId server() const { return front->node(); }

  void fail(std::string_view why) {
    if (std::exchange(broken, true)) return;
    world.trace_linef("stream {} to {} broken: {}", name(), server_name(), why);
  }
  // On the client's node: fn, now when the kernel is the client's node, else handed to the
  // process (deferred while it is paused, dropped once it crashed).
  void to_process(std::function<void()> fn) {
    if (!options.kernel_node) return fn();
    world.deliver_at(options.client_node, world.incarnation(options.client_node), world.now_us(),
                     std::move(fn));
  }
  // At the client: the stream is reset (once; not after the client closed it).
  void reset_client() {
    if (closed || !on_reset) return;
    closed = true;
    world.trace_linef("stream {} to {} reset at the client", name(), server_name());
    on_reset();
  }
  // Broken by the protocol: the server answers (its error) and closes the connection, as Redis
  // and gRPC servers do, so the client reads the answer and then hears the end.
  void closes_if_broken(StreamFront::Served& served) {
    if (served.broken.empty()) return;
    world.trace_linef("stream {} to {}: protocol broken: {}", name(), server_name(), served.broken);
    served.close = true;
  }
  // At the server: it broke the stream; its reset travels back like any message.
  void send_reset(const std::shared_ptr<State>& self) {
    if (front->hears_client_end()) front->client_end(true);
    world.network().send(
        server(), kernel(), [&] { return fmt::format("stream {} reset", name()); },
        [self] { self->to_process([self] { self->reset_client(); }); });
  }
  // An RST for a piece the server refused (doomed, or to a restarted server that forgot the
  // connection), sent again while the client has not heard it (it was lost): the client's
  // retransmission of its piece, or of its next one, would draw another. Bounded as a piece's tries.
  static void send_reset_until_heard(const std::shared_ptr<State>& self, int attempt) {
    State& s = *self;
    s.send_reset(self);
    s.world.scheduler().after(kRtoUs << attempt, [self, attempt] {
      State& st = *self;
      if (st.closed || attempt + 1 >= kRetriesMax || !st.world.alive(st.options.client_node)) {
        return;
      }
      st.world.trace_linef("stream {} sends its reset again (try {})", st.name(), attempt + 2);
      send_reset_until_heard(self, attempt + 1);
    });
  }

  // One piece towards the server (bytes, or the client's FIN), and its retransmission (TCP's RTO,
  // doubling) until the server took it, the stream broke, or kRetriesMax tries went unanswered
  // (then it resets, as TCP gives up). A piece written in a reset window carries its doom
  // (SimCall::Doom::none otherwise).
  static void to_server(const std::shared_ptr<State>& self, uint64_t seq,
                        std::shared_ptr<const std::string> bytes, int attempt, SimCall::Doom doom,
                        bool fin = false) {
    State& s = *self;
    s.world.network().send(
        s.kernel(), s.server(),
        [&] {
          return fin ? fmt::format("stream {} FIN", s.name())
                     : fmt::format("stream {} {}B", s.name(), bytes->size());
        },
        [self, seq, bytes, doom, fin] { self->server_receives(self, seq, *bytes, doom, fin); });
    s.retransmit_to_server[seq] =
        s.world.scheduler().after(kRtoUs << attempt, [self, seq, bytes, attempt, doom, fin] {
          State& st = *self;
          st.retransmit_to_server.erase(seq);
          if (st.broken || (st.closed && !st.fin_sent) || st.received_by_server >= seq) return;
          if (attempt + 1 >= kRetriesMax) {
            st.fail(fmt::format("piece {} unanswered after {} tries", seq, kRetriesMax));
            return st.to_process([self] { self->reset_client(); });
          }
          st.world.trace_linef("stream {} retransmits piece {} (try {})", st.name(), seq,
                               attempt + 2);
          to_server(self, seq, bytes, attempt + 1, doom, fin);
        });
  }

  void server_receives(const std::shared_ptr<State>& self, uint64_t seq, const std::string& bytes,
                       SimCall::Doom doom, bool fin) {
    if (broken) return;
    if (world.incarnation(server()) != server_incarnation) {
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
    if (fin) return front->client_end(false);
    StreamFront::Served served = front->serve(bytes);
    closes_if_broken(served);
    if (doom == SimCall::Doom::reply_lost) {
      fail(fmt::format("piece {} written during a reset ran, its {}B of replies lost: an RST back",
                       seq, served.replies.size()));
      return send_reset_until_heard(self, 0);
    }
    if (!served.replies.empty()) {
      to_client(self, ++sent_to_client,
                std::make_shared<const std::string>(std::move(served.replies)), 0);
    }
    if (served.close && !std::exchange(server_closed, true)) {
      to_client(self, ++sent_to_client, std::make_shared<const std::string>(), 0, /*fin=*/true);
    }
  }

  // One piece towards the client (bytes, or the server's FIN), retransmitted the same way while
  // the server that sent it is still the same incarnation (a restarted one remembers no
  // connection).
  static void to_client(const std::shared_ptr<State>& self, uint64_t seq,
                        std::shared_ptr<const std::string> bytes, int attempt, bool fin = false) {
    State& s = *self;
    s.world.network().send(
        s.server(), s.kernel(),
        [&] {
          return fin ? fmt::format("stream {} server FIN", s.name())
                     : fmt::format("stream {} reply {}B", s.name(), bytes->size());
        },
        [self, seq, bytes, fin] { client_receives(self, seq, *bytes, fin); });
    s.retransmit_to_client[seq] =
        s.world.scheduler().after(kRtoUs << attempt, [self, seq, bytes, attempt, fin] {
          State& st = *self;
          st.retransmit_to_client.erase(seq);
          if (st.broken || st.closed || st.received_by_client >= seq) return;
          if (st.world.incarnation(st.server()) != st.server_incarnation ||
              !st.world.alive(st.server())) {
            return;
          }
          if (attempt + 1 >= kRetriesMax) {
            st.fail(fmt::format("reply piece {} unanswered after {} tries", seq, kRetriesMax));
            return st.send_reset(self);
          }
          st.world.trace_linef("stream {} retransmits reply piece {} (try {})", st.name(), seq,
                               attempt + 2);
          to_client(self, seq, bytes, attempt + 1, fin);
        });
  }

  // At the client's kernel: a piece from the server, handed to the process in order.
  static void client_receives(const std::shared_ptr<State>& self, uint64_t seq,
                              const std::string& bytes, bool fin) {
    State& s = *self;
    if (s.closed || s.broken) return;
    if (seq != s.received_by_client + 1) return;  // a copy, or ahead of a lost piece
    s.received_by_client = seq;
    if (auto it = s.retransmit_to_client.find(seq); it != s.retransmit_to_client.end()) {
      s.world.scheduler().cancel(it->second);
      s.retransmit_to_client.erase(it);
    }
    if (fin) {
      return s.to_process([self] {
        State& st = *self;
        if (st.closed || !st.on_reset) return;
        st.closed = true;
        st.world.trace_linef("stream {} to {} closed by the server", st.name(), st.server_name());
        st.on_reset();
      });
    }
    if (!s.options.kernel_node) {
      if (s.on_bytes) s.on_bytes(bytes);
      return;
    }
    s.to_process([self, bytes] {
      if (!self->closed && self->on_bytes) self->on_bytes(bytes);
    });
  }
};

void ServerEnd::send(std::string bytes) const {
  const std::shared_ptr<State> self = state_.lock();
  if (!self || self->broken || self->server_closed || bytes.empty()) return;
  State::to_client(self, ++self->sent_to_client,
                   std::make_shared<const std::string>(std::move(bytes)), 0);
}

void ServerEnd::close() const {
  const std::shared_ptr<State> self = state_.lock();
  if (!self || self->broken || std::exchange(self->server_closed, true)) return;
  State::to_client(self, ++self->sent_to_client, std::make_shared<const std::string>(), 0,
                   /*fin=*/true);
}

bool ServerEnd::open() const {
  const std::shared_ptr<State> self = state_.lock();
  return self && !self->broken && !self->closed && !self->server_closed;
}

SimByteStream::SimByteStream(World& world, ByteStreamOptions options,
                             std::unique_ptr<StreamFront> front,
                             std::function<void(std::string)> on_bytes,
                             std::function<void()> on_reset)
    : state_(
          std::make_shared<ServerEnd::State>(ServerEnd::State{.world = world,
                                                              .options = std::move(options),
                                                              .front = std::move(front),
                                                              .on_bytes = std::move(on_bytes),
                                                              .on_reset = std::move(on_reset)})) {
  LOCKSTEP_SIM_CHECK(state_->front != nullptr, "a stream has a front");
  ServerEnd end;
  end.state_ = state_;
  state_->front->attach(end);
  state_->server_incarnation = world.incarnation(state_->server());
  world.trace_linef("stream {} to {} open", state_->name(), state_->server_name());
}

SimByteStream::~SimByteStream() {
  state_->closed = true;
  state_->on_bytes = nullptr;  // messages in flight reach nobody
  state_->on_reset = nullptr;
}

bool SimByteStream::broken() const { return state_->broken; }

StreamFront& SimByteStream::front() { return *state_->front; }
const StreamFront& SimByteStream::front() const { return *state_->front; }

void SimByteStream::set_front(std::unique_ptr<StreamFront> front) {
  ServerEnd::State& s = *state_;
  LOCKSTEP_SIM_CHECK(front != nullptr, "a stream has a front");
  s.world.trace_linef("stream {} to {} now to {} (failover)", s.name(), s.server_name(),
                      front->name());
  s.front = std::move(front);
  ServerEnd end;
  end.state_ = state_;
  s.front->attach(end);
  s.server_incarnation = s.world.incarnation(s.server());
}

void SimByteStream::reset() {
  ServerEnd::State& s = *state_;
  if (s.closed) return;  // the client heard of a break already, or closed it
  if (s.broken) {
    // Broken before, and the client not told yet (the server's RST is on its way, or was lost):
    // this RST reaches it now.
    s.world.trace_linef("stream {} to {} reset: broken already, the client not told", s.name(),
                        s.server_name());
  } else {
    s.broken = true;  // what is on the wire either way is dropped on arrival
    s.world.trace_linef("stream {} to {} reset: {} pieces and {} reply pieces in flight lost",
                        s.name(), s.server_name(), s.sent_to_server - s.received_by_server,
                        s.sent_to_client - s.received_by_client);
    if (s.front->hears_client_end()) {
      // The RST reaches the server's end too (lost on a cut path: its keepalive finds out).
      s.world.network().send(
          s.kernel(), s.server(), [&] { return fmt::format("stream {} RST", s.name()); },
          [self = state_] { self->front->client_end(true); });
    }
  }
  // The client's kernel has the RST now; its reader hears it as soon as the client runs.
  s.world.deliver_at(s.options.client_node, s.world.incarnation(s.options.client_node),
                     s.world.now_us(), [self = state_] { self->reset_client(); });
}

void SimByteStream::reset_writes_until(TimeUs until_us) {
  state_->reset_writes_until_us = std::max(state_->reset_writes_until_us, until_us);
}

void SimByteStream::close() {
  ServerEnd::State& s = *state_;
  if (std::exchange(s.closed, true)) return;
  s.world.trace_linef("stream {} to {} closed by the client", s.name(), s.server_name());
  if (s.broken || !s.front->hears_client_end()) return;
  s.fin_sent = true;
  ServerEnd::State::to_server(state_, ++s.sent_to_server, std::make_shared<const std::string>(), 0,
                              SimCall::Doom::none, /*fin=*/true);
}

std::string SimByteStream::write_now(const std::string& bytes) {
  ServerEnd::State& s = *state_;
  if (s.broken || s.closed) return {};
  StreamFront::Served served = s.front->serve(bytes);
  s.closes_if_broken(served);
  if (served.close && !std::exchange(s.server_closed, true)) {  // its FIN after the answer
    ServerEnd::State::to_client(state_, ++s.sent_to_client, std::make_shared<const std::string>(),
                                0, /*fin=*/true);
  }
  return std::move(served.replies);
}

void SimByteStream::write(std::string bytes) {
  ServerEnd::State& s = *state_;
  if (s.broken || s.closed) return;
  const SimCall::Doom doom =
      s.world.now_us() < s.reset_writes_until_us ? draw_doom(s.world) : SimCall::Doom::none;
  ServerEnd::State::to_server(state_, ++s.sent_to_server,
                              std::make_shared<const std::string>(std::move(bytes)), 0, doom);
}

}  // namespace lockstep::sim
