#include "services/etcd/sim/sim_etcd_connection.h"

#include <algorithm>
#include <deque>
#include <map>

#include <fmt/format.h>

#include "sim/assert.h"

namespace lockstep::sim::etcd {

namespace {

constexpr size_t kTraceReplyBytes = 120;
constexpr size_t kInboxMax = 10'000;  // a stream nobody reads stops queueing (bounded)
// A stream is one TCP connection: a message the network drops is sent again after TCP's
// retransmission timeout (Linux's minimum, doubling per try) until it arrives; after kRetriesMax
// tries the connection is reset, and the client sees the stream broken.
constexpr TimeUs kRtoUs = 200'000;
constexpr int kRetriesMax = 8;

std::string compact(const EtcdJson& body) {
  std::string text = body.dump();
  return text.size() <= kTraceReplyBytes ? text : text.substr(0, kTraceReplyBytes) + "..";
}

// One request in flight, shared by the waiting fiber and the network messages; its transport
// state (answered, abandoned, reset) is the SimCall's.
struct Request : SimCall {
  int http_status = 0;
  EtcdJson reply;
  Waiter waiter;
};

}  // namespace

// A stream's state, shared with the member's pushes.
struct StreamState {
  uint64_t id = 0;
  int member = 0;
  bool opened = false;  // the member got the open (a duplicate is ignored)
  bool closed = false;
  bool broken = false;  // retransmission gave up, or a reset: the client sees an error
  bool reset = false;   // broken by a reset after its open was sent: connection_lost
  std::deque<std::pair<int, EtcdJson>> inbox;
  Waiter waiter;
  bool waiting = false;
  // Messages towards the client, numbered from 1: the last one sent, the last one taken in
  // order, and those that arrived ahead of a lost one (ordered map: walked in order, bounded by
  // kInboxMax).
  uint64_t sent = 0;
  uint64_t taken = 0;
  std::map<uint64_t, std::pair<int, EtcdJson>> ahead;
};

namespace {

void wake_reader(World& world, StreamState& st) {
  if (st.waiting) world.wake(st.waiter);
}

// The client takes message seq: in order into the inbox, or held until those before it came.
void client_takes(World& world, StreamState& st, uint64_t seq, int status, EtcdJson message) {
  if (st.closed || seq <= st.taken || st.ahead.size() >= kInboxMax) return;
  st.ahead.emplace(seq, std::make_pair(status, std::move(message)));
  while (!st.ahead.empty() && st.ahead.begin()->first == st.taken + 1) {
    if (st.inbox.size() < kInboxMax) st.inbox.push_back(std::move(st.ahead.begin()->second));
    st.ahead.erase(st.ahead.begin());
    ++st.taken;
  }
  wake_reader(world, st);
}

// One message of the stream from the member to the client, sent again until it arrived (the
// shared state stands for TCP's ACK), the member restarted (its connection is gone), the client
// closed the stream, or the tries ran out.
void push_reliably(World& world, NodeId server_node, NodeId client_node, uint64_t incarnation,
                   const std::shared_ptr<StreamState>& state, uint64_t seq,
                   std::shared_ptr<const std::pair<int, EtcdJson>> message, int attempt) {
  world.network().send(
      server_node, client_node,
      [&] { return fmt::format("etcd stream #{} msg {}", state->id, seq); },
      [&world, state, seq, message] {
        client_takes(world, *state, seq, message->first, message->second);
      },
      Delivery::buffer);
  world.scheduler().after(kRtoUs << attempt, [&world, server_node, client_node, incarnation, state,
                                              seq, message, attempt] {
    StreamState& st = *state;
    if (st.closed || st.broken || st.taken >= seq || st.ahead.count(seq) != 0) return;
    if (world.incarnation(server_node) != incarnation) return;  // died with the member
    if (attempt + 1 >= kRetriesMax) {
      st.broken = true;
      world.trace_linef("etcd stream #{} reset: message {} unanswered after {} tries", st.id, seq,
                        kRetriesMax);
      return wake_reader(world, st);
    }
    world.trace_linef("etcd stream #{} retransmits message {} (try {})", st.id, seq, attempt + 2);
    push_reliably(world, server_node, client_node, incarnation, state, seq, message, attempt + 1);
  });
}

// The request that opens a stream, sent again the same way until the member took it (a copy is
// ignored there), the client closed the stream, or the tries ran out (then the stream is reset).
void open_reliably(World& world, EtcdCluster& cluster, NodeId client_node, int member, int client,
                   const std::string& path, const EtcdJson& body,
                   const std::shared_ptr<StreamState>& state, int attempt) {
  const NodeId server_node = cluster.node(member);
  world.network().send(
      client_node, server_node, [&] { return "etcd open " + path; },
      [&world, &cluster, member, server_node, client_node, client, path, body, state] {
        // An open still on the wire when its connection was reset is lost with it.
        if (std::exchange(state->opened, true) || state->closed || state->broken) return;
        cluster.open_stream(
            member, client, state->id, path, body,
            [&world, server_node, client_node, state](int status, EtcdJson message) {
              if (state->closed) return;
              push_reliably(
                  world, server_node, client_node, world.incarnation(server_node), state,
                  ++state->sent,
                  std::make_shared<const std::pair<int, EtcdJson>>(status, std::move(message)), 0);
            });
      });
  world.scheduler().after(kRtoUs << attempt, [&world, &cluster, client_node, member, client, path,
                                              body, state, attempt] {
    StreamState& st = *state;
    if (st.opened || st.closed || st.broken) return;
    if (attempt + 1 >= kRetriesMax) {
      st.broken = true;
      world.trace_linef("etcd stream #{} reset: its open unanswered after {} tries", st.id,
                        kRetriesMax);
      return wake_reader(world, st);
    }
    world.trace_linef("etcd stream #{} retransmits its open (try {})", st.id, attempt + 2);
    open_reliably(world, cluster, client_node, member, client, path, body, state, attempt + 1);
  });
}

class SimEtcdStream final : public EtcdStream {
 public:
  SimEtcdStream(World& world, NodeId client_node, EtcdCluster& cluster, int member, int client,
                std::shared_ptr<StreamState> state)
      : world_(world),
        client_node_(client_node),
        cluster_(cluster),
        member_(member),
        client_(client),
        state_(std::move(state)) {}

