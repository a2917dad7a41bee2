#include "report/junit.h"

#include <algorithm>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

#include "report/report.h"

namespace lockstep {

namespace {

// XML 1.0 allows no C0 control characters but tab, newline and carriage return, not even escaped.
bool xml_forbidden(char ch) {
  const auto u = static_cast<unsigned char>(ch);
  return u < 0x20 && ch != '\t' && ch != '\n' && ch != '\r';
}

// In attributes, parsers turn raw tabs and line breaks into spaces; references keep them.
std::string xml_attribute(std::string_view text) {
  std::string out;
  for (char ch : xml_escape(text)) {
    switch (ch) {
      case '\t': out += "&#9;"; break;
      case '\n': out += "&#10;"; break;
      case '\r': out += "&#13;"; break;
      default: out += ch;
    }
  }
  return out;
}

std::string testcase_xml(const JUnitCase& c) {
  std::string out = fmt::format("    <testcase classname=\"{}\" name=\"{}\" time=\"{:.6f}\"",
                                xml_attribute(c.classname), xml_attribute(c.name), c.time_s);
  std::string body;
  if (c.skipped) {
    body += fmt::format("      <skipped message=\"{}\"/>\n", xml_attribute(c.skipped_message));
  } else if (!c.passed) {
    body += fmt::format("      <failure message=\"{}\" type=\"failure\">{}</failure>\n",
                        xml_attribute(c.failure_message), xml_escape(c.failure_text));
  }
  if (!c.system_out.empty())
    body += fmt::format("      <system-out>{}</system-out>\n", xml_escape(c.system_out));
  if (body.empty()) return out + "/>\n";
  return out + ">\n" + body + "    </testcase>\n";
}

std::string violations_line(const RunReport& report) {
  if (report.end != RunEnd::complete)
    return fmt::format("run did not complete: {}", report.end_message);
  const Violation& v = report.violations.front().violation;
  return fmt::format("{} violation(s), first {} at {}us on key {}: {}", report.violations.size(),
                     to_string(v.invariant), v.time_us, v.key, v.detail);
}

// What differs from the expectation in a run that completed: observed against expected (which may
// be a violation that did not happen: no violation to quote).
std::string expectation_line(const RunReport& report) {
  const auto names = [](const Expectation& e) {
    std::string out;
    for (Invariant i : e) out += (out.empty() ? "" : ", ") + std::string(to_string(i));
    return out.empty() ? std::string("safe") : "violation: " + out;
  };
  return fmt::format("observed {}, expected {}", names(report.violated()), names(report.expected));
}

}  // namespace

std::string fencing_name(bool on) { return on ? "fencing-on" : "fencing-off"; }

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += xml_forbidden(ch) ? '?' : ch;
    }
  }
  return out;
}

std::string to_junit_xml(std::string_view suite, const std::vector<JUnitCase>& cases) {
  const auto failures = std::count_if(cases.begin(), cases.end(),
                                      [](const JUnitCase& c) { return !c.passed && !c.skipped; });
  const auto skipped =
      std::count_if(cases.begin(), cases.end(), [](const JUnitCase& c) { return c.skipped; });
  double total_s = 0;
  for (const JUnitCase& c : cases) total_s += c.time_s;
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format(
      "<testsuites tests=\"{0}\" failures=\"{1}\" errors=\"0\" skipped=\"{4}\" time=\"{2:.6f}\">\n"
      "  <testsuite name=\"{3}\" tests=\"{0}\" failures=\"{1}\" errors=\"0\" skipped=\"{4}\""
      " time=\"{2:.6f}\">\n",
      cases.size(), failures, total_s, xml_attribute(suite), skipped);
  for (const JUnitCase& c : cases) out += testcase_xml(c);
  return out + "  </testsuite>\n</testsuites>\n";
}

void write_junit(const std::filesystem::path& path, std::string_view suite,
                 const std::vector<JUnitCase>& cases) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  std::ofstream out(path);
  out << to_junit_xml(suite, cases);
  out.flush();  // a full disk shows only when the buffer goes out
  if (ec || !out)
    throw std::runtime_error(fmt::format("cannot write JUnit XML to {}", path.string()));
}

JUnitCase junit_case(const RunReport& report, bool by_expectation) {
  const bool as_expected = report.matches_expectation() || !report.finding.empty();
  JUnitCase c{.name = fmt::format("{}/{}/seed{}", report.config.scenario,
                                  fencing_name(report.config.fencing_on), report.config.seed),
              .classname = report.config.adapter,
              .passed = by_expectation ? as_expected : report.ok(),
              .time_s = static_cast<double>(report.stats.wall_time_us) / 1e6};
  if (!c.passed) {
    c.failure_message = by_expectation && report.end == RunEnd::complete ? expectation_line(report)
                                                                         : violations_line(report);
    c.failure_text = to_text(report);  // every violation with its excerpt, and the replay line
  }
  return c;
}

}  // namespace lockstep
