#include "explore/sweep.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <iterator>
#include <set>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/check.h"
#include "checkers/excuse.h"
#include "explore/worker_pool.h"
#include "harness/usage_error.h"
#include "history/json_input.h"
#include "lockstep/options.h"
#include "lockstep/registry.h"
#include "report/report.h"
#include "services/keep_warm.h"

namespace lockstep {

namespace {

int64_t wall_us_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                               start)
      .count();
}

std::vector<std::string> fault_names(const std::vector<FaultKind>& kinds) {
  std::vector<std::string> names;
  for (FaultKind k : kinds) names.emplace_back(to_string(k));
  return names;
}

}  // namespace

std::vector<FaultKind> parse_fault_list(const std::string& list) {
  if (list.empty() || list == "all") return sweep_fault_kinds();
  std::vector<FaultKind> kinds;
  size_t start = 0;
  while (start <= list.size()) {  // one name per comma-separated field
    const size_t comma = std::min(list.find(',', start), list.size());
    const std::string name = list.substr(start, comma - start);
    const std::optional<FaultKind> kind = fault_kind_from_string(name);
    const std::vector<FaultKind>& drawn = sweep_fault_kinds();
    if (!kind || std::find(drawn.begin(), drawn.end(), *kind) == drawn.end()) {
      throw UsageError(fmt::format("unknown fault kind \"{}\" in --faults; valid kinds: {}", name,
                                   sweep_fault_kind_names()));
    }
    if (std::find(kinds.begin(), kinds.end(), *kind) == kinds.end()) kinds.push_back(*kind);
    start = comma + 1;
  }
  return kinds;
}

std::pair<int, int> parse_shard(const std::string& text) {
  const size_t slash = text.find('/');
  const std::string_view view(text);
  const std::optional<uint64_t> index =
      slash == std::string::npos ? std::nullopt : parse_decimal_unsigned(view.substr(0, slash));
  const std::optional<uint64_t> count =
      slash == std::string::npos ? std::nullopt : parse_decimal_unsigned(view.substr(slash + 1));
  if (!index || !count || *count < 1 || *count > kShardCountMax || *index >= *count) {
    throw UsageError(
        fmt::format("--shard {} must be I/N, decimal integers with 0 <= I < N <= {} (e.g. 0/4)",
                    quote_value(text), kShardCountMax));
  }
  return {static_cast<int>(*index), static_cast<int>(*count)};
}

bool seed_in_shard(uint64_t seed, uint64_t first_seed, int index, int count) {
  return (seed - first_seed) % static_cast<uint64_t>(count) == static_cast<uint64_t>(index);
}

std::string SeedOutcome::target() const {
  if (!untolerated.empty()) return std::string(to_string(*untolerated.begin()));
  return report.end == RunEnd::complete ? "" : "incomplete";
}

void check_adapter_sets(const std::string& adapter, const std::vector<std::string>& sets) {
  const AdapterEntry* entry = find_adapter(adapter);
  if (entry == nullptr) return;  // named by the caller's own check
  std::vector<std::string> names;
  for (const OptionSpec& option : entry->options) names.push_back(option.name);
  for (const std::string& set : sets) {
    const std::string key = set.substr(0, set.find('='));
    if (std::find(names.begin(), names.end(), key) == names.end()) {
      throw UsageError(fmt::format(
          "--set {}: not an option of adapter {} (its options: {}); the swarm draws the "
          "scenario's",
          key, adapter,
          names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", "))));
    }
  }
}

void check_sweep_sets(const std::string& adapter, const std::vector<std::string>& sets) {
  check_adapter_sets(adapter, sets);
  for (const OptionSpec& drawn : replica_options("")) {
    for (const std::string& set : sets) {
      if (set.substr(0, set.find('=')) != drawn.name) continue;
      throw UsageError(fmt::format(
          "--set {}: the swarm sets it for each seed (a seed with a failover runs replicas=1 at "
          "its drawn replication_delay_ms); leave it out",
          drawn.name));
    }
  }
}

