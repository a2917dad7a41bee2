#pragma once
// Sweeps and calibrations for CI: JUnit cases (report/junit.h), as the matrix has
// (explore/matrix_report.h).
//
// A sweep is one case for the seeds it ran (classname `sweep ADAPTER`, name
// `seedsA-B/fencing-X[/shardIofN]`): failed when a seed violated, skipped when a signal cut it
// short with nothing found (not judged), passed otherwise; its <system-out> says how many seeds ran
// and why it stopped. Each counterexample is a case of its own (`seedN/INVARIANT`), failed, with its
// replay line. A calibration is one case per known-bad adapter (classname `calibrate`): passed when
// it met its targets, failed when it missed one (saying which), skipped when the budget or a signal
// left it not judged.
#include <vector>

#include "explore/calibrate.h"
#include "explore/sweep.h"
#include "report/junit.h"

namespace lockstep {

std::vector<JUnitCase> junit_cases(const SweepResult& result);
std::vector<JUnitCase> junit_cases(const CalibrationResult& result);

}  // namespace lockstep
