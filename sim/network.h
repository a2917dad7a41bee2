#pragma once
// The simulated network between nodes.
//
// A message is a callback run on the destination node when it arrives. Latency is drawn from the
// run's PRNG between latency_us_min and latency_us_max; loss and duplication are integer ratios.
// With fifo_links (the default, as TCP), messages on one directed link arrive in the order sent.
// A slow node (set_node_delay) adds its delay to every message it sends or receives, on top of the
// drawn latency and without a draw of its own: a distant or loaded host for the whole run.
// Partitions are directed: partition(a, b) cuts what a sends to b; partition_both cuts both ways.
// A cut drops (CutStyle::drop: a route gone, a firewall that drops) or holds (CutStyle::hold, the
// `stall` fault: TCP retransmitting through an outage): a message sent on a holding cut, or
// reaching one, waits, and the heal releases what waited in the order it was sent, so a request
// sent during the outage reaches its server late, after its caller may have given up (a kernel's
// send buffer outlives the caller's timeout and its process). A held message goes out at its
// connection's next retransmission after the heal, not at the heal: TCP retransmits at 200 ms
// after the first send, doubling (0.2, 0.6, 1.4, 3.0 s ... from when it was held, at most 120 s
// apart), so what waited on a link is released at the first such instant after the heal (the
// oldest message's schedule), in send order, each with a fresh latency. Messages sent after the
// heal are not queued behind them: they stand for a new connection (a client that gave up on the
// old one reconnects at once), so a reconnect's request can overtake bytes still waiting on the
// old connection. Real TCP gives up after tcp_retries2 (about 15 minutes); the stalls drawn are
// far shorter, so nothing held is given up. A message is dropped if its link is cut to drop when it is sent or when it
// would arrive, if the holding queue is full (kHeldMessagesMax), or if the destination crashed
// (or restarted: a new incarnation) meanwhile. Every send, hold, delivery and drop is one trace
// line.
#include <concepts>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/time.h"

namespace lockstep::sim {

class World;
using NodeId = int;

struct Ratio {
  uint64_t numerator = 0;
  uint64_t denominator = 1;
};

struct NetworkOptions {
  TimeUs latency_us_min = 200;
  TimeUs latency_us_max = 1'000;
  Ratio loss{0, 1};
  Ratio duplicate{0, 1};
  bool fifo_links = true;
};

// What happens to a message that reaches a paused node.
// - process: the destination's code handles it, so it waits for the pause to end (a stopped
//   server processes nothing).
// - buffer: the destination's kernel takes it on arrival and the callback only stores it and
//   wakes a parked fiber (whose resumption the pause still defers): a reply that arrived before
//   a client's timeout is there when the client resumes, as recv() would return it.
enum class Delivery { process, buffer };

// What the cuts made from now on do to a message (set_cut_style).
enum class CutStyle { drop, hold };

struct NetworkStats {
  uint64_t sent = 0;
  uint64_t delivered = 0;
  uint64_t dropped = 0;
  uint64_t duplicated = 0;
};

class Network {
 public:
  explicit Network(World& world, NetworkOptions options = {});

  void set_options(NetworkOptions options) {
    validate(options);
    options_ = options;
  }
  const NetworkOptions& options() const { return options_; }
  // Every message takes exactly latency_us from now on (makes "on the wire" a known instant).
  void set_fixed_latency(int64_t latency_us) {
    NetworkOptions fixed = options_;
    fixed.latency_us_min = latency_us;
    fixed.latency_us_max = latency_us;
    set_options(fixed);
  }

  // Every message to or from `node` takes delay_us longer from now on (0: none). Takes no draw, so
  // a run that slows no node draws and hashes as before.
  void set_node_delay(NodeId node, TimeUs delay_us);
  TimeUs node_delay_us(NodeId node) const;

  // Sends a message from `from` to `to`; on_deliver runs on `to` when (if) it arrives. The label
  // appears in trace lines only, and is not read when the trace reads no text.
  void send(NodeId from, NodeId to, std::string_view label, std::function<void()> on_deliver,
            Delivery delivery = Delivery::process);
  // The same with a label that costs a format: make_label() runs only when the trace reads text,
  // after on_deliver is built, so it must not read what on_deliver's captures moved from.
  template <typename MakeLabel>
  requires std::invocable<MakeLabel&>
  void send(NodeId from, NodeId to, MakeLabel&& make_label, std::function<void()> on_deliver,
            Delivery delivery = Delivery::process) {
    send(from, to, label_by(make_label), std::move(on_deliver), delivery);
  }
  // A label made only when the trace reads it (else ""), for a sender that uses it again later.
  template <typename MakeLabel>
  std::string label_by(MakeLabel&& make_label) const {
    return labels_read() ? std::string(make_label()) : std::string();
  }

