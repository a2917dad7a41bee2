#include "explore/matrix_report.h"

#include <string_view>

#include <fmt/format.h>

#include "report/report_html.h"

namespace lockstep {

namespace {

std::string cell_row(const MatrixCell& c) {
  return fmt::format(
      "<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td class=\"{}\">{}</td><td>{}</td>"
      "<td>{}</td></tr>\n",
      c.matches ? "match" : "differs", html_escape(c.scenario), html_escape(c.adapter),
      c.fencing_on ? "on" : "off", c.observed.empty() ? "safe" : "unsafe",
      html_escape(describe(c.observed)), html_escape(describe(c.expected)),
      !c.matches          ? "<b>no</b>: <code>" + html_escape(c.first_mismatch) + "</code>"
      : c.finding.empty() ? std::string("yes")
                          : "finding: " + html_escape(c.finding) + " <code>" +
                                html_escape(c.first_finding) + "</code>");
}

constexpr std::string_view kMatrixStyle = R"css(<style>
table.matrix { border-collapse: collapse; }
table.matrix th, table.matrix td { border: 1px solid #ddd; padding: 3px 8px; text-align: left; white-space: nowrap; }
tr.match td { background: #e8f5e9; } tr.differs td { background: #ffebee; }
td.unsafe { color: #b71c1c; font-weight: 600; } td.safe { color: #1b5e20; }
</style>
)css";

}  // namespace

std::string matrix_html(const MatrixResult& result) {
  std::string body(kMatrixStyle);
  body += fmt::format("<h1>lockstep matrix: {}</h1>\n",
                      result.all_match() ? "every cell as expected" : "cells DIFFER");
  body +=
      "<table "
      "class=\"matrix\">\n<tr><th>scenario</th><th>adapter</th><th>fencing</th><th>observed</th>"
      "<th>expected</th><th>matches</th></tr>\n";
  for (const MatrixCell& c : result.cells) body += cell_row(c);
  body += "</table>\n";
  return html_page("lockstep matrix", body);
}

std::vector<JUnitCase> junit_cases(const MatrixResult& result) {
  std::vector<JUnitCase> cases;
  for (const MatrixCell& cell : result.cells) {
    JUnitCase c{.name = fmt::format("{}/{}", cell.scenario, fencing_name(cell.fencing_on)),
                .classname = cell.adapter,
                .passed = cell.matches,
                .time_s = static_cast<double>(cell.wall_time_us) / 1e6};
    if (!c.passed) {
      c.failure_message =
          fmt::format("observed {}, expected {}", describe(cell.observed), describe(cell.expected));
      c.failure_text = fmt::format("{}\nreplay: {}\n", c.failure_message, cell.first_mismatch);
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace lockstep
