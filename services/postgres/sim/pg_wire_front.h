#pragma once
// The simulated PostgreSQL server's wire front: one client connection's bytes (a co-simulated
// driver's node-postgres, over sim/byte_stream.h) served by a PgServer, as PostgreSQL's protocol
// 3.0 says (pg_wire.h).
//
// A StartupMessage opens a session (PgServer::startup, trust authentication: AuthenticationOk,
// the parameters a client reads, BackendKeyData, ReadyForQuery); an SSL or GSS encryption request
// is refused ('N'), as by a server without them. Each Query runs one statement (PgServer::query):
// its notices, then RowDescription and DataRow for a SELECT, CommandComplete, or an ErrorResponse;
// then ReadyForQuery, whose transaction status follows BEGIN, COMMIT, ROLLBACK and errors. As a
// backend does, it reads the next query only once the one before answered (a lock wait holds the
// queries behind it), so replies keep their order. The extended query protocol (Parse, Bind, ...)
// and everything else is answered with a FATAL 0A000 and the connection closed: the server
// refuses it rather than guessing.
//
// A session the server ends (pg_terminate_backend: FATAL 57P01; a connection found dead) is
// told to the client as PostgreSQL tells it, an ErrorResponse FATAL, and the connection closed.
// The client's Terminate, FIN or RST ends the session (PgServer::client_closed). Keepalive
// probes go to the client's kernel node, which answers while the stream is open and the
// client's process lives (PgPeer).
//
// Invariants: one front per stream and per session; the statements' tag (whose lock operation
// they are) is the connection's, fixed when it opened; nothing here reads the wall clock.
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>

#include "services/postgres/sim/pg_server.h"
#include "services/postgres/sim/pg_wire.h"
#include "sim/byte_stream.h"

namespace lockstep::sim {

struct PgWireFrontOptions {
  uint64_t conn = 0;        // unique in the run (the server's connection id)
  NodeId kernel_node = 0;   // the client's kernel: keepalive probes go there
  int client = -1;          // the harness's client, for traces and lease facts
  PgTag tag;                // the lock operation the connection's statements belong to
  std::string stream_name;  // "c0:1"
  // Whether the client's process lives (its program running): a closed socket's kernel resets
  // a probe otherwise.
  std::function<bool()> process_lives;
};

class PgWireFront final : public StreamFront {
 public:
  PgWireFront(World& world, PgServer& server, PgWireFrontOptions options);

  NodeId node() const override { return server_.node(); }
  std::string_view name() const override { return server_.name(); }
  Served serve(const std::string& bytes) override;
  bool hears_client_end() const override { return true; }
  void client_end(bool reset) override;
  void attach(ServerEnd end) override;

 private:
  class Peer;
  // Runs read messages in order until one waits for its answer or none is left.
  void run_queue();
  void start(const PgFrontendMessage& startup);
  void run(const std::string& sql);
  // A statement's result as the wire says it.
  void encode(const std::string& sql, const PgResult& result);
  // Bytes to the client: into the piece being served (serving_), or sent on their own; close:
  // the server closes the connection after them.
  void answer(std::string bytes, bool close = false);
  // A FATAL error, the connection closed and the session ended.
  void refuse(std::string_view sqlstate, std::string_view why);
  void end_session();

  World& world_;
  PgServer& server_;
  PgWireFrontOptions options_;
  std::shared_ptr<Peer> peer_;
  ServerEnd end_;
  PgWireParser parser_;
  std::deque<PgFrontendMessage> queue_;  // read, not yet run (bounded: kQueuedMax)
  bool waiting_ = false;                 // a startup or statement has not answered yet
  bool started_ = false;
  bool ended_ = false;  // closed by either side: nothing more runs
  char transaction_ = 'I';
  // Set while serve() runs: an answer given at once joins the piece it answers.
  Served* serving_ = nullptr;
  // The server's replies may come after the front is gone (the run ended): they check this.
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

}  // namespace lockstep::sim
