#include "services/redis/sim/sim_redis_connection.h"

#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "sim/assert.h"

namespace lockstep::sim {
namespace {

constexpr size_t kTraceArgsMax = 6;
constexpr size_t kTraceArgBytesMax = 24;

std::string shorten(const std::string& s) {
  std::string out = s.size() <= kTraceArgBytesMax ? s : s.substr(0, kTraceArgBytesMax) + "..";
  for (char& c : out) c = c == '\n' || c == '\r' ? ' ' : c;
  return out;
}

// The network label: the command and, when there is one, its key ("SET lock:a", "EVALSHA lock:a").
std::string label_of(const std::vector<std::string>& argv) {
  if (argv.empty()) return "(empty)";
  std::string name = upper_ascii(argv[0]);
  const bool script = name == "EVAL" || name == "EVALSHA";
  const size_t key_at = script ? 3 : 1;
  const bool has_key = script ? argv.size() > 3 && argv[2] != "0" : argv.size() > 1;
  return has_key ? name + " " + shorten(argv[key_at]) : name;
}

}  // namespace

std::string upper_ascii(std::string name) {
  for (char& c : name) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  return name;
}

std::string summarize_command(const std::vector<std::string>& argv) {
  std::string out;
  for (size_t i = 0; i < argv.size() && i < kTraceArgsMax; ++i) {
    out += (i ? " " : "") + (i == 0 ? upper_ascii(argv[i]) : shorten(argv[i]));
  }
  if (argv.size() > kTraceArgsMax) out += fmt::format(" (+{} args)", argv.size() - kTraceArgsMax);
  return out;
}

SimRedisConnection::SimRedisConnection(World& world, NodeId client_node, RedisNode& target,
                                       int client, SimRedisConnectionOptions options)
    : world_(world),
      client_node_(client_node),
      target_(&target),
      client_(client),
      options_(options),
      resets_(world) {
  LOCKSTEP_SIM_CHECK(options_.command_timeout_us > 0, "command_timeout_us must be positive");
  world_.node_name(client_node_);  // checks the id
}

std::string SimRedisConnection::endpoint() const { return "sim:" + target_->name(); }

std::shared_ptr<SimRedisRequest> SimRedisConnection::send(const std::vector<std::string>& argv,
                                                          std::function<void()> on_reply) {
  LOCKSTEP_SIM_CHECK(world_.in_fiber() && world_.current_node() == client_node_,
                     "send() runs on a fiber of the client's node");
  auto request = std::make_shared<SimRedisRequest>();
  request->id = ++next_request_;
  request->on_reply = std::move(on_reply);
  RedisNode* server = target_;
  if (resets_.refuse_or_track(request, server->node())) {  // found reset on the write: not sent
    world_.trace_linef("redis c{} #{} not sent: the connection was reset", client_, request->id);
    return request;
  }
  world_.trace_line_by([&] {
    return fmt::format("redis c{} #{} -> {}: {}", client_, request->id, server->name(),
                       summarize_command(argv));
  });
  World& world = world_;
  const NodeId client_node = client_node_;
  const int client = client_;
  world_.network().send(
      client_node, server->node(), [&] { return label_of(argv); },
      [&world, server, client_node, client, argv, request, resets = &resets_] {
        if (resets->drops_request(request, server->node(), client_node)) {
          world.trace_line_by([&] {
            return fmt::format("redis c{} #{} lost with its reset connection", client, request->id);
          });
          return;
        }
        if (std::exchange(request->executed, true)) return;  // a duplicate: TCP delivers once
        RedisReply reply = server->execute(argv, client);
        world.network().send(
            server->node(), client_node,
            [&] { return std::string("reply ").append(label_of(argv)); },
            [&world, client, request, reply = std::move(reply)]() mutable {
              if (ConnectionResets::drops_reply(*request)) {
                world.trace_line_by([&] {
                  return fmt::format("redis c{} #{} reply lost with its reset connection: {}",
                                     client, request->id, describe(reply));
                });
                return;
              }
              if (request->answered || request->abandoned || request->reset) {
                world.trace_line_by([&] {
                  return fmt::format("redis c{} #{} {} reply discarded: {}", client, request->id,
                                     request->answered ? "duplicate"
                                     : request->reset  ? "reset connection's"
                                                       : "late",
                                     describe(reply));
                });
                return;
              }
              request->answered = true;
              request->reply = std::move(reply);  // this copy of the message arrives once
              if (request->on_reply) request->on_reply();
            },
            Delivery::buffer);  // the client's kernel takes it even while the client is paused
      });
  return request;
}

void SimRedisConnection::reset(TimeUs for_us) {
  const uint64_t ended = resets_.reset(for_us);
  world_.trace_linef("redis c{} connection to {} reset{}{}", client_, target_->name(),
                     ended != 0 ? fmt::format(" with #{} in flight", ended) : "",
                     for_us > 0 ? fmt::format(", and again for {}us", for_us) : "");
}

RedisResult SimRedisConnection::reset_result(const SimRedisRequest& request) const {
  if (!request.refused) world_.trace_linef("redis c{} #{} connection lost", client_, request.id);
  return RedisResult{
      .status = request.reset_status(),
      .message = fmt::format("connection to {} reset{}", endpoint(),
                             request.refused ? ": not sent" : " after the request was sent")};
}

RedisResult SimRedisConnection::finish(SimRedisRequest& request, int64_t waited_us) {
  if (request.ended_by_reset()) {
    request.abandoned = true;
    return reset_result(request);
  }
  if (request.answered) {
    world_.trace_line_by([&] {
      return fmt::format("redis c{} #{} <- {}", client_, request.id, describe(request.reply));
    });
    return RedisResult{.status = IoStatus::ok, .reply = std::move(request.reply)};
  }
  request.abandoned = true;
  world_.trace_linef("redis c{} #{} timeout after {}us", client_, request.id, waited_us);
  return RedisResult{.status = IoStatus::timeout,
                     .message = fmt::format("no reply from {} within {}us", endpoint(), waited_us)};
}

// Leaves readers_ however command() ends.
class SimRedisConnection::ReaderEntry {
 public:
  ReaderEntry(std::vector<Reader*>& readers, Reader& reader) : readers_(readers), reader_(reader) {
    LOCKSTEP_SIM_CHECK(readers_.size() < kReadersMax, "too many callers waiting on one connection");
    readers_.push_back(&reader_);
  }
  ~ReaderEntry() { std::erase(readers_, &reader_); }
  ReaderEntry(const ReaderEntry&) = delete;
  ReaderEntry& operator=(const ReaderEntry&) = delete;

