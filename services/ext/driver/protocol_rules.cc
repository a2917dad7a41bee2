#include "services/ext/driver/protocol_rules.h"

#include <fmt/format.h>

namespace lockstep::ext {

std::string broke(const ProtocolRule& rule, std::string_view what) {
  return fmt::format(
      "broke rule `{}` of the ext protocol ({}; services/ext/PROTOCOL.md, \"Rules a driver "
      "keeps\"): {}",
      rule.name, rule.says, what);
}

const ProtocolRule& rule_of_decode_error(std::string_view message) {
  for (std::string_view line_level : {"not JSON", "not a JSON object", "a line of "}) {
    if (message.substr(0, line_level.size()) == line_level) return kRuleLines;
  }
  return kRuleFields;
}

}  // namespace lockstep::ext
