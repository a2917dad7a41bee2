#pragma once
// `lockstep calibrate`: how well the sweep catches the known-bad adapters.
//
// For each known-bad adapter (registry entries with known_bad = true), every seed of a fixed
// range is run as `lockstep sweep` would run it. Reported: the share of seeds that caught it on the
// invariant it is meant to break (`breaks`) and on any invariant; the median, over every start
// seed of the range, of the seeds and wall time a sweep starting there needs to reach its first
// counterexample (starts with none left in the range count as never); and the size (operations) of
// the first counterexample once shrunk. Targets: caught on `breaks` in at least the share of seeds
// its design allows (AdapterEntry::catch_share_min; judged only when every seed of a range of at
// least kShareSeedsMin ran, else caught on `breaks` at least once), median time under 1 s, shrunk
// counterexamples of at most 20 operations. A seed caught only on another invariant is a miss of
// the known-bad's own design: it counts toward the share on any invariant, never toward its target.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "explore/stop.h"
#include "explore/sweep.h"

namespace lockstep {

// Below this many seeds a share says little (a 20% rate over 20 seeds is 4 +- 1.8 catches): the
// share is reported, and only "caught on `breaks` at least once" is judged.
inline constexpr int kShareSeedsMin = 100;

struct CalibrateConfig {
  std::vector<std::string> adapters;  // empty: every known-bad adapter
  uint64_t first_seed = 1;
  int seeds = 200;
  std::string report_dir;  // replay files of the shrunk counterexamples, when set
  int64_t target_median_us = 1'000'000;
  // false: the time target is reported but not judged. ctest judges only what does not depend
  // on the machine's speed (caught, shrunk size); the time target is for calibrate by hand.
  bool judge_time = true;
  uint64_t target_shrunk_ops = 20;
  // Worker processes (worker_pool.h): the seeds of every adapter, then the shrinks, are spread
  // over them and taken in order, so everything but the wall times is one process's result.
  int jobs = 1;
  // A time budget and a signal to stop at (explore/stop.h). The seeds are taken round-robin over
  // the adapters (seed 1 of each, then seed 2 of each, ...), so a budget gives each its share; an
  // adapter whose seeds were cut before one caught it is not judged.
  StopConditions stop;
};

struct CalibrationRow {
  std::string adapter;
  std::string breaks;          // what the registry says it breaks
  double catch_share_min = 0;  // its target share of seeds caught on `breaks` (0: none declared)
  int seeds_run = 0;
  int caught = 0;                      // seeds that violated any invariant (or did not complete)
  int caught_on_breaks = 0;            // seeds whose untolerated violations include `breaks`
  std::optional<double> median_seeds;  // nullopt: most starts never reach a counterexample
  std::optional<double> median_time_us;
  std::optional<Counterexample> first;  // the shrunk first counterexample
  int64_t wall_time_us = 0;  // its seeds' wall times plus its shrink's (work done, on any worker)
  double share_on_breaks() const;
  double share_any() const;
  // Judged on its share: every seed of a range of at least kShareSeedsMin ran (a row cut by the
  // budget or a signal is not judged on it).
  bool share_judged(const CalibrateConfig& config) const;
  // Not judged on its share, or caught on `breaks` in at least catch_share_min of its seeds.
  bool share_met(const CalibrateConfig& config) const;
  bool meets_targets(const CalibrateConfig& config) const;
  // Judged: every seed ran, or a counterexample of `breaks` was found and shrunk before the stop.
  // A row cut short before that is neither met nor missed.
  bool judged(const CalibrateConfig& config) const;
};

struct CalibrationResult {
  CalibrateConfig config;
  std::vector<CalibrationRow> rows;
  std::string stopped_by;  // "" (every seed ran), "time", or the signal ("SIGTERM")
  bool all_meet_targets() const;
  // "ok" (every adapter met its targets), "missed" (a judged adapter missed one), or
  // "incomplete" (none missed, but the budget or a signal left some not judged).
  std::string verdict() const;
};

CalibrationResult run_calibration(const CalibrateConfig& config);
nlohmann::json to_json(const CalibrationResult& result);
std::string to_text(const CalibrationResult& result);

// What one seed says of a known-bad: caught at all (sweep's violates(): an untolerated violation,
// or a run that did not complete), and caught on the invariant it is meant to break (`breaks`
// among the untolerated violations; an excused one is not a catch).
struct SeedCatch {
  bool any = false;
  bool on_breaks = false;
};
SeedCatch seed_catch(const SeedOutcome& outcome, const std::string& breaks);

// The median, over start positions, of the distance to the next caught seed (inclusive) and the
// wall time spent up to it: exposed for tests.
struct FirstCatch {
  std::optional<double> median_seeds;
  std::optional<double> median_time_us;
};
FirstCatch median_first_catch(const std::vector<bool>& caught, const std::vector<int64_t>& wall_us);

}  // namespace lockstep
