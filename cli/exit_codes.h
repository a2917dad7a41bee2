#pragma once
// The exit codes of every subcommand, in one place (docs/DESIGN.md, "Command line"). A run whose
// verdict is "error" (stopped by a bound before it completed, or not judged) has a code of its
// own: it is neither "ok" nor a violation, and CI must not read it as either.

#include <nlohmann/json.hpp>

#include "run/runner.h"

namespace lockstep {

inline constexpr int kExitOk = 0;
inline constexpr int kExitViolation = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitEnvironment = 3;
inline constexpr int kExitError = 4;
inline constexpr int kExitInternal = 70;

inline constexpr const char* kExitCodesHelp =
    "exit codes: 0 ok, 1 violation (or a vacuous run, a differing matrix cell, an unreproduced\n"
    "replay, a missed calibration target), 2 bad usage, 3 missing environment, memory or lost\n"
    "output, 4 a run ended as error (stopped by a bound, or not judged), 70 internal error.\n"
    "run and replay with --expect: 0 the run is what the catalogue expects of the adapter (or a "
    "documented finding),\n"
    "1 it differs, 4 it ended as error.\n"
    "sweep and calibrate stopped by SIGINT or SIGTERM: 130 or 143, after writing the partial "
    "report (1 if a violation was found).";

// run: 4 when the verdict is error, else 1 on a violation, else 0.
int run_exit_code(const RunReport& report);

// run --expect, replay --expect: the run judged against what the catalogue expects of its adapter,
// as a matrix cell is. 0 when it is exactly that (the expected violations, or safe) or ends exactly
// as one of the adapter's documented findings; else 4 when it ended as error (never judged), else
// 1 (it differs: an unexpected or a missing violation, or a vacuous run).
int expectation_exit_code(const RunReport& report);

// sweep, sweep-merge, from the report's JSON: a seed that ended as error counts as "incomplete"
// among the violations, 4 only when nothing else was found; without violations, 1 when too many
// seeds were not exercised (verdict "vacuous").
int sweep_exit_code(const nlohmann::json& report);

}  // namespace lockstep
