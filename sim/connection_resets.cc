#include "sim/connection_resets.h"

#include <algorithm>

#include "sim/assert.h"

namespace lockstep::sim {

void hear_reset(SimCall& call) {
  if (call.answered || call.abandoned || call.ended_by_reset()) return;
  call.reset = true;
  if (call.on_reply) call.on_reply();  // wakes the caller, as the RST does
}

SimCall::Doom draw_doom(World& world) {
  return world.prng().chance(1, 2) ? SimCall::Doom::lost_on_the_way : SimCall::Doom::reply_lost;
}

uint64_t ConnectionResets::reset(TimeUs for_us) {
  LOCKSTEP_SIM_CHECK(for_us >= 0, "a reset lasts 0 us or more");
  opened_.clear();
  resetting_until_us_ = std::max(resetting_until_us_, world_.now_us() + for_us);
  const std::shared_ptr<SimCall> call = in_flight_.lock();
  if (!call || call->answered || call->abandoned || call->ended_by_reset()) {
    pending_ = true;
    return 0;
  }
  hear_reset(*call);
  return call->id;
}

bool ConnectionResets::refuse(std::shared_ptr<SimCall> call) {
  pending_ = false;
  call->refused = true;
  // As at once as a socket error comes, by an event now: a fan-out counts its replies from its
  // own fiber, after it sent them all.
  world_.scheduler().at(world_.now_us(), [call] {
    if (call->on_reply && !call->abandoned) call->on_reply();
  });
  return true;
}

uint64_t ConnectionResets::opened_to(NodeId server) {
  const auto [at, opened] = opened_.try_emplace(server, world_.incarnation(server));
  (void)opened;
  return at->second;
}

bool ConnectionResets::half_open(std::shared_ptr<SimCall> call, NodeId server, NodeId client) {
  // Only the connection this call was on: one opened since, to the new incarnation, stays.
  const auto it = opened_.find(server);
  if (it != opened_.end() && it->second == call->server_incarnation) opened_.erase(it);
  world_.trace_linef("node {} restarted since #{}'s connection opened: RST", server, call->id);
  send_rst(std::move(call), server, client);
  return true;
}

void ConnectionResets::doom(SimCall& call) { call.doom = draw_doom(world_); }

void ConnectionResets::send_rst(std::shared_ptr<SimCall> call, NodeId server, NodeId client) const {
  world_.network().send(
      server, client, "RST", [call] { hear_reset(*call); }, Delivery::buffer);
}

bool ConnectionResets::drops_reply(SimCall& call) {
  if (call.doom != SimCall::Doom::reply_lost) return false;
  hear_reset(call);
  return true;
}

}  // namespace lockstep::sim
