#include "explore/named_shrink.h"

#include <charconv>
#include <exception>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "base/check.h"

namespace lockstep {

namespace {

// config with NAME=value in its sets (replacing an earlier set of NAME).
RunConfig with_option(RunConfig config, const std::string& name, int64_t value) {
  std::erase_if(config.sets,
                [&name](const std::string& set) { return set.starts_with(name + "="); });
  config.sets.push_back(fmt::format("{}={}", name, value));
  return config;
}

std::optional<int64_t> integer_of(const std::string& text) {
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// The runs of one shrink: each tried at most once, and never more than runs_max.
class Trials {
 public:
  Trials(Invariant target, int runs_max) : target_(target), runs_max_(runs_max) {}

  // The run of config when it still breaks the target, else nullopt (also once out of runs).
  std::optional<RunReport> breaks(const RunConfig& config) {
    if (runs_ >= runs_max_) return std::nullopt;
    ++runs_;
    try {
      RunReport report = run_scenario(config);
      if (report.end != RunEnd::complete || !report.violated().contains(target_))
        return std::nullopt;
      return report;
    } catch (const std::exception&) {
      return std::nullopt;  // options the scenario refuses together: not a smaller failing run
    }
  }
  int runs() const { return runs_; }

 private:
  Invariant target_;
  int runs_max_;
  int runs_ = 0;
};

}  // namespace

void check_shrinkable_world(const RunConfig& config) {
  if (config.world != WorldKind::sim) {
    throw UsageError(
        "--shrink: runs in the simulator only (--world sim): a real run is not a "
        "function of its seed, so a smaller one proves nothing");
  }
}

std::string nothing_to_shrink(const RunReport& report) {
  if (report.end != RunEnd::complete)
    return fmt::format("the run ended {}, not judged in full", report.end);
  if (report.violations.empty()) return "the run broke no invariant";
  return {};
}

NamedShrinkResult shrink_named_run(const RunConfig& config, const RunReport& original,
                                   int runs_max) {
  check_shrinkable_world(config);
  LOCKSTEP_CHECK(nothing_to_shrink(original).empty(), "a run with something to shrink");
  const Scenario* scenario = find_scenario(config.scenario);
  LOCKSTEP_CHECK(scenario != nullptr, "a run that ran names a catalogue scenario");
  const Invariant target = original.violations.front().violation.invariant;
  Trials trials(target, runs_max);
  NamedShrinkResult result{.report = original};
  RunConfig current = config;
  for (const OptionSpec& spec : scenario->options) {
    if (!spec.is_integer()) continue;
    const std::optional<int64_t> from = integer_of(result.report.options.get(spec.name));
    if (!from || *from <= spec.min) continue;
    // Invariant: `breaking` breaks the target; every value at or below `holding` tried did not.
    int64_t breaking = *from;
    int64_t holding = spec.min - 1;
    if (std::optional<RunReport> at_min =
            trials.breaks(with_option(current, spec.name, spec.min))) {
      breaking = spec.min;
      result.report = std::move(*at_min);
    } else {
      holding = spec.min;
      while (breaking - holding > 1 && trials.runs() < runs_max) {
        const int64_t middle = holding + (breaking - holding) / 2;
        if (std::optional<RunReport> run = trials.breaks(with_option(current, spec.name, middle))) {
          breaking = middle;
          result.report = std::move(*run);
        } else {
          holding = middle;
        }
      }
    }
    if (breaking == *from) continue;
    current = with_option(current, spec.name, breaking);
    result.changes.push_back(fmt::format("{} {} -> {}", spec.name, *from, breaking));
  }
  result.runs = trials.runs();
  return result;
}

}  // namespace lockstep
