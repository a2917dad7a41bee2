#include "services/postgres/client/pg_connection.h"

#include <fmt/format.h>

namespace lockstep {

std::optional<std::string> PgResult::scalar() const {
  if (rows.empty() || rows.front().empty()) return std::nullopt;
  return rows.front().front();
}

std::string describe(const PgResult& result) {
  if (result.status != IoStatus::ok) {
    std::string out = fmt::format("{}: {}", to_string(result.status), result.message);
    if (!result.sqlstate.empty()) out += fmt::format(" ({} {})", result.sqlstate, result.error);
    return out;
  }
  if (!result.sqlstate.empty()) return fmt::format("ERROR {} {}", result.sqlstate, result.error);
  if (result.rows.empty()) return result.command_tag;
  std::string out;
  for (size_t r = 0; r < result.rows.size(); ++r) {
    out += r == 0 ? "" : "; ";
    for (size_t c = 0; c < result.rows[r].size(); ++c) {
      const std::optional<std::string>& value = result.rows[r][c];
      out += (c == 0 ? "" : "|") + (value ? *value : std::string("(null)"));
    }
  }
  return out;
}

}  // namespace lockstep