SeedOutcome run_swarm_spec(const std::string& adapter, const SwarmSpec& spec, uint64_t seed,
                           bool fencing_on, bool keep_trace, bool hash_trace,
                           const std::vector<std::string>& adapter_sets) {
  SeedOutcome out{.seed = seed, .spec = spec};
  std::vector<std::string> sets = swarm_sets(spec, swarm_capabilities(adapter));
  sets.insert(sets.end(), adapter_sets.begin(), adapter_sets.end());
  out.report = run_scenario(make_swarm_scenario(spec), {.adapter = adapter,
                                                        .seed = seed,
                                                        .fencing_on = fencing_on,
                                                        .sets = std::move(sets),
                                                        .keep_trace = keep_trace,
                                                        .hash_trace = hash_trace});
  // An invariant is excused only when each of its violations is (excuse.h): by a fault outside the
  // adapter's envelope that touched the clients, key and window involved.
  for (const ReportedViolation& rv : out.report.violations) {
    const Violation& v = rv.violation;
    if (v.excused()) {
      out.excused_by.push_back(std::string(to_string(out.report.history[*v.excused_by].fault)));
    } else {
      out.untolerated.insert(v.invariant);
    }
  }
  for (Invariant i : out.report.violated()) {
    if (out.untolerated.count(i) == 0) out.tolerated.insert(i);
  }
  return out;
}

SeedOutcome run_sweep_seed(const SweepConfig& config, const SwarmCapabilities& caps, uint64_t seed,
                           bool hash_trace) {
  const SwarmSpec spec = draw_swarm_spec(caps, seed, {.faults = config.faults});
  return run_swarm_spec(config.adapter, spec, seed, config.fencing_on, false, hash_trace,
                        config.sets);
}

Counterexample shrink_counterexample(const SweepConfig& config, const SeedOutcome& outcome,
                                     const StopClock* clock) {
  const auto start = std::chrono::steady_clock::now();
  ShrinkOptions options = config.shrink;
  if (clock != nullptr) options.stop = [clock] { return clock->stop_shrinking(); };
  const std::string target = outcome.target();
  Counterexample cx{.seed = outcome.seed,
                    .invariant = target,
                    .trace_hash = outcome.report.trace_hash,
                    .ops = outcome.report.stats.ops};
  // A seed that ended as an error (a driver that crashed or went silent: outside the
  // simulator's determinism, and each silent exchange costs its deadline of real time) is kept
  // as drawn: shrinking toward an error would rerun that cost for every candidate.
  const ShrinkResult shrunk = target == "incomplete"
                                  ? ShrinkResult{.spec = outcome.spec}
                                  : shrink(
                                        outcome.spec,
                                        [&](const SwarmSpec& candidate) {
                                          // A candidate's hash is never reported: only the final run's.
                                          const SeedOutcome o = run_swarm_spec(
                                              config.adapter, candidate, outcome.seed,
                                              config.fencing_on, false, false, config.sets);
                                          return o.violates() && o.target() == target;
                                        },
                                        options);
  SwarmSpec kept = shrunk.spec;
  SeedOutcome final_run = run_swarm_spec(config.adapter, kept, outcome.seed, config.fencing_on,
                                         true, true, config.sets);
  cx.shrink_cut_short = shrunk.cut_short;
  const bool signalled = clock != nullptr && clock->signal() != 0;
  if (final_run.target() != target && !signalled &&
      (target == "incomplete" || final_run.target() == "incomplete")) {
    // A run that ended as an error (a driver process that crashed or stopped answering: outside
    // the simulator's determinism) need not end so again: the counterexample is the seed's own
    // spec, as drawn, with whatever its run gives now.
    kept = outcome.spec;
    final_run = run_swarm_spec(config.adapter, kept, outcome.seed, config.fencing_on, true, true,
                               config.sets);
  } else if (final_run.target() != target) {
    // Only a signal may break a run (the process registry kills a driver the run was talking to
    // as the signal arrives): then there is no replay file to save, and nothing else is wrong.
    LOCKSTEP_CHECK(signalled, "a shrunk spec violates what the original did");
    cx.shrunk = kept;
    cx.shrink_runs = shrunk.runs;
    cx.shrink_wall_us = wall_us_since(start);
    return cx;
  }
  cx.shrunk = kept;
  cx.shrunk_ops = final_run.report.stats.ops;
  cx.shrunk_trace_hash = final_run.report.trace_hash;
  cx.shrink_runs = shrunk.runs;
  if (!config.report_dir.empty()) {
    try {
      cx.replay_file = write_report(final_run.report, config.report_dir, to_json(kept)).string();
    } catch (const std::runtime_error& e) {
      throw OutputError(fmt::format("the replay file of seed {}: {}", outcome.seed, e.what()));
    }
  }
  cx.shrink_wall_us = wall_us_since(start);
  return cx;
}

