#pragma once
// JUnit XML for CI: one <testcase> per scenario cell, so a CI server shows which cell broke and
// the command that replays it.
//
// to_junit_xml is generic (sweep and anything else that yields pass/fail cases can use it); the
// junit_case turns a run into a case (explore/matrix_report.h turns a matrix into cases). The XML
// is well-formed whatever the strings hold: text and attributes are escaped, and characters XML 1.0
// cannot carry at all (control characters other than tab, newline, carriage return) are written as
// '?'.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "run/runner.h"

namespace lockstep {

struct JUnitCase {
  std::string name;
  std::string classname;
  bool passed = true;
  std::string failure_message;  // one line: what differed (when !passed)
  std::string failure_text;     // the body of <failure>: details, the replay command
  double time_s = 0;            // wall time; 0 when unknown
  // Neither passed nor failed: not judged (a sweep interrupted by a signal, a calibration cut
  // short by its budget). A skipped case is never counted as a failure.
  bool skipped = false;
  std::string skipped_message;
  std::string system_out;  // <system-out>: what a reader of a passing case may want (seeds run)
};

// <testsuites> with one <testsuite name=suite> holding cases in order, with tests/failures/skipped
// counts.
std::string to_junit_xml(std::string_view suite, const std::vector<JUnitCase>& cases);

// Writes to_junit_xml to path (creating its directory). Throws std::runtime_error when it cannot.
void write_junit(const std::filesystem::path& path, std::string_view suite,
                 const std::vector<JUnitCase>& cases);

// A run: classname = adapter, name = scenario/fencing-X/seedN; fails when the run was not ok, or,
// by_expectation (run --expect), when it is not what the catalogue expects of the adapter (nor a
// documented finding).
JUnitCase junit_case(const RunReport& report, bool by_expectation = false);

// "fencing-on" or "fencing-off", as case names spell it.
std::string fencing_name(bool on);
// Text made safe for XML element content and quoted attribute values.
std::string xml_escape(std::string_view text);

}  // namespace lockstep
