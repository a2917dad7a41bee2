#pragma once
// Which world a run happens in: the deterministic simulator, or real servers and threads on
// loopback. Strings ("sim", "real") exist only at the edges: the command line, the JSON reports.
#include <array>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <vector>

namespace lockstep {

enum class WorldKind { sim, real };
inline constexpr std::array kWorldKindsAll = {WorldKind::sim, WorldKind::real};

std::string_view to_string(WorldKind world);
std::optional<WorldKind> world_kind_from_string(std::string_view name);
// "sim, real": for messages.
std::string world_names(const std::vector<WorldKind>& worlds, std::string_view separator = ", ");

}  // namespace lockstep

// Formats as its string, so messages and traces read as before.
template <>
struct fmt::formatter<lockstep::WorldKind> : fmt::formatter<std::string_view> {
  template <typename FormatContext>
  auto format(lockstep::WorldKind value, FormatContext& ctx) const {
    return fmt::formatter<std::string_view>::format(lockstep::to_string(value), ctx);
  }
};
