#include "cli/check_command.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "checkers/excuse.h"
#include "cli/output_paths.h"
#include "history/history_jsonl.h"
#include "history/json_input.h"
#include "report/report.h"
#include "run/runner.h"

namespace lockstep {

namespace {

History read_or_throw(const std::string& path) {
  // Only a regular file: a directory has nothing to read, and opening a FIFO with no writer
  // would block forever (checked on the descriptor it is then read from).
  int fd = -1;
  try {
    fd = open_regular_file(path);
  } catch (const InputError& e) {
    throw UsageError(
        fmt::format("{} is not a history file (a regular JSON Lines file): {}", path, e.what()));
  }
  std::ifstream in(fmt::format("/proc/self/fd/{}", fd));
  ::close(fd);
  if (!in) throw UsageError(fmt::format("cannot read history {}", path));
  try {
    History history = read_history_jsonl(in);
    if (history.size() == 0) {
      throw UsageError(fmt::format("{}: the history holds no event: nothing to judge", path));
    }
    return history;
  } catch (const HistoryFormatError& e) {
    throw UsageError(fmt::format("{} is not a lockstep history: {}", path, e.what()));
  }
}

}  // namespace

int cmd_check(const std::string& path, bool json) {
  const History history = read_or_throw(path);
  const std::vector<Violation> violations = check_and_excuse(history);
  if (json) {
    nlohmann::json out = {{"history", path},
                          {"events", history.size()},
                          {"verdict", violations.empty() ? "ok" : "violation"},
                          {"violations", nlohmann::json::array()}};
    for (const Violation& v : violations) {
      out["violations"].push_back(violation_json({.violation = v}));
    }
    print_out(json_text(out) + "\n");  // a file name need not be UTF-8
  } else {
    print_out(fmt::format("{}: {} events, {}\n", path, history.size(),
                          violations.empty() ? "every invariant held" : "VIOLATION"));
    for (const Violation& v : violations) {
      print_out(fmt::format("  {} at {} us on key {}: {}\n    excused by: {}\n",
                            to_string(v.invariant), v.time_us, v.key, v.detail, v.excuse));
    }
  }
  return violations.empty() ? 0 : 1;
}

}  // namespace lockstep
