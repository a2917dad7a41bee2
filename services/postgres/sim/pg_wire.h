#pragma once
// PostgreSQL's frontend/backend protocol, version 3.0, as far as a client of advisory locks goes:
// the bytes a client that is not lockstep's (a co-simulated driver's node-postgres) sends, parsed,
// and what the simulated server answers, encoded. The simple query protocol only.
//
// Frontend: before startup, length-prefixed packets without a type byte (StartupMessage 3.0,
// SSLRequest, GSSENCRequest, CancelRequest); after it, typed messages ('Q' Query, 'X' Terminate,
// anything else reported as `other` with its type, for the front to refuse). A length below its
// header or above kMessageBytesMax, or a startup packet of another protocol version, is a
// protocol error: the parser stops for good and says why.
//
// Backend: every message the simulated server sends (authentication ok, parameter status, backend
// key data, ready for query, row description, data row, command complete, error and notice
// responses, the one-byte SSL refusal).
//
// Invariants: the parser consumes bytes in order, each message once; nothing here knows about
// sessions or locks.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "services/postgres/client/pg_connection.h"

namespace lockstep::sim {

inline constexpr size_t kPgMessageBytesMax = 1 << 20;

struct PgFrontendMessage {
  enum class Kind { startup, ssl_request, gss_request, cancel, query, terminate, other };
  Kind kind = Kind::other;
  char type = 0;                              // other: the message's type byte
  std::map<std::string, std::string> params;  // startup: user, database, options, ...
  std::string sql;                            // query
};

class PgWireParser {
 public:
  void feed(std::string_view bytes);
  // The next complete message, or nullopt when more bytes are needed or after an error.
  std::optional<PgFrontendMessage> next();
  const std::string& error() const { return error_; }

 private:
  std::optional<PgFrontendMessage> fail(std::string why);
  std::optional<PgFrontendMessage> next_untyped();
  std::optional<PgFrontendMessage> next_typed();

  std::string buffer_;
  size_t consumed_ = 0;
  bool started_ = false;  // a StartupMessage was read: typed messages from now on
  std::string error_;
};

// The session settings a startup packet's `options` asks for ("-c name=value ...", or
// "--name=value"), in order.
PgSettings settings_of_startup(const std::map<std::string, std::string>& params);

// A result column: its name and type OID (bool 16, int4 23, int8 20, void 2278, text 25).
struct PgColumn {
  std::string name;
  int32_t type_oid = 25;
};
// The column a SELECT of the simulated server's statements returns (pg_statement.h): the function's
// name and type ("case" for a CASE expression); nullopt for a statement that returns no rows.
std::optional<PgColumn> result_column(const std::string& sql);

namespace pg_wire {

std::string authentication_ok();
std::string parameter_status(std::string_view name, std::string_view value);
std::string backend_key_data(int32_t pid, int32_t secret);
std::string ready_for_query(char status);  // 'I' idle, 'T' in a transaction block, 'E' failed
std::string row_description(const std::vector<PgColumn>& columns);
std::string data_row(const std::vector<std::optional<std::string>>& values);
std::string command_complete(std::string_view tag);
// severity: "ERROR", "FATAL", "WARNING", "NOTICE"; notice: a NoticeResponse, else an
// ErrorResponse.
std::string error_response(std::string_view severity, std::string_view sqlstate,
                           std::string_view message, bool notice = false);
inline std::string ssl_refused() { return "N"; }

}  // namespace pg_wire

}  // namespace lockstep::sim
