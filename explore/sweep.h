#pragma once
// `lockstep sweep`: many seeds of swarm-drawn workloads and faults against one adapter.
//
// Seed s runs draw_swarm_spec(s) with seed s, fencing on by default. A seed violates when the run
// breaks an invariant and no fault outside the adapter's envelope that touched the clients, key and
// time window involved excuses it (checkers/excuse.h), or when it hits a bound. The first
// counterexamples are shrunk (explore/shrink.h) to the smallest spec that still breaks
// the same invariant with the same seed, and saved as replay reports (`lockstep replay FILE` reruns
// them and compares the trace hash). Shards split the seeds: seed s belongs to shard (s -
// first_seed) % count == index; merge_sweeps() adds shard results up and checks that the shards
// cover the range exactly once.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "explore/shrink.h"
#include "explore/stop.h"
#include "explore/swarm.h"
#include "run/runner.h"

namespace lockstep {

// "pause,crash" -> kinds; empty -> all. Throws UsageError naming the valid kinds.
std::vector<FaultKind> parse_fault_list(const std::string& list);
// "I/N" with 0 <= I < N. Throws UsageError.
inline constexpr uint64_t kShardCountMax = 1'000'000;
std::pair<int, int> parse_shard(const std::string& text);
bool seed_in_shard(uint64_t seed, uint64_t first_seed, int index, int count);

struct SweepConfig {
  std::string adapter;
  uint64_t first_seed = 1;
  int seeds = 1000;
  std::vector<FaultKind> faults = sweep_fault_kinds();
  // The kinds were named (--faults LIST, not all): each must be one the adapter's backend can
  // strike (UsageError naming those it can), and a sweep that drew none of them is not a pass.
  bool faults_named = false;
  int shard_index = 0;
  int shard_count = 1;
  bool fencing_on = true;
  bool keep_going = false;  // false: stop at the first violating seed
  int shrink_max = 1;       // how many counterexamples to shrink and save
  std::string report_dir = "reports/sweep";
  ShrinkOptions shrink;
  int jobs = 1;  // worker processes (worker_pool.h); the result does not depend on it
  // KEY=VALUE for the adapter's own options (a user's driver command); the swarm draws the
  // scenario's. check_adapter_sets() says which are allowed.
  std::vector<std::string> sets;
  // A time budget and a signal to stop at (explore/stop.h): the seeds run so far are the report.
  StopConditions stop;
};

// Throws UsageError unless every KEY=VALUE names an option of the adapter (the ones `lockstep
// list` shows under it), naming them: sweep and matrix take adapter options only.
void check_adapter_sets(const std::string& adapter, const std::vector<std::string>& sets);
// check_adapter_sets, and refuses the options the swarm sets for each seed (replica_options():
// a seed that fails over runs replicas=1 at its own lag), which a --set would override: a
// replicas=0 under a drawn failover cannot run.
void check_sweep_sets(const std::string& adapter, const std::vector<std::string>& sets);

// One seed's run, judged.
struct SeedOutcome {
  uint64_t seed = 0;
  SwarmSpec spec;
  RunReport report;
  Expectation untolerated;              // violated and not excused by the spec's faults
  Expectation tolerated;                // violated, every violation excused
  std::vector<std::string> excused_by;  // per excused violation, the kind of fault that excused it
  // A seed violates when it broke an invariant no fault excuses, or did not complete. One whose
  // premise did not happen (no lock was ever held: a lock that fails every acquire) is not
  // exercised: counted apart, never a pass.
  bool violates() const {
    return !untolerated.empty() ||
           (report.end != RunEnd::complete && report.end != RunEnd::vacuous);
  }
  bool exercised() const { return report.end != RunEnd::vacuous; }
  // The invariant a shrink preserves: the first untolerated one, or "incomplete".
  std::string target() const;
};

// hash_trace = false: the run has no trace_hash and formats no trace line (RunConfig::hash_trace),
// for a seed whose outcome is only tallied; the outcome is otherwise the same.
SeedOutcome run_swarm_spec(const std::string& adapter, const SwarmSpec& spec, uint64_t seed,
                           bool fencing_on, bool keep_trace = false, bool hash_trace = true,
                           const std::vector<std::string>& adapter_sets = {});
SeedOutcome run_sweep_seed(const SweepConfig& config, const SwarmCapabilities& caps, uint64_t seed,
                           bool hash_trace = true);

struct Counterexample {
  uint64_t seed = 0;
  std::string invariant;
  std::string trace_hash;  // of the unshrunk run
  uint64_t ops = 0;        // of the unshrunk run
  uint64_t shrunk_ops = 0;
  std::string shrunk_trace_hash;
  int shrink_runs = 0;
  int64_t shrink_wall_us = 0;
  SwarmSpec shrunk;
  std::string replay_file;        // empty when not saved
  bool shrink_cut_short = false;  // the budget or a signal ended the shrink (explore/stop.h)
};

// Shrinks a violating seed's spec and saves the shrunk run as a replay report (if dir is set).
// With a clock, the shrink stops when clock->stop_shrinking() says so.
Counterexample shrink_counterexample(const SweepConfig& config, const SeedOutcome& outcome,
                                     const StopClock* clock = nullptr);

struct SweepProgress {
  int done = 0;
  int total = 0;
  int violations = 0;
  int64_t elapsed_us = 0;
};

struct SweepResult {
  SweepConfig config;
  int seeds_in_shard = 0;
  int seeds_run = 0;
  int violating_seeds = 0;
  std::vector<uint64_t> violating_seed_list;    // ascending, at most kListedMax
  std::map<std::string, int> violations;        // invariant -> seeds that broke it (untolerated)
  std::map<std::string, int> tolerated;         // invariant -> seeds where faults excused it
  std::map<std::string, int> excused_by;        // fault kind -> violations it excused ("pause":
                                                // holders' overruns)
  int excused_seeds = 0;                        // seeds with at least one excused violation
  std::map<std::string, int> excused_seeds_by;  // fault kind -> seeds where it excused one
  bool named_faults_drawn = true;               // with faults_named: at least one of them struck
  // Seeds whose run never did what a sweep is about (no lock held in the safety phase): neither
  // passes nor violations. More than kNotExercisedPercentMax of the seeds run fails the sweep:
  // random schedules sometimes keep every acquire out (a server down from the start, a partition)
  // and such seeds are spent, not failed, but a lock whose acquires mostly fail cannot pass.
  int not_exercised_seeds = 0;
  static constexpr int kNotExercisedPercentMax = 10;
  // "inside" / "outside" the envelope -> fault kind -> faults that struck
  std::map<std::string, std::map<std::string, int>> faults;
  std::vector<Counterexample> counterexamples;
  uint64_t events = 0;
  uint64_t ops = 0;
  int64_t sim_time_us = 0;
  int64_t wall_time_us = 0;
  // Why the sweep ran fewer seeds than its shard holds: "" (it ran them all), "violation" (it
  // stopped at the first violating seed), "time" (the budget), or the signal ("SIGTERM").
  std::string stopped_by;
  static constexpr size_t kListedMax = 100;
  bool enough_exercised() const {
    return named_faults_drawn && static_cast<int64_t>(not_exercised_seeds) * 100 <=
                                     static_cast<int64_t>(seeds_run) * kNotExercisedPercentMax;
  }
  bool ok() const { return violating_seeds == 0 && enough_exercised(); }
};

SweepResult run_sweep(const SweepConfig& config,
                      const std::function<void(const SweepProgress&)>& progress = {});

nlohmann::json to_json(const SweepResult& result);
std::string to_text(const SweepResult& result);
// The shard report's file name in a report dir.
std::string sweep_report_name(const SweepConfig& config);

// Adds shard reports (the JSON of to_json) up. Throws UsageError when they are not shards of one
// sweep (adapter, seed range, faults, shard count differ) or a shard is missing or repeated.
nlohmann::json merge_sweeps(const std::vector<nlohmann::json>& shards);

// Returns the text summary of a merged report.
std::string merged_text(const nlohmann::json& merged);

}  // namespace lockstep
