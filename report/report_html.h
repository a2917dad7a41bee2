#pragma once
// Reports people can read in a browser: a timeline of one run (explore/matrix_report.h draws the
// matrix with the same page).
//
// Every page is one self-contained file: inline CSS, JS and SVG, no network fetches, so it can be
// attached to a CI run or mailed. The timeline embeds the run's history as JSON data and draws it
// with a small inline script: one lane per client with its operations, its critical sections (what
// the client believed), the leases the servers granted it (what they promised, per server), its
// accesses to the guarded resource, the faults that hit it, and each violation marked in time with
// the events that show it outlined.
//
// Invariants: pages are output only (nothing here touches the run, so the trace hash is the
// same with or without them); a page is a pure function of the report (no wall-clock values in
// it, so the same run gives the same bytes); everything embedded is escaped (text as HTML, data as
// JSON that cannot end its <script> element).
#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "run/runner.h"

namespace lockstep {

// The HTML timeline of one run. replay_line: the command the page shows to replay it ("": the
// report's own, RunReport::replay_command()).
std::string timeline_html(const RunReport& report, std::string_view replay_line = {});

// A whole self-contained page around body, with the shared style.
std::string html_page(std::string_view title, std::string_view body);

// Where write_report puts the timeline of the report whose JSON is at report_json (NAME.html).
std::filesystem::path timeline_path_for(const std::filesystem::path& report_json);

// Text made safe for HTML element content and quoted attribute values.
// The same escaping as XML (junit.h): valid HTML, one place to get it right.
std::string html_escape(std::string_view text);

// JSON text that is safe inside a <script> element: no '<' (so no "</script>" or "<!--"), and the
// same value when parsed (the escaped characters are inside strings, written as \u003c).
std::string script_safe_json(const nlohmann::json& value);

}  // namespace lockstep