namespace {

// What the sweep's result needs of one seed's run: small enough to cross a pipe from a worker.
struct SeedTally {
  uint64_t seed = 0;
  bool violates = false;
  bool complete = true;
  bool exercised = true;
  uint64_t events = 0;
  uint64_t ops = 0;
  int64_t sim_time_us = 0;
  std::vector<std::string> untolerated;
  std::vector<std::string> tolerated;
  std::vector<std::string> excused_by;
  std::map<std::string, std::map<std::string, int>> faults;  // inside/outside -> kind -> count
};

SeedTally tally_of(const SeedOutcome& o) {
  SeedTally t{.seed = o.seed,
              .violates = o.violates(),
              .complete = o.report.end == RunEnd::complete,
              .exercised = o.exercised(),
              .events = o.report.stats.events,
              .ops = o.report.stats.ops,
              .sim_time_us = o.report.stats.sim_time_us,
              .excused_by = o.excused_by};
  for (Invariant i : o.untolerated) t.untolerated.emplace_back(to_string(i));
  for (Invariant i : o.tolerated) t.tolerated.emplace_back(to_string(i));
  for (const HistoryEvent& e : o.report.history.events()) {
    if (e.kind != EventKind::fault || e.fault == FaultKind::other) continue;
    ++t.faults[inside_envelope(o.report.history, e) ? "inside" : "outside"]
              [std::string(to_string(e.fault))];
  }
  return t;
}

// A tally crosses a worker's pipe as fields separated by spaces: integers in decimal, a string as
// its length, ':' and its bytes (nothing escaped, nothing assumed of the bytes), a list as its
// length then its items. Not JSON: nlohmann's dump and parse of a tally cost 7% of a memory seed.
class TallyWriter {
 public:
  template <typename Integer>
  void integer(Integer n) {
    char digits[24];  // a 64-bit integer and its sign fit
    const auto [end, ec] = std::to_chars(std::begin(digits), std::end(digits), n);
    LOCKSTEP_CHECK(ec == std::errc(), "an integer fits 24 characters");
    out_.append(digits, end).push_back(' ');
  }
  void text(std::string_view s) {
    integer(s.size());
    out_.back() = ':';
    out_.append(s).push_back(' ');
  }
  void texts(const std::vector<std::string>& items) {
    integer(items.size());
    for (const std::string& s : items) text(s);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

// Reads what TallyWriter wrote; anything else is a broken worker, a checked failure.
class TallyReader {
 public:
  explicit TallyReader(std::string_view in) : in_(in) {}
  // A number and the separator after it.
  template <typename Integer>
  Integer integer(char separator = ' ') {
    Integer n{};
    const auto [end, ec] = std::from_chars(in_.data(), in_.data() + in_.size(), n);
    LOCKSTEP_CHECK(ec == std::errc() && end < in_.data() + in_.size() && *end == separator,
                   "a seed's tally has a malformed number");
    in_.remove_prefix(static_cast<size_t>(end - in_.data()) + 1);
    return n;
  }
  std::string text() {
    const auto size = integer<size_t>(':');
    LOCKSTEP_CHECK(size < in_.size() && in_[size] == ' ', "a seed's tally has a malformed string");
    std::string s(in_.substr(0, size));
    in_.remove_prefix(size + 1);
    return s;
  }
  std::vector<std::string> texts() {
    const auto count = integer<size_t>();
    LOCKSTEP_CHECK(count <= in_.size(), "a seed's tally counts more strings than it holds");
    std::vector<std::string> items(count);
    for (std::string& s : items) s = text();
    return items;
  }
  bool done() const { return in_.empty(); }

 private:
  std::string_view in_;
};

std::string encode(const SeedTally& t) {
  TallyWriter w;
  w.integer(t.seed);
  w.integer(int{t.violates});
  w.integer(int{t.complete});
  w.integer(int{t.exercised});
  w.integer(t.events);
  w.integer(t.ops);
  w.integer(t.sim_time_us);
  w.texts(t.untolerated);
  w.texts(t.tolerated);
  w.texts(t.excused_by);
  size_t fault_kinds = 0;
  for (const auto& [side, kinds] : t.faults) fault_kinds += kinds.size();
  w.integer(fault_kinds);
  for (const auto& [side, kinds] : t.faults) {
    for (const auto& [kind, n] : kinds) {
      w.text(side);
      w.text(kind);
      w.integer(n);
    }
  }
  return w.take();
}

SeedTally decode(const std::string& text) {
  TallyReader r(text);
  SeedTally t{.seed = r.integer<uint64_t>(),
              .violates = r.integer<int>() != 0,
              .complete = r.integer<int>() != 0,
              .exercised = r.integer<int>() != 0,
              .events = r.integer<uint64_t>(),
              .ops = r.integer<uint64_t>(),
              .sim_time_us = r.integer<int64_t>()};
  t.untolerated = r.texts();
  t.tolerated = r.texts();
  t.excused_by = r.texts();
  const auto fault_kinds = r.integer<size_t>();
  LOCKSTEP_CHECK(fault_kinds <= text.size(), "a seed's tally counts more faults than it holds");
  for (size_t i = 0; i < fault_kinds; ++i) {
    std::string side = r.text();
    std::string kind = r.text();
    t.faults[side][kind] = r.integer<int>();
  }
  LOCKSTEP_CHECK(r.done(), "a seed's tally has bytes after its end");
  return t;
}

void tally(SweepResult& result, const SeedTally& t) {
  ++result.seeds_run;
  result.events += t.events;
  result.ops += t.ops;
  result.sim_time_us += t.sim_time_us;
  for (const std::string& i : t.tolerated) ++result.tolerated[i];
  for (const std::string& kind : t.excused_by) ++result.excused_by[kind];
  if (!t.excused_by.empty()) ++result.excused_seeds;
  const std::set<std::string> excusing(t.excused_by.begin(), t.excused_by.end());
  for (const std::string& kind : excusing) ++result.excused_seeds_by[kind];
  if (!t.exercised) ++result.not_exercised_seeds;
  for (const auto& [side, kinds] : t.faults) {
    for (const auto& [kind, n] : kinds) result.faults[side][kind] += n;
  }
  if (!t.violates) return;
  ++result.violating_seeds;
  if (result.violating_seed_list.size() < SweepResult::kListedMax)
    result.violating_seed_list.push_back(t.seed);
  for (const std::string& i : t.untolerated) ++result.violations[i];
  if (!t.complete && t.exercised) ++result.violations["incomplete"];
}

// Each named kind must be one the adapter's simulated backend can strike: a sweep that asks for a
// failover of an in-process lock would run without one and pass.
void check_strikable(const SweepConfig& config, const SwarmCapabilities& caps) {
  const std::vector<FaultKind> can = strikable_fault_kinds(caps);
  std::vector<std::string_view> refused;
  for (FaultKind kind : config.faults) {
    if (std::find(can.begin(), can.end(), kind) == can.end()) refused.push_back(to_string(kind));
  }
  if (refused.empty()) return;
  std::vector<std::string_view> names;
  for (FaultKind kind : can) names.push_back(to_string(kind));
  throw UsageError(
      fmt::format("--faults {}: adapter {} cannot be struck by it in the simulator; "
                  "it can: {}",
                  fmt::join(refused, ","), config.adapter, fmt::join(names, ", ")));
}

// Whether any fault of the named kinds struck (a restart shows as its crash and its restart).
bool drew_named_faults(const SweepResult& result) {
  for (FaultKind kind : result.config.faults) {
    for (const auto& [side, kinds] : result.faults) {
      if (kinds.count(std::string(to_string(kind))) > 0) return true;
    }
  }
  return false;
}

}  // namespace

SweepResult run_sweep(const SweepConfig& config,
                      const std::function<void(const SweepProgress&)>& progress) {
  const auto start = std::chrono::steady_clock::now();
  const StopClock clock(config.stop);
  const KeepBackendsWarm warm;  // co-simulated drivers serve seed after seed (keep_warm.h)
  const SwarmCapabilities caps = swarm_capabilities(config.adapter);
  if (config.faults_named) check_strikable(config, caps);
  SweepResult result{.config = config};
  std::vector<uint64_t> seeds;  // this shard's, in order
  for (int i = 0; i < config.seeds; ++i) {
    const uint64_t seed = config.first_seed + static_cast<uint64_t>(i);
    if (seed_in_shard(seed, config.first_seed, config.shard_index, config.shard_count))
      seeds.push_back(seed);
  }
  result.seeds_in_shard = static_cast<int>(seeds.size());
  // Seeds run on `jobs` workers; their tallies are taken in seed order, so the result (the first
  // violating seed, what is shrunk, where a sweep without --keep-going stops) is one process's.
  run_in_order(
      seeds.size(), config.jobs,
      [&](size_t i) {
        // A tally carries no trace hash: a counterexample's is taken from its run again below.
        return encode(tally_of(run_sweep_seed(config, caps, seeds[i], false)));
      },
      [&](size_t, const std::string& encoded) {
        const SeedTally t = decode(encoded);
        tally(result, t);
        if (t.violates && static_cast<int>(result.counterexamples.size()) < config.shrink_max) {
          // Run again here (a pure function of the seed) for the whole outcome to shrink.
          result.counterexamples.push_back(
              shrink_counterexample(config, run_sweep_seed(config, caps, t.seed), &clock));
        }
        if (progress) {
          progress({.done = result.seeds_run,
                    .total = result.seeds_in_shard,
                    .violations = result.violating_seeds,
                    .elapsed_us = wall_us_since(start)});
        }
        if (t.violates && !config.keep_going) result.stopped_by = "violation";
        return !t.violates || config.keep_going;
      },
      [&clock] { return clock.stop_seeds(); });
  if (result.stopped_by.empty() && result.seeds_run < result.seeds_in_shard)
    result.stopped_by = clock.reason();
  if (config.faults_named) result.named_faults_drawn = drew_named_faults(result);
  result.wall_time_us = wall_us_since(start);
  return result;
}

std::string sweep_report_name(const SweepConfig& c) {
  return fmt::format("sweep.{}.seeds{}-{}.shard{}of{}.json", portable(c.adapter), c.first_seed,
                     c.first_seed + static_cast<uint64_t>(c.seeds) - 1, c.shard_index,
                     c.shard_count);
}

nlohmann::json to_json(const SweepResult& r) {
  nlohmann::json cxs = nlohmann::json::array();
  for (const Counterexample& cx : r.counterexamples) {
    cxs.push_back({{"seed", cx.seed},
                   {"invariant", cx.invariant},
                   {"trace_hash", cx.trace_hash},
                   {"ops", cx.ops},
                   {"shrunk_ops", cx.shrunk_ops},
                   {"shrunk_trace_hash", cx.shrunk_trace_hash},
                   {"shrink_runs", cx.shrink_runs},
                   {"shrink_wall_time_us", cx.shrink_wall_us},
                   {"replay_file", cx.replay_file},
                   {"shrink_cut_short", cx.shrink_cut_short},
                   {"replay", replay_file_command(cx.replay_file)},
                   {"spec", to_json(cx.shrunk)}});
  }
  const SweepConfig& c = r.config;
  nlohmann::json out = {
      {"kind", "sweep"},
      {"verdict", r.violating_seeds > 0   ? "violation"
                  : !r.enough_exercised() ? "vacuous"
                                          : "ok"},
      {"adapter", c.adapter},
      {"first_seed", c.first_seed},
      {"seeds", c.seeds},
      {"faults", fault_names(c.faults)},
      {"fencing", c.fencing_on ? "on" : "off"},
      {"keep_going", c.keep_going},
      {"shard", {{"index", c.shard_index}, {"count", c.shard_count}}},
      {"seeds_in_shard", r.seeds_in_shard},
      {"seeds_run", r.seeds_run},
      {"violating_seeds", r.violating_seeds},
      {"violating_seed_list", r.violating_seed_list},
      {"violations", r.violations},
      {"tolerated", r.tolerated},
      {"excused_by", r.excused_by},
      {"excused_seeds", r.excused_seeds},
      {"excused_seeds_by", r.excused_seeds_by},
      {"not_exercised_seeds", r.not_exercised_seeds},
      {"faults_drawn", r.faults},
      {"counterexamples", cxs},
      {"stopped_by", r.stopped_by},
      {"time_budget_s", c.stop.time_budget_us > 0
                            ? nlohmann::json(static_cast<double>(c.stop.time_budget_us) / 1e6)
                            : nlohmann::json()},
      {"stats",
       {{"events", r.events},
        {"ops", r.ops},
        {"sim_time_us", r.sim_time_us},
        {"wall_time_us", r.wall_time_us}}}};
  if (!c.sets.empty()) out["sets"] = c.sets;  // the adapter's options, when any were set
  return out;
}

namespace {

std::string counts_text(const nlohmann::json& counts) {
  std::vector<std::string> parts;
  for (const auto& [name, n] : counts.items())
    parts.push_back(fmt::format("{} {}", name, n.get<int>()));
  return parts.empty() ? "none" : fmt::format("{}", fmt::join(parts, ", "));
}

// Per fault kind, the seeds where it excused a violation and their share of the seeds run, then
// the seeds with any: "pause 40 (4.0%), server-drift 7 (0.7%); any 45 (4.5%)".
std::string excused_seeds_text(const nlohmann::json& by_kind, int excused_seeds, int run) {
  const auto share = [run](int n) { return run > 0 ? 100.0 * n / run : 0.0; };
  std::vector<std::string> parts;
  for (const auto& [kind, n] : by_kind.items())
    parts.push_back(fmt::format("{} {} ({:.1f}%)", kind, n.get<int>(), share(n.get<int>())));
  return fmt::format("{}; any {} ({:.1f}%)",
                     parts.empty() ? "none" : fmt::format("{}", fmt::join(parts, ", ")),
                     excused_seeds, share(excused_seeds));
}

std::string summary_text(const nlohmann::json& j) {
  const double wall_s = static_cast<double>(j.at("stats").at("wall_time_us").get<int64_t>()) / 1e6;
  const int run = j.at("seeds_run").get<int>();
  std::string out =
      fmt::format("sweep {} seeds {}..{} (faults: {}; fencing {}): {}\n",
                  j.at("adapter").get<std::string>(), j.at("first_seed").get<uint64_t>(),
                  j.at("first_seed").get<uint64_t>() + j.at("seeds").get<uint64_t>() - 1,
                  fmt::join(j.at("faults").get<std::vector<std::string>>(), ","),
                  j.at("fencing").get<std::string>(), j.at("verdict").get<std::string>());
  const std::string stopped_by = j.value("stopped_by", "");
  const int in_shard = j.value("seeds_in_shard", run);
  if (stopped_by == "time") {
    out += fmt::format("  stopped at its time budget ({}s) after {} of {} seeds\n",
                       j.at("time_budget_s").get<double>(), run, in_shard);
  } else if (!stopped_by.empty() && stopped_by != "violation") {
    out += fmt::format("  interrupted by {} after {} of {} seeds: a partial report\n", stopped_by,
                       run, in_shard);
  }
  out += fmt::format("  {} seeds run, {} violating ({}); excused by their faults: {}\n", run,
                     j.at("violating_seeds").get<int>(), counts_text(j.at("violations")),
                     counts_text(j.at("tolerated")));
  out += fmt::format("  violations excused, by the fault outside the envelope: {}\n",
                     counts_text(j.at("excused_by")));
  out += fmt::format("  seeds with excused violations: {}\n",
                     excused_seeds_text(j.value("excused_seeds_by", nlohmann::json::object()),
                                        j.at("excused_seeds").get<int>(), run));
  const int not_exercised = j.at("not_exercised_seeds").get<int>();
  out += fmt::format(
      "  not exercised (no lock held while faults could strike): {} seeds ({:.1f}%; at most "
      "{}% passes)\n",
      not_exercised, run > 0 ? 100.0 * not_exercised / run : 0.0,
      SweepResult::kNotExercisedPercentMax);
  out += fmt::format("  faults struck: inside the envelope {}; outside {}\n",
                     counts_text(j.at("faults_drawn").value("inside", nlohmann::json::object())),
                     counts_text(j.at("faults_drawn").value("outside", nlohmann::json::object())));
  out += fmt::format("  {} ops, {:.1f}s simulated in {:.2f}s wall ({:.0f} seeds/s)\n",
                     j.at("stats").at("ops").get<uint64_t>(),
                     static_cast<double>(j.at("stats").at("sim_time_us").get<int64_t>()) / 1e6,
                     wall_s, wall_s > 0 ? run / wall_s : 0.0);
  for (const auto& cx : j.at("counterexamples")) {
    out += fmt::format("  seed {} breaks {}: {} ops, shrunk to {} ops in {} runs{}\n",
                       cx.at("seed").get<uint64_t>(), cx.at("invariant").get<std::string>(),
                       cx.at("ops").get<uint64_t>(), cx.at("shrunk_ops").get<uint64_t>(),
                       cx.at("shrink_runs").get<int>(),
                       cx.value("shrink_cut_short", false) ? " (its shrink was cut short)" : "");
    if (!cx.at("replay").get<std::string>().empty())
      out += "  replay: " + cx.at("replay").get<std::string>() + "\n";
  }
  return out;
}

void add_counts(nlohmann::json& into, const nlohmann::json& from) {
  for (const auto& [name, n] : from.items()) into[name] = into.value(name, 0) + n.get<int>();
}

}  // namespace

std::string to_text(const SweepResult& result) { return summary_text(to_json(result)); }

nlohmann::json merge_sweeps(const std::vector<nlohmann::json>& shards) {
  if (shards.empty()) throw UsageError("sweep-merge: no shard reports given");
  const nlohmann::json& first = shards.front();
  const int count = first.at("shard").at("count").get<int>();
  std::vector<int> seen(static_cast<size_t>(count), 0);
  nlohmann::json merged = first;
  merged["shard"] = {{"index", 0}, {"count", 1}};
  for (const char* field :
       {"seeds_in_shard", "seeds_run", "violating_seeds", "excused_seeds", "not_exercised_seeds"})
    merged[field] = 0;
  for (const char* field : {"violations", "tolerated", "excused_by", "excused_seeds_by"})
    merged[field] = nlohmann::json::object();
  merged["faults_drawn"] = {{"inside", nlohmann::json::object()},
                            {"outside", nlohmann::json::object()}};
  merged["counterexamples"] = nlohmann::json::array();
  merged["violating_seed_list"] = nlohmann::json::array();
  merged["stats"] = {{"events", 0}, {"ops", 0}, {"sim_time_us", 0}, {"wall_time_us", 0}};
  merged["stopped_by"] = "";
  for (const nlohmann::json& s : shards) {
    for (const char* field : {"adapter", "first_seed", "seeds", "faults", "fencing", "sets"}) {
      if (s.value(field, nlohmann::json()) != first.value(field, nlohmann::json())) {
        throw UsageError(fmt::format(
            "sweep-merge: the reports are not shards of one sweep ({} differs: {} vs {})", field,
            json_brief(s.value(field, nlohmann::json())),
            json_brief(first.value(field, nlohmann::json()))));
      }
    }
    const int index = s.at("shard").at("index").get<int>();
    if (s.at("shard").at("count").get<int>() != count || index < 0 || index >= count) {
      throw UsageError("sweep-merge: the reports disagree on the shard count");
    }
    if (seen[static_cast<size_t>(index)]++ > 0)
      throw UsageError(fmt::format("sweep-merge: shard {}/{} given twice", index, count));
    for (const char* field : {"seeds_in_shard", "seeds_run", "violating_seeds", "excused_seeds",
                              "not_exercised_seeds"}) {
      merged[field] = merged[field].get<int>() + s.at(field).get<int>();
    }
    add_counts(merged["violations"], s.at("violations"));
    add_counts(merged["tolerated"], s.at("tolerated"));
    add_counts(merged["excused_by"], s.at("excused_by"));
    add_counts(merged["excused_seeds_by"], s.value("excused_seeds_by", nlohmann::json::object()));
    for (const char* side : {"inside", "outside"}) {
      add_counts(merged["faults_drawn"][side],
                 s.at("faults_drawn").value(side, nlohmann::json::object()));
    }
    for (const auto& cx : s.at("counterexamples")) merged["counterexamples"].push_back(cx);
    // A shard cut short by its budget or a signal leaves the merged sweep partial: say why (the
    // first shard's reason; a violation's stop is any shard's own business).
    const std::string stopped = s.value("stopped_by", "");
    if (merged["stopped_by"] == "" && stopped != "" && stopped != "violation") {
      merged["stopped_by"] = stopped;
      merged["time_budget_s"] = s.value("time_budget_s", nlohmann::json());
    }
    for (const auto& seed : s.at("violating_seed_list"))
      merged["violating_seed_list"].push_back(seed);
    for (const char* field : {"events", "ops", "sim_time_us"}) {
      merged["stats"][field] =
          merged["stats"][field].get<int64_t>() + s.at("stats").at(field).get<int64_t>();
    }
    // Shards run side by side: the sweep took as long as its slowest shard.
    merged["stats"]["wall_time_us"] = std::max(merged["stats"]["wall_time_us"].get<int64_t>(),
                                               s.at("stats").at("wall_time_us").get<int64_t>());
  }
  std::vector<std::string> missing;  // the first few by name, then how many: one short line
  size_t missing_count = 0;
  for (int i = 0; i < count; ++i) {
    if (seen[static_cast<size_t>(i)] != 0) continue;
    if (++missing_count <= 5) missing.push_back(fmt::format("{}/{}", i, count));
  }
  if (missing_count > 0) {
    throw UsageError(fmt::format("sweep-merge: missing shards: {}{}", fmt::join(missing, ", "),
                                 missing_count > missing.size()
                                     ? fmt::format(" and {} more", missing_count - missing.size())
                                     : ""));
  }
  std::vector<uint64_t> seeds = merged["violating_seed_list"].get<std::vector<uint64_t>>();
  std::sort(seeds.begin(), seeds.end());
  merged["violating_seed_list"] = seeds;
  const SweepResult counts{.seeds_run = merged["seeds_run"].get<int>(),
                           .violating_seeds = merged["violating_seeds"].get<int>(),
                           .not_exercised_seeds = merged["not_exercised_seeds"].get<int>()};
  merged["verdict"] = counts.violating_seeds > 0   ? "violation"
                      : !counts.enough_exercised() ? "vacuous"
                                                   : "ok";
  merged["merged_shards"] = count;
  return merged;
}

std::string merged_text(const nlohmann::json& merged) { return summary_text(merged); }

}  // namespace lockstep
