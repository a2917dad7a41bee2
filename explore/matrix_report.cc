#include "explore/matrix_report.h"

#include <filesystem>
#include <set>
#include <string_view>

#include <fmt/format.h>

#include "report/report_html.h"

namespace lockstep {

namespace {

// The page's look. A grid cell (td.pos) holds a link per fencing cell (a.cell, its status a class
// and data-status) and, under them, what a reader needs without hovering: why a cell is a
// documented finding (div.why.finding) or how it differs (div.why.differs). Explanations wrap
// inside their column, so the grid stays as wide as the window allows.
constexpr std::string_view kMatrixStyle = R"css(<style>
.summary { margin: 4px 0 10px; }
.pill { display: inline-block; padding: 2px 10px; border-radius: 10px; margin-right: 6px; font-weight: 600; }
.pill.expected { background: #e8f5e9; color: #1b5e20; } .pill.differs { background: #ffebee; color: #b71c1c; }
.pill.finding { background: #fff8e1; color: #8d5b00; } .pill.na { background: #f1f1f1; color: #666; }
.filters { margin: 8px 0 12px; padding: 6px 8px; background: #fafafa; border: 1px solid #e5e5e5; }
.filters label { margin-right: 12px; white-space: nowrap; }
.filters input[type=text] { width: 16em; }
table.grid { border-collapse: collapse; margin-bottom: 18px; }
table.grid th, table.grid td { border: 1px solid #ddd; padding: 3px 5px; vertical-align: top; }
table.grid thead th { background: #f5f5f5; font-weight: 600; text-align: left; max-width: 9em; }
table.grid tbody th { text-align: left; white-space: nowrap; font-weight: 600; background: #fafafa; }
td.pos { max-width: 14em; min-width: 3.5em; }
a.cell { display: inline-block; margin: 0 2px 2px 0; padding: 0 5px; border-radius: 4px; font-size: 12px;
         text-decoration: none; white-space: nowrap; border: 1px solid transparent; }
a.cell.expected { background: #e8f5e9; color: #1b5e20; } a.cell.differs { background: #c62828; color: #fff; }
a.cell.finding { background: #ffe082; color: #5d4000; } a.cell.na { background: #f1f1f1; color: #888; }
a.cell[href]:hover { border-color: #333; }
div.why { font-size: 11px; line-height: 1.3; white-space: normal; margin-top: 2px; }
div.why.finding { color: #6d4c00; } div.why.differs { color: #b71c1c; font-weight: 600; }
.hidden { display: none !important; }
ul.list li { margin: 3px 0; } ul.list code { font-size: 11px; }
table.matrix { border-collapse: collapse; }
table.matrix th, table.matrix td { border: 1px solid #ddd; padding: 3px 8px; text-align: left; }
tr.match td { background: #e8f5e9; } tr.differs td { background: #ffebee; } tr.finding td { background: #fff8e1; }
td.unsafe { color: #b71c1c; font-weight: 600; } td.safe { color: #1b5e20; }
</style>
)css";

// Filters: the statuses shown, the fencing shown, and a text that picks the positions whose
// scenario or adapter holds it. The script only toggles classes and data attributes.
constexpr std::string_view kMatrixScript = R"js(
"use strict";
function applyFilters() {
  const show = new Set([...document.querySelectorAll("input[data-status]")]
                       .filter(b => b.checked).map(b => b.dataset.status));
  const fencing = document.getElementById("fencing").value;
  const text = document.getElementById("text").value.trim().toLowerCase();
  for (const td of document.querySelectorAll("td.pos")) {
    const named = text === "" || td.dataset.scenario.toLowerCase().includes(text) ||
                  td.dataset.adapter.toLowerCase().includes(text);
    let shown = 0;
    for (const a of td.querySelectorAll("a.cell")) {
      const on = named && show.has(a.dataset.status) &&
                 (fencing === "all" || a.dataset.fencing === fencing || a.dataset.fencing === "any");
      a.classList.toggle("hidden", !on);
      shown += on ? 1 : 0;
    }
    for (const why of td.querySelectorAll("div.why"))
      why.classList.toggle("hidden", shown === 0 || !show.has(why.dataset.status));
    td.dataset.shown = shown;
  }
  // A row with nothing left to show goes; columns stay, so the grid keeps its shape.
  for (const tr of document.querySelectorAll("table.grid tbody tr")) {
    const any = [...tr.querySelectorAll("td.pos")].some(td => td.dataset.shown !== "0");
    tr.classList.toggle("hidden", !any);
  }
}
document.querySelectorAll(".filters input, .filters select")
  .forEach(e => e.addEventListener("input", applyFilters));
)js";

const char* glyph(std::string_view status) {
  if (status == "expected") return "&#10003;";  // check mark
  if (status == "finding") return "&#9873;";    // flag
  if (status == "differs") return "&#10007;";   // ballot x
  return "&#8211;";                             // en dash
}

const char* status_words(std::string_view status) {
  if (status == "expected") return "as expected";
  if (status == "finding") return "documented finding";
  if (status == "differs") return "DIFFERS";
  return "not applicable";
}

// Where the cell's run's timeline is, relative to matrix.html: runs/NAME.html beside it.
std::string timeline_href(const MatrixCell& c) {
  if (c.run_report.empty()) return "";
  return "runs/" +
         std::filesystem::path(c.run_report).filename().replace_extension(".html").string();
}

// A name that may break after ':' and '-' (ext:redis-semaphore-redlock), so headers stay narrow.
std::string breakable(std::string_view name) {
  std::string out;
  for (const char ch : name) {
    out += html_escape(std::string_view(&ch, 1));
    if (ch == ':' || ch == '-') out += "<wbr>";
  }
  return out;
}

std::string cell_link(const MatrixCell& c, bool show_fencing) {
  const std::string status = cell_status(c);
  std::string title = fmt::format("{} / {} / fencing {}: {}", c.scenario, c.adapter,
                                  c.fencing_on ? "on" : "off", status_words(status));
  if (status == "na") {
    title += ": " + c.not_applicable;
  } else {
    title += fmt::format("; observed {}, expected {}", describe(c.observed), describe(c.expected));
  }
  const std::string href = timeline_href(c);
  return fmt::format(
      "<a class=\"cell {0}\" data-status=\"{0}\" data-fencing=\"{1}\"{2} title=\"{3}\">{4}{5}</a>",
      status, c.fencing_on ? "on" : "off",
      href.empty() ? std::string() : " href=\"" + html_escape(href) + "\"", html_escape(title),
      show_fencing ? (c.fencing_on ? "on " : "off ") : "", glyph(status));
}

// The explanations under a grid position's links: each finding's summary and each difference,
// once even when both fencing cells share it.
std::string explanations(const std::vector<const MatrixCell*>& cells) {
  std::string out;
  std::set<std::string> said;
  for (const MatrixCell* c : cells) {
    const std::string status = cell_status(*c);
    std::string why;
    if (status == "finding") why = c->finding;
    if (status == "differs")
      why = fmt::format("observed {}; expected {}", describe(c->observed), describe(c->expected));
    if (why.empty() || !said.insert(status + why).second) continue;
    out += fmt::format("<div class=\"why {0}\" data-status=\"{0}\">{1}</div>", status,
                       html_escape(why));
  }
  return out;
}

std::string grid_html(const MatrixGrid& g, bool show_fencing) {
  std::string out = fmt::format("<h2>{}</h2>\n<table class=\"grid\">\n<thead><tr><th>{}</th>",
                                html_escape(g.title), html_escape(g.corner));
  for (const std::string& column : g.columns) {
    out += fmt::format("<th data-name=\"{}\">{}</th>", html_escape(column), breakable(column));
  }
  out += "</tr></thead>\n<tbody>\n";
  for (size_t r = 0; r < g.rows.size(); ++r) {
    out += fmt::format("<tr data-name=\"{0}\"><th>{0}</th>", html_escape(g.rows[r]));
    for (size_t k = 0; k < g.columns.size(); ++k) {
      const auto it = g.at.find({r, k});
      const auto [scenario, adapter] = g.names(r, k);
      out += fmt::format("<td class=\"pos\" data-scenario=\"{}\" data-adapter=\"{}\">",
                         html_escape(scenario), html_escape(adapter));
      if (it != g.at.end()) {
        for (const MatrixCell* c : it->second) out += cell_link(*c, show_fencing);
        out += explanations(it->second);
      } else {  // no cell: the scenario does not apply to the adapter (its traits, or not judged there)
        out += fmt::format(
            "<a class=\"cell na\" data-status=\"na\" data-fencing=\"any\" title=\"{} / {}: "
            "not applicable (the scenario does not apply to this adapter)\">{}</a>",
            html_escape(scenario), html_escape(adapter), glyph("na"));
      }
      out += "</td>";
    }
    out += "</tr>\n";
  }
  return out + "</tbody>\n</table>\n";
}

std::string link_or_nothing(const MatrixCell& c) {
  const std::string href = timeline_href(c);
  return href.empty() ? std::string()
                      : fmt::format(" <a href=\"{}\">timeline</a>", html_escape(href));
}

std::string cell_row(const MatrixCell& c) {
  const std::string status = cell_status(c);
  return fmt::format(
      "<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td class=\"{}\">{}</td><td>{}</td>"
      "<td>{}{}</td></tr>\n",
      status == "differs"   ? "differs"
      : status == "finding" ? "finding"
                            : "match",
      html_escape(c.scenario), html_escape(c.adapter), c.fencing_on ? "on" : "off",
      c.observed.empty() ? "safe" : "unsafe",
      status == "na" ? std::string("n/a") : html_escape(describe(c.observed)),
      html_escape(describe(c.expected)),
      status == "differs"   ? "<b>no</b>: <code>" + html_escape(c.first_mismatch) + "</code>"
      : status == "finding" ? "finding: " + html_escape(c.finding) + " <code>" +
                                  html_escape(c.first_finding) + "</code>"
      : status == "na" ? std::string("n/a")
                       : std::string("yes"),
      link_or_nothing(c));
}

}  // namespace

std::string matrix_html(const MatrixResult& result) {
  const MatrixCounts n = count_cells(result);
  bool both = false;  // a position with two fencing cells: label each
  for (const MatrixGrid& g : matrix_grids(result)) {
    for (const auto& [pos, cells] : g.at) both = both || cells.size() > 1;
  }
  std::string body(kMatrixStyle);
  body += fmt::format("<h1>lockstep matrix: {}</h1>\n",
                      n.differ == 0 ? "every cell as expected" : "cells DIFFER");
  body += fmt::format(
      "<div class=\"summary\">{} cells: <span class=\"pill expected\">{} as expected</span>"
      "<span class=\"pill finding\">{} documented finding{}</span><span class=\"pill differs\">{} "
      "differ{}</span><span class=\"pill na\">{} not applicable</span></div>\n",
      n.cells, n.as_expected, n.findings, n.findings == 1 ? "" : "s", n.differ,
      n.differ == 1 ? "s" : "", n.not_applicable);
  body +=
      "<div class=\"filters\">show "
      "<label><input type=\"checkbox\" data-status=\"expected\" checked> &#10003; as "
      "expected</label>"
      "<label><input type=\"checkbox\" data-status=\"finding\" checked> &#9873; documented "
      "finding</label>"
      "<label><input type=\"checkbox\" data-status=\"differs\" checked> &#10007; differs</label>"
      "<label><input type=\"checkbox\" data-status=\"na\" checked> &#8211; not applicable</label>"
      "<label>fencing <select id=\"fencing\"><option value=\"all\">off and on</option>"
      "<option value=\"off\">off</option><option value=\"on\">on</option></select></label>"
      "<label>name <input type=\"text\" id=\"text\" placeholder=\"scenario or adapter\"></label>"
      "<span>each mark links to its run's timeline</span></div>\n";
  for (const MatrixGrid& g : matrix_grids(result)) body += grid_html(g, both);
  if (n.differ > 0) {
    body += "<h2>Cells that differ</h2>\n<ul class=\"list\">\n";
    for (const MatrixCell& c : result.cells) {
      if (cell_status(c) != "differs") continue;
      body += fmt::format(
          "<li>{} / {} / fencing {}: observed {}, expected {}{}<br><code>{}</code></li>\n",
          html_escape(c.scenario), html_escape(c.adapter), c.fencing_on ? "on" : "off",
          html_escape(describe(c.observed)), html_escape(describe(c.expected)), link_or_nothing(c),
          html_escape(c.first_mismatch));
    }
    body += "</ul>\n";
  }
  if (n.findings > 0) {
    body += "<h2>Documented findings</h2>\n<ul class=\"list\">\n";
    for (const MatrixCell& c : result.cells) {
      if (cell_status(c) != "finding") continue;
      body +=
          fmt::format("<li>{} / {} / fencing {}: {}{}<br><code>{}</code></li>\n",
                      html_escape(c.scenario), html_escape(c.adapter), c.fencing_on ? "on" : "off",
                      html_escape(c.finding), link_or_nothing(c), html_escape(c.first_finding));
    }
    body += "</ul>\n";
  }
  body +=
      "<details><summary>Every cell</summary>\n<table class=\"matrix\">\n<tr><th>scenario</th>"
      "<th>adapter</th><th>fencing</th><th>observed</th><th>expected</th><th>matches</th></tr>\n";
  for (const MatrixCell& c : result.cells) body += cell_row(c);
  body += "</table>\n</details>\n";
  body += fmt::format("<script>{}</script>\n", kMatrixScript);
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
