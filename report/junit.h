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
};

// <testsuites> with one <testsuite name=suite> holding cases in order, with tests/failures counts.
std::string to_junit_xml(std::string_view suite, const std::vector<JUnitCase>& cases);

// Writes to_junit_xml to path (creating its directory). Throws std::runtime_error when it cannot.
void write_junit(const std::filesystem::path& path, std::string_view suite,
                 const std::vector<JUnitCase>& cases);

// A run: classname = adapter, name = scenario/fencing-X/seedN; fails when the run was not ok.
JUnitCase junit_case(const RunReport& report);

// "fencing-on" or "fencing-off", as case names spell it.
std::string fencing_name(bool on);
// Text made safe for XML element content and quoted attribute values.
std::string xml_escape(std::string_view text);

}  // namespace lockstep
