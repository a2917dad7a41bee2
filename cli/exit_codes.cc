#include "cli/exit_codes.h"

#include "report/report.h"

namespace lockstep {

int run_exit_code(const RunReport& report) {
  if (verdict(report) == "error") return kExitError;
  return report.ok() ? kExitOk : kExitViolation;
}

int expectation_exit_code(const RunReport& report) {
  if (report.matches_expectation() || !report.finding.empty()) return kExitOk;
  return verdict(report) == "error" ? kExitError : kExitViolation;
}

int sweep_exit_code(const nlohmann::json& report) {
  const nlohmann::json& violations = report.at("violations");
  if (violations.empty()) return report.at("verdict") == "vacuous" ? kExitViolation : kExitOk;
  if (violations.size() == 1 && violations.contains("incomplete")) return kExitError;
  return kExitViolation;
}

}  // namespace lockstep
