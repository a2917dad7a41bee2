#pragma once
// The SQL the simulated PostgreSQL server understands: the statements the advisory-lock adapters
// send and the differential test draws, parsed into a small closed form. Anything else is refused
// (0A000, naming the statement), never guessed at.
//
//   BEGIN | COMMIT | ROLLBACK
//   SET name = value | SET name TO value
//   CREATE SEQUENCE [IF NOT EXISTS] name
//   SELECT f(args)                                       one function call
//   SELECT CASE WHEN f(args) THEN g(args) END            g only when f returned true
//   SELECT g(args) FROM f(args)                          f first (it may wait), then g
//
// where f and g are pg_try_advisory_lock, pg_advisory_lock, pg_advisory_unlock,
// pg_advisory_unlock_all, pg_try_advisory_xact_lock, pg_advisory_xact_lock, pg_backend_pid,
// pg_terminate_backend, nextval. Keywords and function names are case-insensitive; a trailing
// semicolon is allowed. Integers are decimal int64 (a leading minus allowed); strings are
// single-quoted without escapes. The lock functions take one bigint key or two integer (int4)
// keys, a different lock (PgLockKey).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lockstep::sim {

enum class PgFunction {
  try_advisory_lock,
  advisory_lock,
  advisory_unlock,
  advisory_unlock_all,
  try_advisory_xact_lock,
  advisory_xact_lock,
  backend_pid,
  terminate_backend,
  nextval,
};
// Its SQL name ("pg_try_advisory_lock"), which is also its result column's name.
std::string_view sql_name(PgFunction function);

struct PgArg {
  bool is_string = false;
  int64_t number = 0;
  std::string text;
};

struct PgCall {
  PgFunction function = PgFunction::backend_pid;
  std::vector<PgArg> args;
};

struct PgStatement {
  enum class Kind { begin, commit, rollback, set, create_sequence, select };
  enum class Shape { call, case_when, from };
  Kind kind = Kind::select;
  // set: the setting and its value as written; create_sequence: the name
  std::string name;
  std::string value;
  bool if_not_exists = false;
  // select
  Shape shape = Shape::call;
  PgCall first;   // call: the call; case_when: the condition; from: the FROM function
  PgCall second;  // case_when: THEN; from: the select list
};

struct PgParse {
  std::optional<PgStatement> statement;
  std::string sqlstate;  // when no statement: 42601 (syntax), 42883 (no such function), 0A000
  std::string error;
};

PgParse parse_statement(const std::string& sql);

}  // namespace lockstep::sim
