// Documented findings (AdapterEntry::findings): a matrix cell whose seeds end exactly as a declared
// finding is charted as that finding and passes; one that ends otherwise, or a finding declared for
// another world or with other invariants, still differs. The lock under test is the known-bad
// Redlock that returns expired locks, registered as if it claimed to be a correct Redlock with its
// flaw declared as a finding, the way the ext: libraries declare theirs.
#include <catch2/catch.hpp>

#include "explore/matrix.h"
#include "lockstep/registry.h"
#include "run/runner.h"
#include "services/known_bad.h"

namespace lockstep {
namespace {

constexpr const char* kSummary = "returns locks whose validity has already ended";

// A correct Redlock's claims over the known-bad one's code, with `findings` declared.
const std::string& register_claimant(const std::string& name, std::vector<Finding> findings) {
  register_known_bad_adapters();
  if (find_adapter(name) == nullptr) {
    AdapterEntry entry = *find_adapter("bad-redlock-double-elapsed");
    entry.name = name;
    entry.traits = find_adapter("redlock")->traits;  // claims validity net of the time spent
    entry.known_bad = false;
    entry.breaks.clear();
    entry.judged_in.clear();
    entry.findings = std::move(findings);
    // A lock lockstep does not vouch for, as the ext: libraries that declare findings: the
    // registry-wide tests of lockstep's own adapters (run in this process too) leave it out.
    entry.third_party = true;
    register_adapter(std::move(entry));
  }
  return find_adapter(name)->name;
}

MatrixCell slow_grant_cell(const std::string& adapter) {
  const MatrixResult r = run_matrix({.adapters = {adapter}, .scenarios = {"slow-grant"}});
  REQUIRE(r.cells.size() == 2);  // fencing off and on
  return r.cells[0];
}

TEST_CASE("a cell that ends as a documented finding is charted as the finding, not a difference",
          "[matrix][findings]") {
  const std::string& name = register_claimant(
      "claims-redlock-finding",
      {{.scenario = "slow-grant", .violated = {Invariant::valid_on_return}, .summary = kSummary}});
  const RunReport run = run_scenario({.scenario = "slow-grant", .adapter = name});
  CHECK(run.expected.empty());  // the expectation stays what the lock claims
  CHECK(run.violated() == Expectation{Invariant::valid_on_return});
  CHECK_FALSE(run.matches_expectation());
  CHECK(run.finding == kSummary);

  const MatrixCell cell = slow_grant_cell(name);
  CHECK(cell.matches);
  CHECK(cell.finding == kSummary);
  CHECK(cell.first_finding.find("slow-grant --adapter claims-redlock-finding") !=
        std::string::npos);
  const MatrixResult both = run_matrix({.adapters = {name}, .scenarios = {"slow-grant"}});
  CHECK(both.all_match());
  CHECK(to_text(both).find("FINDING (documented)") != std::string::npos);
  CHECK(to_json(both).at("cells").at(0).at("finding") == kSummary);
}

TEST_CASE("a finding of other invariants, another world or another end does not excuse a cell",
          "[matrix][findings]") {
  const std::vector<std::pair<std::string, Finding>> wrong = {
      {"claims-redlock-other-invariants",
       {.scenario = "slow-grant", .violated = {Invariant::liveness}, .summary = kSummary}},
      {"claims-redlock-other-world",
       {.scenario = "slow-grant",
        .world = WorldKind::real,
        .violated = {Invariant::valid_on_return},
        .summary = kSummary}},
      {"claims-redlock-other-end",
       {.scenario = "slow-grant",
        .violated = {Invariant::valid_on_return},
        .end = RunEnd::error,
        .summary = kSummary}},
      {"claims-redlock-other-scenario",
       {.scenario = "sequential", .violated = {Invariant::valid_on_return}, .summary = kSummary}},
  };
  for (const auto& [adapter, finding] : wrong) {
    INFO(adapter);
    const std::string& name = register_claimant(adapter, {finding});
    CHECK(run_scenario({.scenario = "slow-grant", .adapter = name}).finding.empty());
    const MatrixCell cell = slow_grant_cell(name);
    CHECK_FALSE(cell.matches);
    CHECK(cell.finding.empty());
  }
}

TEST_CASE("a cell that matches its expectation shows no finding", "[matrix][findings]") {
  const MatrixCell cell = slow_grant_cell("redlock");
  CHECK(cell.matches);
  CHECK(cell.finding.empty());
  CHECK(cell.first_finding.empty());
}

}  // namespace
}  // namespace lockstep
