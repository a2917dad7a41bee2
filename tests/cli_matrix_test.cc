// The main job's command in the simulator: every cell of the whole matrix is what the catalogue
// expects of its adapter. Its own executable, because it is the longest test (over two minutes on
// two cores): its COST makes a fresh tree's ctest start it first.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "tests/cli_support.h"

TEST_CASE("matrix --json exits 0 when every cell matches", "[cli][matrix]") {
  const lockstep::testing::CommandResult r = lockstep::testing::run_lockstep("matrix --json");
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("verdict") == "ok");
  CHECK(j.at("cells").size() >= 12);
  for (const auto& cell : j.at("cells")) CHECK(cell.at("matches") == true);
}
