#include "services/postgres/sim/pg_wire_front.h"

#include <utility>

#include <fmt/format.h>

#include "sim/assert.h"

namespace lockstep::sim {

namespace {

constexpr size_t kQueuedMax = 1000;               // messages read ahead of the one running
constexpr size_t kMessagesPerPieceMax = 100'000;  // a bound on one piece's parse loop

// "WARNING: text" -> ("WARNING", "text").
std::pair<std::string_view, std::string_view> severity_and_text(std::string_view notice) {
  const size_t colon = notice.find(": ");
  if (colon == std::string_view::npos) return {"NOTICE", notice};
  return {notice.substr(0, colon), notice.substr(colon + 2)};
}

}  // namespace

// The client's kernel as the server sees it through this connection.
class PgWireFront::Peer final : public PgPeer {
 public:
  Peer(NodeId node, int client, std::function<bool()> lives)
      : node_(node), client_(client), lives_(std::move(lives)) {}
  NodeId node() const override { return node_; }
  int client() const override { return client_; }
  bool socket_open(uint64_t) const override { return end_.open() && (!lives_ || lives_()); }
  // PostgreSQL writes the FATAL to the socket and closes it; the client reads both.
  void closed_by_server(uint64_t, PgResult why) override {
    end_.send(pg_wire::error_response("FATAL", why.sqlstate.empty() ? "57P01" : why.sqlstate,
                                      why.error.empty() ? why.message : why.error));
    end_.close();
  }
  void set_end(ServerEnd end) { end_ = std::move(end); }