  ~SimEtcdStream() override {
    state_->closed = true;
    EtcdCluster& cluster = cluster_;
    const int member = member_;
    const uint64_t id = state_->id;
    world_.network().send(client_node_, cluster_.node(member_), "etcd stream cancel",
                          [&cluster, member, id] { cluster.cancel_stream(member, id); });
  }

  EtcdResult next(int64_t timeout_us) override {
    LOCKSTEP_SIM_CHECK(world_.in_fiber() && world_.current_node() == client_node_,
                       "next() runs on a fiber of the client's node");
    if (state_->inbox.empty() && !state_->broken) {
      state_->waiter = world_.prepare_park();
      state_->waiting = true;
      world_.park_for_local(state_->waiter, std::max<int64_t>(0, timeout_us));
      state_->waiting = false;
    }
    if (state_->inbox.empty() && state_->broken) {
      // A reset after the open was sent: the call may have run (a Lock granted, its answer lost).
      return {
          .status = state_->reset ? IoStatus::connection_lost : IoStatus::connection_error,
          .message = fmt::format("the stream to sim:{} was reset", cluster_.member_name(member_))};
    }
    if (state_->inbox.empty()) {
      world_.trace_linef("etcd c{} stream #{} nothing within {}us", client_, state_->id,
                         timeout_us);
      return {.status = IoStatus::timeout,
              .message = fmt::format("no message from sim:{} within {}us",
                                     cluster_.member_name(member_), timeout_us)};
    }
    auto [status, body] = std::move(state_->inbox.front());
    state_->inbox.pop_front();
    world_.trace_line_by([&] {
      return fmt::format("etcd c{} stream #{} <- {}", client_, state_->id, compact(body));
    });
    return {.status = IoStatus::ok, .http_status = status, .body = std::move(body)};
  }

