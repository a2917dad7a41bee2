#include "sim/network.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "sim/assert.h"
#include "sim/world.h"

namespace lockstep::sim {

Network::Network(World& world, NetworkOptions options) : world_(world), options_(options) {
  validate(options_);
}

void Network::validate(const NetworkOptions& options) {
  LOCKSTEP_SIM_CHECK(
      options.latency_us_min >= 0 && options.latency_us_min <= options.latency_us_max,
      "latency needs 0 <= latency_us_min <= latency_us_max");
  for (const Ratio& r : {options.loss, options.duplicate}) {
    LOCKSTEP_SIM_CHECK(r.denominator > 0 && r.numerator <= r.denominator,
                       "a ratio needs 0 <= numerator <= denominator, denominator > 0");
  }
}

// A zero ratio takes no draw, so turning a fault off leaves the rest of the run's draws alone.
bool Network::draw(Ratio ratio) {
  return ratio.numerator > 0 && world_.prng().chance(ratio.numerator, ratio.denominator);
}

void Network::send(NodeId from, NodeId to, std::string_view label, std::function<void()> on_deliver,
                   Delivery delivery) {
  LOCKSTEP_SIM_CHECK(from >= 0 && static_cast<size_t>(from) < world_.node_count(),
                     "send from no node");
  LOCKSTEP_SIM_CHECK(to >= 0 && static_cast<size_t>(to) < world_.node_count(), "send to no node");
  LOCKSTEP_SIM_CHECK(on_deliver != nullptr, "a message needs a delivery callback");
  ++stats_.sent;
  const std::string text = labels_read() ? std::string(label) : std::string();
  if (!world_.alive(from)) return trace_drop(from, to, text, "sender down");
  if (const CutStyle* cut = cut_of(from, to)) {
    if (*cut == CutStyle::hold)
      return hold(in_flight(from, to, text, std::move(on_deliver), delivery));
    return trace_drop(from, to, text, "cut");
  }
  if (draw(options_.loss)) return trace_drop(from, to, text, "lost");
  if (draw(options_.duplicate)) {
    ++stats_.duplicated;
    send_copy(from, to, text, "send", on_deliver, delivery);
    send_copy(from, to, text, "dup", std::move(on_deliver), delivery);
    return;
  }
  send_copy(from, to, text, "send", std::move(on_deliver), delivery);
}

std::shared_ptr<Network::InFlight> Network::in_flight(NodeId from, NodeId to,
                                                      const std::string& label,
                                                      std::function<void()> on_deliver,
                                                      Delivery delivery) {
  return std::make_shared<InFlight>(InFlight{.network = this,
                                             .from = from,
                                             .to = to,
                                             .incarnation = world_.incarnation(to),
                                             .label = label,
                                             .on_deliver = std::move(on_deliver),
                                             .delivery = delivery,
                                             .sequence = ++next_sequence_});
}

void Network::send_copy(NodeId from, NodeId to, const std::string& label, std::string_view kind,
                        std::function<void()> on_deliver, Delivery delivery) {
  schedule(in_flight(from, to, label, std::move(on_deliver), delivery), kind);
}

void Network::schedule(const std::shared_ptr<InFlight>& message, std::string_view kind) {
  const NodeId from = message->from;
  const NodeId to = message->to;
  const TimeUs now_us = world_.now_us();
  TimeUs arrival_us = now_us + latency_us(from, to);
  if (options_.fifo_links) {
    TimeUs& last_us = last_arrival_slot(from, to);
    arrival_us = std::max(arrival_us, last_us);
    last_us = arrival_us;
  }
  // Same-time arrivals keep send order: the scheduler breaks ties by sequence.
  world_.trace_linef("msg {}->{} {} {} +{}us", from, to, kind, message->label, arrival_us - now_us);
  world_.scheduler().at(arrival_us, [message] { message->network->arrive(message); });
}

void Network::hold(std::shared_ptr<InFlight> message) {
  if (held_.size() >= kHeldMessagesMax) {
    return trace_drop(message->from, message->to, message->label, "hold full");
  }
  world_.trace_linef("msg {}->{} held {}", message->from, message->to, message->label);
  held_.push_back({.message = std::move(message), .since_us = world_.now_us()});
}

TimeUs Network::retransmission_wait_us(TimeUs held_us) {
  LOCKSTEP_SIM_CHECK(held_us >= 0, "held for 0 us or more");
  TimeUs rto_us = kRtoMinUs;
  TimeUs next_us = kRtoMinUs;   // the first retransmission, from when it was held
  while (next_us <= held_us) {  // bounded: at least kRtoMinUs more per round
    rto_us = std::min(rto_us * 2, kRtoMaxUs);
    next_us += rto_us;
  }
  return next_us - held_us;
}

void Network::release_healed() {
  std::stable_sort(held_.begin(), held_.end(), [](const Held& x, const Held& y) {
    return x.message->sequence < y.message->sequence;
  });
  const TimeUs now_us = world_.now_us();
  std::deque<Held> still;
  // Per released link: when its oldest held message is retransmitted, and the last arrival
  // scheduled among those released on it (ordered map: walked by key only).
  std::map<std::pair<NodeId, NodeId>, std::pair<TimeUs, TimeUs>> released;
  // Bounded by what was held before this call: a release schedules, it does not hold again.
  for (Held& h : held_) {
    const NodeId from = h.message->from;
    const NodeId to = h.message->to;
    if (!link_up(from, to)) {
      still.push_back(std::move(h));
      continue;
    }
    const TimeUs held_us = now_us - h.since_us;
    // Send order: the first held on a link is its oldest, whose schedule the link follows.
    const auto at =
        released
            .try_emplace({from, to},
                         std::make_pair(now_us + retransmission_wait_us(held_us), TimeUs{0}))
            .first;
    schedule_release(h.message, at->second.first, held_us, at->second.second);
  }
  held_ = std::move(still);
}

void Network::schedule_release(const std::shared_ptr<InFlight>& message, TimeUs release_at_us,
                               TimeUs held_us, TimeUs& released_last_us) {
  const TimeUs now_us = world_.now_us();
  TimeUs arrival_us = release_at_us + latency_us(message->from, message->to);
  if (options_.fifo_links) arrival_us = std::max(arrival_us, released_last_us);
  released_last_us = arrival_us;
  world_.trace_linef("msg {}->{} release {} +{}us (held {}us, resent after {}us)", message->from,
                     message->to, message->label, arrival_us - now_us, held_us,
                     release_at_us - now_us);
  world_.scheduler().at(arrival_us, [message] { message->network->arrive(message); });
}

const CutStyle* Network::cut_of(NodeId from, NodeId to) const {
  const auto it = cut_.find({from, to});
  return it == cut_.end() ? nullptr : &it->second;
}

// At the destination's door: the link is checked now; the node's state (crashed, restarted,
// paused) is World::deliver_at's business.
void Network::arrive(const std::shared_ptr<InFlight>& message) {
  const InFlight& m = *message;
  if (const CutStyle* cut = cut_of(m.from, m.to)) {
    if (*cut == CutStyle::hold) return hold(message);
    return trace_drop(m.from, m.to, m.label, "cut");
  }
  world_.deliver_at(
      m.to, m.incarnation, world_.now_us(),
      [message] {
        Network& net = *message->network;
        ++net.stats_.delivered;
        net.world_.trace_linef("msg {}->{} recv {}", message->from, message->to, message->label);
        message->on_deliver();
      },
      [message] {
        Network& net = *message->network;
        net.trace_drop(message->from, message->to, message->label,
                       net.world_.alive(message->to) ? "restarted" : "down");
      },
      /*defer_while_paused=*/m.delivery == Delivery::process);
}

void Network::set_node_delay(NodeId node, TimeUs delay_us) {
  LOCKSTEP_SIM_CHECK(node >= 0 && static_cast<size_t>(node) < world_.node_count(),
                     "slow down no node");
  LOCKSTEP_SIM_CHECK(delay_us >= 0, "a node's delay is not negative");
  const auto index = static_cast<size_t>(node);
  if (node_delay_us_.size() <= index) node_delay_us_.resize(index + 1, 0);
  node_delay_us_[index] = delay_us;
  world_.trace_linef("net node {} delay +{}us", node, delay_us);
}

TimeUs Network::latency_us(NodeId from, NodeId to) {
  return world_.prng().between(options_.latency_us_min, options_.latency_us_max) +
         node_delay_us(from) + node_delay_us(to);
}

TimeUs Network::node_delay_us(NodeId node) const {
  const auto index = static_cast<size_t>(node);
  return index < node_delay_us_.size() ? node_delay_us_[index] : 0;
}

TimeUs& Network::last_arrival_slot(NodeId from, NodeId to) {
  const auto row = static_cast<size_t>(from);
  const auto column = static_cast<size_t>(to);
  if (last_arrival_us_.size() <= row) last_arrival_us_.resize(row + 1);
  std::vector<TimeUs>& arrivals = last_arrival_us_[row];
  if (arrivals.size() <= column) arrivals.resize(column + 1, 0);
  return arrivals[column];
}

bool Network::labels_read() const { return world_.trace_wants_text(); }

void Network::trace_drop(NodeId from, NodeId to, std::string_view label, std::string_view why) {
  ++stats_.dropped;
  world_.trace_linef("msg {}->{} drop {} ({})", from, to, label, why);
}

void Network::partition(NodeId from, NodeId to) {
  cut_[{from, to}] = cut_style_;
  if (cut_style_ == CutStyle::hold) {  // a literal format per line shape: the hash reads it
    world_.trace_linef("net stall {}->{}", from, to);
  } else {
    world_.trace_linef("net cut {}->{}", from, to);
  }
}

void Network::partition_both(NodeId a, NodeId b) {
  cut_[{a, b}] = cut_style_;
  cut_[{b, a}] = cut_style_;
  if (cut_style_ == CutStyle::hold) {
    world_.trace_linef("net stall {}<->{}", a, b);
  } else {
    world_.trace_linef("net cut {}<->{}", a, b);
  }
}

void Network::heal(NodeId from, NodeId to) {
  cut_.erase({from, to});
  world_.trace_linef("net heal {}->{}", from, to);
  if (!held_.empty()) release_healed();
}

void Network::heal_all() {
  cut_.clear();
  world_.trace_line("net heal all");
  if (!held_.empty()) release_healed();
}

bool Network::link_up(NodeId from, NodeId to) const { return !cut_.contains({from, to}); }

}  // namespace lockstep::sim