 private:
  NodeId node_;
  int client_;
  std::function<bool()> lives_;
  ServerEnd end_;
};

PgWireFront::PgWireFront(World& world, PgServer& server, PgWireFrontOptions options)
    : world_(world),
      server_(server),
      options_(std::move(options)),
      peer_(std::make_shared<Peer>(options_.kernel_node, options_.client, options_.process_lives)) {
}

void PgWireFront::attach(ServerEnd end) {
  end_ = end;
  peer_->set_end(std::move(end));
}

StreamFront::Served PgWireFront::serve(const std::string& bytes) {
  Served now;
  if (ended_) return now;
  serving_ = &now;
  parser_.feed(bytes);
  for (size_t i = 0; i < kMessagesPerPieceMax; ++i) {
    std::optional<PgFrontendMessage> message = parser_.next();
    if (!message) break;
    if (queue_.size() >= kQueuedMax) {
      refuse("54000", fmt::format("more than {} messages sent ahead of an answer", kQueuedMax));
      break;
    }
    queue_.push_back(std::move(*message));
  }
  if (!parser_.error().empty() && !ended_) refuse("08P01", parser_.error());
  run_queue();
  serving_ = nullptr;
  return now;
}

void PgWireFront::answer(std::string bytes, bool close) {
  if (serving_ != nullptr) {
    serving_->replies += bytes;
    serving_->close = serving_->close || close;
    return;
  }
  end_.send(std::move(bytes));
  if (close) end_.close();
}

void PgWireFront::refuse(std::string_view sqlstate, std::string_view why) {
  world_.trace_linef("stream {} at {}: refused ({}): {}", options_.stream_name, name(), sqlstate,
                     why);
  answer(pg_wire::error_response("FATAL", sqlstate, why), /*close=*/true);
  end_session();
}

void PgWireFront::end_session() {
  if (std::exchange(ended_, true)) return;
  queue_.clear();
  server_.client_closed(options_.conn);
}

void PgWireFront::run_queue() {
  while (!waiting_ && !ended_ && !queue_.empty()) {
    PgFrontendMessage message = std::move(queue_.front());
    queue_.pop_front();
    switch (message.kind) {
      case PgFrontendMessage::Kind::ssl_request:
      case PgFrontendMessage::Kind::gss_request: answer(pg_wire::ssl_refused()); break;
      case PgFrontendMessage::Kind::startup: start(message); break;
      case PgFrontendMessage::Kind::query:
        if (!started_) {
          refuse("08P01", "a query before the startup message");
          break;
        }
        run(message.sql);
        break;
      case PgFrontendMessage::Kind::terminate: end_session(); break;
      case PgFrontendMessage::Kind::cancel:
      case PgFrontendMessage::Kind::other:
        refuse("0A000",
               message.kind == PgFrontendMessage::Kind::cancel
                   ? std::string("lockstep's simulated server takes no cancel request")
                   : fmt::format("lockstep's simulated server speaks the simple query protocol "
                                 "only: message type '{}' refused",
                                 message.type));
        break;
    }
  }
}

void PgWireFront::start(const PgFrontendMessage& message) {
  waiting_ = true;
  std::weak_ptr<int> alive = alive_;
  server_.startup(
      options_.conn, peer_, settings_of_startup(message.params), [this, alive](PgResult result) {
        if (alive.expired()) return;
        waiting_ = false;
        if (ended_) return;
        const std::optional<std::string> pid = result.scalar();
        if (result.status != IoStatus::ok || !pid) {
          answer(
              pg_wire::error_response("FATAL", result.sqlstate.empty() ? "57P03" : result.sqlstate,
                                      result.error.empty() ? result.message : result.error),
              /*close=*/true);
          ended_ = true;
          return;
        }
        started_ = true;
        const int32_t pid_number = static_cast<int32_t>(std::stol(*pid));
        answer(pg_wire::authentication_ok() + pg_wire::parameter_status("server_version", "15.0") +
               pg_wire::parameter_status("server_encoding", "UTF8") +
               pg_wire::parameter_status("client_encoding", "UTF8") +
               pg_wire::parameter_status("DateStyle", "ISO, MDY") +
               pg_wire::parameter_status("integer_datetimes", "on") +
               pg_wire::parameter_status("standard_conforming_strings", "on") +
               pg_wire::backend_key_data(pid_number, pid_number) + pg_wire::ready_for_query('I'));
        run_queue();
      });
}

void PgWireFront::run(const std::string& sql) {
  waiting_ = true;
  std::weak_ptr<int> alive = alive_;
  server_.query(options_.conn, sql, options_.tag, [this, alive, sql](PgResult result) {
    if (alive.expired()) return;
    waiting_ = false;
    if (ended_) return;
    world_.trace_line_by([&] {
      return fmt::format("stream {} at {}: {} -> {}", options_.stream_name, name(), sql,
                         describe(result));
    });
    encode(sql, result);
    run_queue();
  });
}

void PgWireFront::encode(const std::string& sql, const PgResult& result) {
  std::string out;
  for (const std::string& notice : result.notices) {
    const auto [severity, text] = severity_and_text(notice);
    out += pg_wire::error_response(severity, "01000", text, /*notice=*/true);
  }
  if (result.status != IoStatus::ok) {
    // The session is gone: a FATAL said, or the connection just closed.
    if (!result.sqlstate.empty()) {
      out += pg_wire::error_response("FATAL", result.sqlstate, result.error);
    }
    ended_ = true;
    return answer(std::move(out), /*close=*/true);
  }
  if (!result.sqlstate.empty()) {
    out += pg_wire::error_response("ERROR", result.sqlstate, result.error);
    if (transaction_ == 'T') transaction_ = 'E';
  } else {
    if (const std::optional<PgColumn> column = result_column(sql)) {
      out += pg_wire::row_description({*column});
      for (const auto& row : result.rows) out += pg_wire::data_row(row);
    }
    out += pg_wire::command_complete(result.command_tag);
    if (result.command_tag == "BEGIN") transaction_ = 'T';
    if (result.command_tag == "COMMIT" || result.command_tag == "ROLLBACK") transaction_ = 'I';
  }
  out += pg_wire::ready_for_query(transaction_);
  answer(std::move(out));
}

void PgWireFront::client_end(bool reset) {
  if (ended_) return;
  world_.trace_linef("stream {} at {}: the client's {}", options_.stream_name, name(),
                     reset ? "RST" : "FIN");
  end_session();
}

}  // namespace lockstep::sim
