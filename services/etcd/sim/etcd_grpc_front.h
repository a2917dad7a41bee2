#pragma once
// The simulated etcd member's gRPC front: one client connection's bytes (a co-simulated driver's
// @grpc/grpc-js, over sim/byte_stream.h) served by an EtcdCluster member as etcd 3.4 serves gRPC:
// HTTP/2 (http2_frames.h, hpack.h), each call a stream whose messages are length-prefixed
// protobuf (etcd_proto.h), translated to and from the JSON gateway requests the cluster takes.
//
// The connection: the client's preface and SETTINGS are answered with the server's (empty:
// HTTP/2's defaults) and an ACK; PINGs are answered; flow control is kept both ways (every DATA
// the client sends is granted back at once with WINDOW_UPDATEs, and what the server sends waits
// for the client's window). A call: a HEADERS frame opens it (its :path names the RPC, etcd_proto's
// find_etcd_rpc); a unary call runs once the client ended its stream with one message; a
// client-streaming one (LeaseKeepAlive) runs each message as it comes and ends, OK, once the
// client ended its side and every message it sent was answered. The answer is HEADERS (:status 200, application/grpc), the message as
// DATA, and trailers (grpc-status, grpc-message): an error before any message is trailers only,
// with the gateway error's code and message. An unknown RPC is UNIMPLEMENTED. The client's
// RST_STREAM cancels its call (a Lock RPC waiting in the queue deletes its key, as etcd's
// v3lock's context cancellation does); the client's FIN or RST of the connection cancels every
// call. A connection that breaks HTTP/2 gets a GOAWAY and is closed, as grpc-go does.
//
// What the cluster answers comes on the member's node, now or later (a proposal applied, a Lock
// RPC's wait): the front sends it then. A member that crashes answers nothing more; the byte
// stream's retransmissions and the restarted member's RST tell the client.
//
// Invariants: one front per stream; calls are answered in the order the cluster answers them,
// each call's frames in order, and no frame of a call after its trailers; nothing here reads the
// wall clock or draws a number.
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>

#include "services/etcd/sim/etcd_cluster.h"
#include "services/etcd/sim/etcd_proto.h"
#include "services/etcd/sim/hpack.h"
#include "services/etcd/sim/http2_frames.h"
#include "sim/byte_stream.h"

namespace lockstep::sim::etcd {

struct EtcdGrpcFrontOptions {
  int member = 0;           // the member the client reached
  int client = -1;          // the harness's client: the cluster's lease facts name it
  uint64_t conn = 0;        // unique in the run, below 2^29: names the calls' cluster streams
  std::string stream_name;  // "c0:1": for traces
};

class EtcdGrpcFront final : public StreamFront {
 public:
  EtcdGrpcFront(World& world, EtcdCluster& cluster, EtcdGrpcFrontOptions options);

  NodeId node() const override { return cluster_.node(options_.member); }
  std::string_view name() const override { return cluster_.member_name(options_.member); }
  Served serve(const std::string& bytes) override;
  bool hears_client_end() const override { return true; }
  void client_end(bool reset) override;
  void attach(ServerEnd end) override { end_ = std::move(end); }

 private:
  struct Call {
    uint32_t id = 0;
    const EtcdRpc* rpc = nullptr;   // nullptr: unimplemented, answered when the client ends
    std::string data;               // the client's DATA not yet cut into messages
    std::deque<EtcdJson> messages;  // a unary call's request, until it runs
    bool client_ended = false;
    bool running = false;        // asked of the cluster, not answered yet (a unary call)
    int keepalives_running = 0;  // a client-streaming call's messages asked, not answered yet
    bool headers_sent = false;
    bool finished = false;  // trailers queued: nothing more of this call
    int64_t send_window = h2::kDefaultWindowSize;
    std::deque<std::string> pending;  // frames waiting for the window (DATA first, then the rest)
    size_t pending_data_bytes = 0;
  };

  void on_frame(const h2::Frame& frame);
  void on_headers(uint32_t id, uint8_t flags, std::string_view block);
  void on_data(const h2::Frame& frame);
  void on_settings(const h2::Frame& frame);
  void on_window_update(const h2::Frame& frame);
  void on_rst_stream(uint32_t id);
  // The client's messages of a call, as they complete; then the call runs if it can.
  void take_messages(Call& call);
  void run_if_ready(Call& call);
  void run_unary(Call& call, EtcdJson request);
  void run_keepalive(Call& call, EtcdJson request);
  // The cluster's answer to a call: a message (status 200) or the gateway's error.
  void answer(uint32_t id, int http_status, const EtcdJson& body, bool last);
  void send_message(Call& call, const EtcdJson& body);
  void finish(Call& call, int grpc_status, std::string_view message);
  void cancel(Call& call);
  void queue_frame(Call& call, std::string frame, size_t data_bytes);
  void flush(Call& call);
  void flush_all();
  void collect();
  // Protocol broken: GOAWAY, and the stream broken.
  void fail(uint32_t error_code, std::string why);
  void emit(std::string bytes);
  uint64_t cluster_stream(uint32_t id) const;

  World& world_;
  EtcdCluster& cluster_;
  EtcdGrpcFrontOptions options_;
  ServerEnd end_;
  h2::Http2FrameReader reader_;
  h2::HpackDecoder decoder_;
  bool settings_sent_ = false;
  bool ended_ = false;  // the client's end heard, or the protocol broke
  std::string broken_;
  // A header block being continued (HEADERS without END_HEADERS): its stream and fragments.
  uint32_t continuing_ = 0;
  uint8_t continuing_flags_ = 0;
  std::string block_;
  uint32_t last_stream_ = 0;
  int64_t initial_window_ = h2::kDefaultWindowSize;
  int64_t connection_window_ = h2::kDefaultWindowSize;
  std::map<uint32_t, Call> calls_;  // by stream id: flushed in that order
  Served* serving_ = nullptr;
  // The cluster may answer after the front is gone (the run ended): its callbacks check this.
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

}  // namespace lockstep::sim::etcd