 private:
  std::vector<Reader*>& readers_;
  Reader& reader_;
};

void SimRedisConnection::on_command_reply(SimRedisRequest& request) {
  if (request.ended_by_reset()) {  // the RST reaches the caller that sent it
    for (Reader* reader : readers_) {
      if (reader->request_id == request.id && !reader->reply) world_.wake(reader->waiter);
    }
    return;
  }
  // The reply is the next bytes on the stream: whoever is reading takes them. One caller at a
  // time (the adapter contract) is one reader, who sent it; callers that do not take turns race
  // for it, as threads blocked in recv() on one socket do.
  // Counted, then picked by rank: no allocation per reply, and no draw for a lone reader.
  const auto waits = [](const Reader* r) { return !r->reply; };
  const auto waiting = static_cast<size_t>(std::count_if(readers_.begin(), readers_.end(), waits));
  if (waiting == 0) {
    world_.trace_line_by([&] {
      return fmt::format("redis c{} #{} reply read by nobody (its caller read another's): {}",
                         client_, request.id, describe(request.reply));
    });
    return;
  }
  size_t rank = waiting == 1 ? 0 : world_.prng().below(waiting);
  Reader* reader = nullptr;
  for (Reader* r : readers_) {
    if (waits(r) && rank-- == 0) {
      reader = r;
      break;
    }
  }
  LOCKSTEP_SIM_CHECK(reader != nullptr, "the picked reader is one of those waiting");
  if (reader->request_id != request.id) {
    world_.trace_linef("redis c{} #{} reply read by the caller of #{}", client_, request.id,
                       reader->request_id);
  }
  reader->reply = std::move(request.reply);
  world_.wake(reader->waiter);
}

RedisResult SimRedisConnection::command(const std::vector<std::string>& argv) {
  Reader reader{.waiter = world_.prepare_park()};
  const ReaderEntry entry(readers_, reader);
  std::shared_ptr<SimRedisRequest> request = send(argv, {});
  reader.request_id = request->id;
  // Set before this fiber yields: a refusal or a reply is delivered by a later event.
  request->on_reply = [this, raw = request.get()] { on_command_reply(*raw); };
  const ParkResult woke = world_.park_for_local(reader.waiter, options_.command_timeout_us);
  if (woke == ParkResult::woken && reader.reply) {
    world_.trace_line_by([&] {
      return fmt::format("redis c{} #{} <- {}", client_, request->id, describe(*reader.reply));
    });
    return RedisResult{.status = IoStatus::ok, .reply = std::move(*reader.reply)};
  }
  if (woke == ParkResult::woken && request->ended_by_reset()) {
    request->abandoned = true;
    return reset_result(*request);
  }
  // A reply can have been buffered while this fiber's resumption waited out a pause of its node:
  // if it came after the deadline, it is still a timeout. The client gives up on the connection.
  request->abandoned = true;
  resets_.reopen_all();
  world_.trace_linef("redis c{} #{} timeout after {}us{}", client_, request->id,
                     options_.command_timeout_us,
                     reader.reply ? " (reply came after the deadline: discarded)" : "");
  return RedisResult{.status = IoStatus::timeout,
                     .message = fmt::format("no reply from {} within {}us", endpoint(),
                                            options_.command_timeout_us)};
}

}  // namespace lockstep::sim