 private:
  World& world_;
  NodeId client_node_;
  EtcdCluster& cluster_;
  int member_;
  int client_;
  std::shared_ptr<StreamState> state_;
};

}  // namespace

SimEtcdConnection::SimEtcdConnection(World& world, NodeId client_node, EtcdCluster& cluster,
                                     int client, SimEtcdConnectionOptions options)
    : world_(world),
      client_node_(client_node),
      cluster_(cluster),
      client_(client),
      options_(std::move(options)),
      resets_(world) {
  LOCKSTEP_SIM_CHECK(options_.request_timeout_us > 0, "request_timeout_us must be positive");
  if (options_.members.empty()) {
    for (int i = 0; i < cluster_.members(); ++i) options_.members.push_back(i);
  }
  world_.node_name(client_node_);  // checks the id
}

std::string SimEtcdConnection::endpoint() const { return "sim:" + cluster_.member_name(member()); }

EtcdResult SimEtcdConnection::call(std::string_view path_view, const EtcdJson& body) {
  LOCKSTEP_SIM_CHECK(world_.in_fiber() && world_.current_node() == client_node_,
                     "call() runs on a fiber of the client's node");
  const std::string path(path_view);
  const int member = this->member();
  auto request = std::make_shared<Request>();
  request->id = ++next_request_;
  request->waiter = world_.prepare_park();
  request->on_reply = [&world = world_, raw = request.get()] { world.wake(raw->waiter); };
  if (resets_.refuse_or_track(request, cluster_.node(member))) {  // found reset: not sent
    request->abandoned = true;
    world_.trace_linef("etcd c{} #{} not sent: the connection was reset", client_, request->id);
    return {.status = IoStatus::connection_error,
            .message =
                fmt::format("connection to sim:{} reset: not sent", cluster_.member_name(member))};
  }
  world_.trace_line_by([&] {
    return fmt::format("etcd c{} #{} -> {}: {} {}", client_, request->id,
                       cluster_.member_name(member), path, compact(body));
  });
  World& world = world_;
  EtcdCluster& cluster = cluster_;
  const NodeId client_node = client_node_;
  const NodeId server_node = cluster_.node(member);
  const int client = client_;
  world_.network().send(
      client_node, server_node, [&] { return "etcd " + path; },
      [&world, &cluster, member, server_node, client_node, client, path, body, request,
       resets = &resets_] {
        if (resets->drops_request(request, server_node, client_node)) {
          world.trace_linef("etcd c{} #{} lost with its reset connection", client, request->id);
          return;
        }
        if (std::exchange(request->executed, true)) return;  // a duplicate: TCP delivers once
        cluster.handle(
            member, client, path, body,
            [&world, server_node, client_node, client, path, request](int status, EtcdJson reply) {
              world.network().send(
                  server_node, client_node, [&] { return "reply etcd " + path; },
                  [&world, client, request, status, reply = std::move(reply)]() mutable {
                    if (ConnectionResets::drops_reply(*request)) {
                      world.trace_line_by([&] {
                        return fmt::format("etcd c{} #{} reply lost with its reset connection: {}",
                                           client, request->id, compact(reply));
                      });
                      return;
                    }
                    if (request->answered || request->abandoned || request->reset) {
                      world.trace_line_by([&] {
                        return fmt::format(
                            "etcd c{} #{} {} reply discarded: {}", client, request->id,
                            request->reset ? "reset connection's" : "late", compact(reply));
                      });
                      return;
                    }
                    request->answered = true;
                    request->http_status = status;
                    request->reply = std::move(reply);
                    world.wake(request->waiter);
                  },
                  Delivery::buffer);
            });
      });
  world_.park_for_local(request->waiter, options_.request_timeout_us);
  if (request->answered) {
    world_.trace_line_by([&] {
      return fmt::format(
          "etcd c{} #{} <- {}{}", client_, request->id,
          request->http_status == 200 ? "" : fmt::format("HTTP {} ", request->http_status),
          compact(request->reply));
    });
    return {.status = IoStatus::ok,
            .http_status = request->http_status,
            .body = std::move(request->reply)};
  }
  request->abandoned = true;
  if (request->ended_by_reset()) {
    world_.trace_linef("etcd c{} #{} connection lost", client_, request->id);
    return {.status = request->reset_status(),
            .message = fmt::format("connection to sim:{} reset after the request was sent",
                                   cluster_.member_name(member))};
  }
  resets_.reopen_all();  // clientv3 gives the connection up and moves on
  current_ = (current_ + 1) % options_.members.size();
  world_.trace_linef("etcd c{} #{} timeout after {}us", client_, request->id,
                     options_.request_timeout_us);
  return {.status = IoStatus::timeout,
          .message = fmt::format("no reply from sim:{} within {}us", cluster_.member_name(member),
                                 options_.request_timeout_us)};
}

std::unique_ptr<EtcdStream> SimEtcdConnection::open(std::string_view path_view,
                                                    const EtcdJson& body) {
  LOCKSTEP_SIM_CHECK(world_.in_fiber() && world_.current_node() == client_node_,
                     "open() runs on a fiber of the client's node");
  const std::string path(path_view);
  const int member = this->member();
  auto state = std::make_shared<StreamState>();
  state->id = (static_cast<uint64_t>(client_ + 1) << 32) | ++next_request_;
  state->member = member;
  if (resets_.resetting()) {  // found reset on the write: nothing goes out
    state->broken = true;
    world_.trace_linef("etcd c{} stream #{} not sent: the connection was reset", client_,
                       state->id);
    return std::make_unique<SimEtcdStream>(world_, client_node_, cluster_, member, client_,
                                           std::move(state));
  }
  world_.trace_line_by([&] {
    return fmt::format("etcd c{} stream #{} -> {}: {} {}", client_, state->id,
                       cluster_.member_name(member), path, compact(body));
  });
  std::erase_if(streams_, [](const std::weak_ptr<StreamState>& stream) {
    const std::shared_ptr<StreamState> live = stream.lock();
    return !live || live->closed || live->broken;
  });
  LOCKSTEP_SIM_CHECK(streams_.size() < kStreamsMax, "too many open streams on one connection");
  streams_.push_back(state);
  open_reliably(world_, cluster_, client_node_, member, client_, path, body, state, 0);
  return std::make_unique<SimEtcdStream>(world_, client_node_, cluster_, member, client_,
                                         std::move(state));
}

void SimEtcdConnection::reset(TimeUs for_us) {
  const uint64_t ended = resets_.reset(for_us);
  size_t broken = 0;
  for (const std::weak_ptr<StreamState>& stream : streams_) {
    const std::shared_ptr<StreamState> live = stream.lock();
    if (!live || live->closed || live->broken) continue;
    break_stream(*live);
    ++broken;
  }
  streams_.clear();
  world_.trace_linef("etcd c{} connection to {} reset{}{}{}", client_,
                     cluster_.member_name(member()),
                     ended != 0 ? fmt::format(" with #{} in flight", ended) : "",
                     broken != 0 ? fmt::format(", {} stream(s) broken", broken) : "",
                     for_us > 0 ? fmt::format(", and again for {}us", for_us) : "");
}

void SimEtcdConnection::break_stream(StreamState& stream) {
  stream.broken = true;
  stream.reset = true;
  wake_reader(world_, stream);
  // The RST reaches the member's end too: it ends the call (a Lock RPC deletes its queued key).
  EtcdCluster& cluster = cluster_;
  const int member = stream.member;
  const uint64_t id = stream.id;
  world_.network().send(client_node_, cluster_.node(member), "etcd stream RST",
                        [&cluster, member, id] { cluster.cancel_stream(member, id); });
}

}  // namespace lockstep::sim::etcd