  // How the cuts made from now on treat messages (drop by default); a cut keeps its style until
  // it heals. A fault that holds sets hold, cuts, and sets drop again.
  void set_cut_style(CutStyle style) { cut_style_ = style; }
  void partition(NodeId from, NodeId to);
  void partition_both(NodeId a, NodeId b);
  // Heals the cut(s) and releases what they held, in the order it was sent.
  void heal(NodeId from, NodeId to);
  void heal_all();
  bool link_up(NodeId from, NodeId to) const;
  size_t held_messages() const { return held_.size(); }

  static constexpr size_t kHeldMessagesMax = 100'000;
  // How long after a heal a message held for held_us is sent again: the time to the next instant
  // of TCP's retransmission schedule (200 ms, doubling, at most kRtoMaxUs apart) counted from
  // when it was held. Pure: no draw.
  static TimeUs retransmission_wait_us(TimeUs held_us);
  static constexpr TimeUs kRtoMinUs = 200'000;
  static constexpr TimeUs kRtoMaxUs = 120'000'000;

  const NetworkStats& stats() const { return stats_; }

 private:
  static void validate(const NetworkOptions& options);
  bool draw(Ratio ratio);
  // One copy of a message in flight. The event closures hold only a shared pointer to it (small
  // enough for std::function's inline buffer), so a message costs this one allocation, not a heap
  // closure and a label copy at every hop.
  struct InFlight {
    Network* network = nullptr;
    NodeId from = 0;
    NodeId to = 0;
    uint64_t incarnation = 0;  // of `to` when sent
    std::string label;
    std::function<void()> on_deliver;
    Delivery delivery = Delivery::process;
    uint64_t sequence = 0;  // in send order: held messages are released in it
  };
  std::shared_ptr<InFlight> in_flight(NodeId from, NodeId to, const std::string& label,
                                      std::function<void()> on_deliver, Delivery delivery);
  void send_copy(NodeId from, NodeId to, const std::string& label, std::string_view kind,
                 std::function<void()> on_deliver, Delivery delivery);
  // A message's time on the wire from `from` to `to`: one draw, plus both nodes' delays.
  TimeUs latency_us(NodeId from, NodeId to);
  // Puts a message in flight: arrives after a drawn latency (FIFO per link).
  void schedule(const std::shared_ptr<InFlight>& message, std::string_view kind);
  // A message on a holding cut waits for the heal (or is dropped when the queue is full).
  void hold(std::shared_ptr<InFlight> message);
  // Releases the held messages on links no longer cut, in the order they were sent (one held in
  // flight went before those sent during the stall, as a TCP stream's bytes do), at each link's
  // next retransmission instant (retransmission_wait_us).
  void release_healed();
  // Put in flight at release_at_us: after the others released on its link (FIFO among them), but
  // not before what is sent on the link later, which may overtake it.
  void schedule_release(const std::shared_ptr<InFlight>& message, TimeUs release_at_us,
                        TimeUs held_us, TimeUs& released_last_us);
  // The style of the cut on a directed link, or null while the link is up: one lookup per
  // message, which every send and arrival makes.
  const CutStyle* cut_of(NodeId from, NodeId to) const;
  bool labels_read() const;
  void arrive(const std::shared_ptr<InFlight>& message);
  TimeUs& last_arrival_slot(NodeId from, NodeId to);
  void trace_drop(NodeId from, NodeId to, std::string_view label, std::string_view why);

  World& world_;
  NetworkOptions options_;
  NetworkStats stats_;
  std::map<std::pair<NodeId, NodeId>, CutStyle> cut_;
  CutStyle cut_style_ = CutStyle::drop;
  struct Held {
    std::shared_ptr<InFlight> message;
    TimeUs since_us = 0;
  };
  std::deque<Held> held_;  // bounded by kHeldMessagesMax
  uint64_t next_sequence_ = 0;
  // The last arrival time scheduled on each directed link, [from][to] (rows grow as nodes send):
  // looked up for every message.
  std::vector<std::vector<TimeUs>> last_arrival_us_;
  std::vector<TimeUs> node_delay_us_;  // by node; absent: 0
};

}  // namespace lockstep::sim
