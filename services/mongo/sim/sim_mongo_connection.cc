#include "services/mongo/sim/sim_mongo_connection.h"

#include <cstdlib>

#include <fmt/format.h>

#include "services/mongo/sim/commands.h"
#include "sim/assert.h"

namespace lockstep::sim {
namespace {

constexpr int64_t kReselectWaitUs = 500'000;  // a driver's minHeartbeatFrequencyMS
constexpr size_t kTraceReplyBytes = 120;

// The network label: "mongo update locks".
std::string label_of(const MongoDocument& command) {
  const std::string name = mongo::command_name(command);
  if (name.empty()) return "mongo (empty)";
  const MongoDocument& target = command.begin().value();
  return target.is_string() ? fmt::format("mongo {} {}", name, target.get<std::string>())
                            : "mongo " + name;
}

bool is_not_primary_code(int64_t code) {
  return code == mongo_error::kNotWritablePrimary || code == 13435 ||
         code == mongo_error::kNotPrimaryOrSecondary || code == mongo_error::kPrimarySteppedDown ||
         code == mongo_error::kInterruptedDueToReplStateChange || code == 91;
}

int64_t code_of(const MongoDocument& doc) {
  if (!doc.is_object() || !doc.contains("code") || !doc["code"].is_number_integer()) return 0;
  return doc["code"].get<int64_t>();
}

// The reply says the member is not (or no longer) primary: forget it.
bool says_not_primary(const MongoDocument& reply) {
  if (is_not_primary_code(code_of(reply))) return true;
  return reply.is_object() && reply.contains("writeConcernError") &&
         is_not_primary_code(code_of(reply["writeConcernError"]));
}

// The term in a hello reply's electionId ("7fffffff" + 16 hex digits), -1 if absent.
int64_t term_of(const MongoDocument& hello) {
  if (!hello.is_object() || !hello.contains("electionId") ||
      !mongo::is_object_id(hello["electionId"]))
    return -1;
  const std::string hex = hello["electionId"]["$oid"].get<std::string>();
  if (hex.size() != 24) return -1;
  return static_cast<int64_t>(std::strtoull(hex.substr(8).c_str(), nullptr, 16));
}

}  // namespace

SimMongoConnection::SimMongoConnection(World& world, NodeId client_node,
                                       MongoReplicaSet& replica_set, int client,
                                       SimMongoConnectionOptions options)
    : world_(world),
      client_node_(client_node),
      replica_set_(replica_set),
      client_(client),
      options_(options),
      resets_(world) {
  LOCKSTEP_SIM_CHECK(options_.command_timeout_us > 0, "command_timeout_us must be positive");
  LOCKSTEP_SIM_CHECK(options_.server_selection_timeout_us >= 0,
                     "server_selection_timeout_us must be >= 0");
  world_.node_name(client_node_);  // checks the id
}

std::string SimMongoConnection::endpoint() const { return "sim:" + replica_set_.name(); }

int64_t SimMongoConnection::local_now_us() const { return world_.monotonic_us(client_node_); }

int64_t SimMongoConnection::deadline_after(int64_t local_us) const {
  return local_us >= kTimeNever - local_now_us() ? kTimeNever : local_now_us() + local_us;
}

std::shared_ptr<SimMongoConnection::Request> SimMongoConnection::send(
    int member, const std::string& database, MongoDocument command,
    std::function<void()> on_reply) {
  LOCKSTEP_SIM_CHECK(world_.in_fiber() && world_.current_node() == client_node_,
                     "run_command() runs on a fiber of the client's node");
  auto request = std::make_shared<Request>();
  request->id = ++next_request_;
  request->member = member;
  request->on_reply = std::move(on_reply);
  if (resets_.refuse_or_track(request, replica_set_.node(member))) {  // found reset: not sent
    world_.trace_linef("mongo c{} #{} not sent: the connection was reset", client_, request->id);
    return request;
  }
  const std::string label = world_.network().label_by([&] { return label_of(command); });
  world_.trace_line_by([&] {
    return fmt::format("mongo c{} #{} -> {}: {}", client_, request->id,
                       replica_set_.member_name(member), mongo::summarize(command));
  });
  World& world = world_;
  MongoReplicaSet& rs = replica_set_;
  const NodeId client_node = client_node_;
  const NodeId server_node = rs.node(member);
  const int client = client_;
  world_.network().send(
      client_node, server_node, label,
      [&world, &rs, member, server_node, client_node, client, label, database,
       command = std::move(command), request, resets = &resets_] {
        if (resets->drops_request(request, server_node, client_node)) {
          world.trace_line_by([&] {
            return fmt::format("mongo c{} #{} lost with its reset connection", client, request->id);
          });
          return;
        }
        if (std::exchange(request->executed, true)) return;  // a duplicate: TCP delivers once
        rs.handle_command(
            member, client, database, command,
            [&world, server_node, client_node, client, label, request](MongoDocument reply) {
              world.network().send(
                  server_node, client_node, [&] { return std::string("reply ").append(label); },
                  [&world, client, request, reply = std::move(reply)]() mutable {
                    if (ConnectionResets::drops_reply(*request)) {
                      world.trace_line_by([&] {
                        return fmt::format("mongo c{} #{} reply lost with its reset connection: {}",
                                           client, request->id,
                                           mongo::compact(reply, kTraceReplyBytes));
                      });
                      return;
                    }
                    if (request->answered || request->abandoned || request->reset) {
                      world.trace_line_by([&] {
                        return fmt::format("mongo c{} #{} {} reply discarded: {}", client,
                                           request->id,
                                           request->answered ? "duplicate"
                                           : request->reset  ? "reset connection's"
                                                             : "late",
                                           mongo::compact(reply, kTraceReplyBytes));
                      });
                      return;
                    }
                    request->answered = true;
                    request->reply = std::move(reply);  // this copy of the message arrives once
                    if (request->on_reply) request->on_reply();
                  },
                  Delivery::
                      buffer);  // the client's kernel takes it even while the client is paused
            });
      });
  return request;
}

void SimMongoConnection::reset(TimeUs for_us) {
  const uint64_t ended = resets_.reset(for_us);
  world_.trace_linef("mongo c{} connection reset{}{}", client_,
                     ended != 0 ? fmt::format(" with #{} in flight", ended) : "",
                     for_us > 0 ? fmt::format(", and again for {}us", for_us) : "");
}

bool SimMongoConnection::select(int64_t deadline_us) {
  for (int attempt = 0;; ++attempt) {
    if (attempt > 0 && local_now_us() >= deadline_us) return false;
    const std::vector<int> candidates = replica_set_.claiming_primary();
    if (!candidates.empty()) {
      auto waiter = std::make_shared<Waiter>();
      World& world = world_;
      std::vector<std::shared_ptr<Request>> probes;
      for (const int member : candidates) {
        probes.push_back(send(member, "admin", MongoDocument{{"hello", 1}},
                              [&world, waiter] { world.wake(*waiter); }));
      }
      const int64_t probe_deadline =
          std::min(deadline_us, deadline_after(options_.command_timeout_us));
      while (true) {
        const bool all = std::all_of(probes.begin(), probes.end(), [](const auto& p) {
          return p->answered || p->ended_by_reset();
        });
        if (all || local_now_us() >= probe_deadline) break;
        *waiter = world_.prepare_park();
        if (world_.park_until_local(*waiter, probe_deadline) == ParkResult::deadline) break;
      }
      int best = -1;
      int64_t best_term = -1;
      for (const auto& probe : probes) {
        if (!probe->answered) {
          probe->abandoned = true;
          world_.trace_linef("mongo c{} #{} hello {}", client_, probe->id,
                             probe->ended_by_reset() ? "lost with a reset" : "timeout");
          continue;
        }
        const int64_t term = term_of(probe->reply);
        const bool writable = probe->reply.value("isWritablePrimary", false);
        world_.trace_linef("mongo c{} #{} <- {}: hello {}", client_, probe->id,
                           replica_set_.member_name(probe->member),
                           writable ? fmt::format("primary term {}", term) : "not primary");
        if (writable && term > best_term) {
          best = probe->member;
          best_term = term;
        }
      }
      if (best >= 0) {
        selected_ = best;
        world_.trace_linef("mongo c{} selects {} (term {})", client_,
                           replica_set_.member_name(best), best_term);
        return true;
      }
    }
    if (local_now_us() >= deadline_us) return false;
    const int64_t remaining_local = deadline_us - local_now_us();
    world_.trace_linef("mongo c{} server selection: no primary yet", client_);
    world_.sleep_for_us(std::max<int64_t>(1, std::min(kReselectWaitUs, remaining_local)));
  }
}

MongoResult SimMongoConnection::run_command(const std::string& database, MongoDocument command) {
  if (selected_ < 0) {
    const int64_t selection_deadline = deadline_after(options_.server_selection_timeout_us);
    if (!select(selection_deadline)) {
      world_.trace_linef("mongo c{} server selection timeout after {}us: no primary", client_,
                         options_.server_selection_timeout_us);
      return MongoResult{
          .status = IoStatus::timeout,
          .message = fmt::format("no primary: server selection in {} timed out after {}us",
                                 endpoint(), options_.server_selection_timeout_us)};
    }
  }
  const int member = selected_;
  const Waiter waiter = world_.prepare_park();
  World& world = world_;
  std::shared_ptr<Request> request =
      send(member, database, std::move(command), [&world, waiter] { world.wake(waiter); });
  const ParkResult woke = world_.park_for_local(waiter, options_.command_timeout_us);
  if (woke == ParkResult::woken && request->ended_by_reset()) {
    request->abandoned = true;
    selected_ = -1;  // the driver reconnects, and selects again
    world_.trace_linef("mongo c{} #{} {}", client_, request->id,
                       request->refused ? "refused: connection reset" : "connection lost");
    return MongoResult{
        .status = request->reset_status(),
        .message = fmt::format("connection to {} ({}) reset{}", endpoint(),
                               replica_set_.member_name(member),
                               request->refused ? ": not sent" : " after the request was sent")};
  }
  if (woke == ParkResult::woken && request->answered) {
    world_.trace_line_by([&] {
      return fmt::format("mongo c{} #{} <- {}: {}", client_, request->id,
                         replica_set_.member_name(member),
                         mongo::compact(request->reply, kTraceReplyBytes));
    });
    if (says_not_primary(request->reply)) selected_ = -1;
    return MongoResult{.status = IoStatus::ok, .reply = std::move(request->reply)};
  }
  // A reply can have been buffered while this fiber's resumption waited out a pause of its node:
  // if it came after the deadline, it is still a timeout. The driver gives the connection up.
  request->abandoned = true;
  resets_.reopen_all();
  selected_ = -1;
  world_.trace_linef("mongo c{} #{} timeout after {}us{}", client_, request->id,
                     options_.command_timeout_us,
                     request->answered ? " (reply came after the deadline: discarded)" : "");
  return MongoResult{
      .status = IoStatus::timeout,
      .message = fmt::format("no reply from {} ({}) within {}us", endpoint(),
                             replica_set_.member_name(member), options_.command_timeout_us)};
}

}  // namespace lockstep::sim
