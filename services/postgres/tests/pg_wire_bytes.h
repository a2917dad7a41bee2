#pragma once
// Frontend messages as a client writes them, for the wire tests.
#include <cstdint>
#include <string>

namespace lockstep::sim::testing {

inline std::string i32(int32_t v) {
  const auto u = static_cast<uint32_t>(v);
  return {static_cast<char>(u >> 24), static_cast<char>(u >> 16), static_cast<char>(u >> 8),
          static_cast<char>(u)};
}

// A StartupMessage of protocol 3.0 whose parameters are `params` (name\0value\0 pairs).
inline std::string startup_packet(const std::string& params) {
  const std::string body = i32(196608) + params + std::string(1, '\0');
  return i32(static_cast<int32_t>(body.size() + 4)) + body;
}

inline std::string query_message(const std::string& sql) {
  return "Q" + i32(static_cast<int32_t>(sql.size() + 5)) + sql + std::string(1, '\0');
}

}  // namespace lockstep::sim::testing
