#include "services/postgres/adapter/libpq_connection.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>

#include <fmt/format.h>
#include <libpq-fe.h>

namespace lockstep {

namespace {

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string trimmed(const char* text) {
  std::string out = text != nullptr ? text : "";
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

std::string field(const PGresult* result, int code) {
  const char* value = PQresultErrorField(result, code);
  return value != nullptr ? value : "";
}

// "-c NAME=VALUE ..." for the startup packet. Values are numbers and plain words (checked).
std::string options_of(const PgSettings& settings) {
  std::string out;
  for (const auto& [name, value] : settings) {
    for (char c : name + value) {
      if (c == ' ' || c == '\\' || c == '\'') throw std::invalid_argument("a plain setting");
    }
    out += fmt::format("{}-c {}={}", out.empty() ? "" : " ", name, value);
  }
  return out;
}

}  // namespace

LibpqConnection::LibpqConnection(LibpqOptions options) : options_(std::move(options)) {}

LibpqConnection::~LibpqConnection() { close(); }

std::string LibpqConnection::endpoint() const {
  return fmt::format("{}:{}", options_.host, options_.port);
}

void LibpqConnection::on_notice(void* self, const PGresult* result) {
  auto* connection = static_cast<LibpqConnection*>(self);
  connection->notices_.push_back(fmt::format("{}: {}", field(result, PG_DIAG_SEVERITY_NONLOCALIZED),
                                             field(result, PG_DIAG_MESSAGE_PRIMARY)));
}

PgResult LibpqConnection::fail(IoStatus status, std::string message) {
  close();
  return PgResult{.status = status, .message = std::move(message)};
}

// Polls the socket for events until the deadline: false on timeout or a closed socket.
bool LibpqConnection::wait_socket(short events, int64_t deadline_ns) {
  const int fd = PQsocket(conn_);
  if (fd < 0) return false;
  const int64_t left_ms = (deadline_ns - steady_ns() + 999'999) / 1'000'000;
  if (left_ms <= 0) return false;
  pollfd one{.fd = fd, .events = events, .revents = 0};
  const int ready = ::poll(&one, 1, static_cast<int>(std::min<int64_t>(left_ms, 60'000)));
  return ready > 0;
}

PgResult LibpqConnection::open() {
  if (conn_ != nullptr) return PgResult{.command_tag = "OPEN"};
  const std::string port = std::to_string(options_.port);
  const std::string startup = options_of(options_.settings);
  const char* keys[] = {"host", "port", "user", "dbname", "options", "application_name", nullptr};
  const char* values[] = {options_.host.c_str(),
                          port.c_str(),
                          options_.user.c_str(),
                          options_.dbname.c_str(),
                          startup.c_str(),
                          "lockstep",
                          nullptr};
  conn_ = PQconnectStartParams(keys, values, 0);
  if (conn_ == nullptr) return fail(IoStatus::connection_error, "libpq could not allocate");
  if (PQstatus(conn_) == CONNECTION_BAD) {
    return fail(IoStatus::connection_error, trimmed(PQerrorMessage(conn_)));
  }
  const int64_t deadline_ns = steady_ns() + options_.connect_timeout_ms * 1'000'000;
  PostgresPollingStatusType state = PGRES_POLLING_WRITING;
  while (state != PGRES_POLLING_OK) {
    if (state == PGRES_POLLING_FAILED) {
      return fail(IoStatus::connection_error, trimmed(PQerrorMessage(conn_)));
    }
    const short events = state == PGRES_POLLING_READING ? POLLIN : POLLOUT;
    if (!wait_socket(events, deadline_ns)) {
      return fail(IoStatus::connection_error, fmt::format("no session from {} within {}ms",
                                                          endpoint(), options_.connect_timeout_ms));
    }
    state = PQconnectPoll(conn_);
  }
  if (PQsetnonblocking(conn_, 1) != 0) {
    return fail(IoStatus::connection_error, trimmed(PQerrorMessage(conn_)));
  }
  PQsetNoticeReceiver(conn_, &LibpqConnection::on_notice, this);
  pid_ = PQbackendPID(conn_);
  {
    std::lock_guard<std::mutex> guard(socket_mutex_);
    socket_ = PQsocket(conn_);
  }
  return PgResult{.command_tag = "OPEN"};
}

PgResult LibpqConnection::execute(const std::string& sql, int64_t wait_us_min) {
  if (conn_ == nullptr) {
    return PgResult{.status = IoStatus::connection_error, .message = "no session is open"};
  }
  notices_.clear();
  const int64_t wait_ms = std::max(options_.command_timeout_ms, (wait_us_min + 999) / 1000);
  const int64_t deadline_ns = steady_ns() + wait_ms * 1'000'000;
  if (PQsendQuery(conn_, sql.c_str()) == 0) {
    return fail(IoStatus::connection_error, trimmed(PQerrorMessage(conn_)));
  }
  int flushed = PQflush(conn_);
  while (flushed == 1) {
    if (!wait_socket(POLLOUT | POLLIN, deadline_ns)) {
      return fail(IoStatus::timeout, fmt::format("{}: no reply within {}ms", endpoint(), wait_ms));
    }
    if (PQconsumeInput(conn_) == 0) {
      return fail(IoStatus::connection_error, trimmed(PQerrorMessage(conn_)));
    }
    flushed = PQflush(conn_);
  }
  if (flushed < 0) return fail(IoStatus::connection_error, trimmed(PQerrorMessage(conn_)));
  PgResult out;
  bool fatal = false;
  while (true) {
    while (PQisBusy(conn_) != 0) {
      if (!wait_socket(POLLIN, deadline_ns)) {
        return fail(IoStatus::timeout,
                    fmt::format("{}: no reply within {}ms", endpoint(), wait_ms));
      }
      if (PQconsumeInput(conn_) == 0) {
        // Written whole, then the connection failed. Without a word from the server (a reset, an
        // EOF) the statement may have run; after its FATAL (57P01: terminated) the session ended
        // instead, and what it held with it.
        const std::string why = trimmed(PQerrorMessage(conn_));
        PgResult lost = fail(
            out.sqlstate.empty() ? IoStatus::connection_lost : IoStatus::connection_error, why);
        lost.sqlstate = out.sqlstate;
        lost.error = out.error;
        lost.notices = notices_;
        return lost;
      }
    }
    PGresult* result = PQgetResult(conn_);
    if (result == nullptr) break;
    switch (PQresultStatus(result)) {
      case PGRES_TUPLES_OK:
        for (int r = 0; r < PQntuples(result); ++r) {
          std::vector<std::optional<std::string>> row;
          for (int c = 0; c < PQnfields(result); ++c) {
            if (PQgetisnull(result, r, c) != 0) {
              row.emplace_back(std::nullopt);
            } else {
              row.emplace_back(PQgetvalue(result, r, c));
            }
          }
          out.rows.push_back(std::move(row));
        }
        out.command_tag = PQcmdStatus(result);
        break;
      case PGRES_COMMAND_OK: out.command_tag = PQcmdStatus(result); break;
      default:
        out.sqlstate = field(result, PG_DIAG_SQLSTATE);
        out.error = field(result, PG_DIAG_MESSAGE_PRIMARY);
        if (out.error.empty()) out.error = trimmed(PQresultErrorMessage(result));
        fatal = fatal || field(result, PG_DIAG_SEVERITY_NONLOCALIZED) != "ERROR";
        break;
    }
    PQclear(result);
  }
  out.notices = std::move(notices_);
  notices_.clear();
  if (fatal || PQstatus(conn_) == CONNECTION_BAD) {
    PgResult lost = fail(IoStatus::connection_error,
                         out.error.empty() ? "the server closed the session" : out.error);
    lost.sqlstate = out.sqlstate;
    lost.error = out.error;
    lost.notices = std::move(out.notices);
    return lost;
  }
  return out;
}

void LibpqConnection::close() {
  {
    std::lock_guard<std::mutex> guard(socket_mutex_);
    socket_ = -1;
  }
  if (conn_ != nullptr) PQfinish(conn_);
  conn_ = nullptr;
  pid_ = 0;
}

void LibpqConnection::abort() {
  std::lock_guard<std::mutex> guard(socket_mutex_);
  if (socket_ >= 0) ::shutdown(socket_, SHUT_RDWR);
}

// A connection that leaves its connector's set of live connections when it goes.
class LibpqConnector::Tracked final : public PgConnection {
 public:
  Tracked(LibpqOptions options, std::shared_ptr<std::mutex> mutex,
          std::shared_ptr<std::set<LibpqConnection*>> live)
      : inner_(std::move(options)), mutex_(std::move(mutex)), live_(std::move(live)) {
    std::lock_guard<std::mutex> guard(*mutex_);
    live_->insert(&inner_);
  }
  ~Tracked() override {
    std::lock_guard<std::mutex> guard(*mutex_);
    live_->erase(&inner_);
  }
  Tracked(const Tracked&) = delete;
  Tracked& operator=(const Tracked&) = delete;

  PgResult open() override { return inner_.open(); }
  bool is_open() const override { return inner_.is_open(); }
  int64_t session_pid() const override { return inner_.session_pid(); }
  using PgConnection::execute;
  PgResult execute(const std::string& sql, int64_t wait_us_min) override {
    return inner_.execute(sql, wait_us_min);
  }
  void close() override { inner_.close(); }
  std::string endpoint() const override { return inner_.endpoint(); }

 private:
  LibpqConnection inner_;
  std::shared_ptr<std::mutex> mutex_;
  std::shared_ptr<std::set<LibpqConnection*>> live_;
};

std::unique_ptr<PgConnection> LibpqConnector::connect(const PgSettings& settings) {
  LibpqOptions options = base_;
  options.settings.insert(options.settings.end(), settings.begin(), settings.end());
  return std::make_unique<Tracked>(std::move(options), mutex_, live_);
}

std::vector<int64_t> LibpqConnector::session_pids() {
  std::lock_guard<std::mutex> guard(*mutex_);
  std::vector<int64_t> pids;
  for (LibpqConnection* connection : *live_) {
    const int64_t pid = connection->session_pid();
    if (pid != 0) pids.push_back(pid);
  }
  return pids;
}

void LibpqConnector::abort_all() {
  std::lock_guard<std::mutex> guard(*mutex_);
  for (LibpqConnection* connection : *live_) connection->abort();
}

}  // namespace lockstep
