#include "report/report_html.h"

#include <string_view>

#include <fmt/format.h>

#include "report/junit.h"
#include "report/report.h"

namespace lockstep {

namespace {

// The page's look. Classes are also what tests look for in the rendered DOM: lane (data-client),
// hold belief / hold lease (data-client, data-start-us, data-end-us), violation-marker.
constexpr std::string_view kStyle = R"css(
body { font: 13px/1.4 system-ui, sans-serif; margin: 16px; color: #222; }
h1 { font-size: 18px; margin: 0 0 6px; }
code { background: #f3f3f3; padding: 1px 4px; border-radius: 3px; }
.badge { padding: 1px 8px; border-radius: 9px; color: #fff; font-weight: 600; }
.badge.ok { background: #2e7d32; } .badge.violation { background: #c62828; } .badge.error { background: #6a1b9a; }
.meta td { padding: 0 12px 0 0; vertical-align: top; }
.violations { border-left: 4px solid #c62828; background: #fdecea; padding: 6px 10px; margin: 8px 0; }
.violations div { margin: 2px 0; }
.legend span { margin-right: 14px; white-space: nowrap; }
.legend i { display: inline-block; width: 14px; height: 10px; margin-right: 4px; vertical-align: middle; }
#timeline { overflow-x: auto; border: 1px solid #ddd; margin-top: 6px; }
svg text { font: 11px system-ui, sans-serif; fill: #333; }
.lane-bg.odd { fill: #fafafa; } .lane-bg.even { fill: #fff; }
.lane-title { font-weight: 600; }
.row-label { fill: #777; }
.tick line { stroke: #ddd; } .tick text { fill: #777; }
.hold.belief { fill: #3f6fb5; } .hold.belief.shared { fill: #8fb0e0; }
.hold.lease { fill: #4caf50; fill-opacity: .75; } .hold.lease.revoked { fill: #7cb342; }
.hold.open { stroke-dasharray: 3 2; stroke: #555; }
.lease-extend { stroke: #1b5e20; stroke-width: 2; }
.renewal { stroke: #0d47a1; stroke-width: 2; }
.renewal-validity { stroke: #0d47a1; stroke-width: 1; stroke-dasharray: 2 2; }
.op line { stroke: #999; stroke-width: 2; }
.op circle { stroke: #fff; stroke-width: 1; }
.outcome-ok { fill: #2e7d32; } .outcome-fail, .outcome-contended { fill: #ef6c00; }
.outcome-error { fill: #c62828; } .outcome-refused { fill: #8e24aa; } .outcome-pending { fill: #9e9e9e; }
.outcome-stuck { fill: #fff; stroke: #c62828; stroke-width: 2; }
.access.outcome-refused { fill: #fff; stroke: #8e24aa; stroke-width: 2; }
.access-label { font-size: 10px; fill: #555; }
.fault { fill: #ffb300; fill-opacity: .22; stroke: #ffb300; stroke-opacity: .6; }
.fault-label { fill: #a66b00; font-style: italic; }
.violation-marker { stroke: #d50000; stroke-width: 2; stroke-dasharray: 6 3; }
.violation-label { fill: #d50000; font-weight: 700; }
.involved { stroke: #d50000 !important; stroke-width: 2.5 !important; stroke-dasharray: none !important; }
details pre { font-size: 11px; max-height: 400px; overflow: auto; background: #fafafa; padding: 6px; }
)css";

// Draws the page from the embedded data. Text goes in with textContent and setAttribute, so
// nothing from the run is ever parsed as markup.
constexpr std::string_view kScript = R"js(
"use strict";
const data = JSON.parse(document.getElementById("lockstep-data").textContent);
const SVGNS = "http://www.w3.org/2000/svg";
const ROW = 18, LANE_PAD = 6, LEFT = 170, RIGHT = 30, AXIS = 34;

function node(ns, tag, attrs, parent, text) {
  const n = ns ? document.createElementNS(ns, tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) n.setAttribute(k, v);
  if (text !== undefined) n.textContent = text;
  if (parent) parent.appendChild(n);
  return n;
}
const svg = (tag, attrs, parent, text) => node(SVGNS, tag, attrs, parent, text);
const html = (tag, attrs, parent, text) => node(null, tag, attrs, parent, text);
const ms = us => (us / 1000).toFixed(3) + " ms";
const span = (a, b) => ms(a) + " .. " + ms(b) + " (" + a + " .. " + b + " us)";
const tip = (n, lines) => svg("title", {}, n, lines.filter(l => l).join("\n"));

// Spans and marks from the history, in its (true-time) order.
function buildModel(d) {
  const m = {holds: [], leases: [], ops: [], accesses: [], faults: [], renewals: [], end: d.meta.end_us};
  for (const e of d.events) m.end = Math.max(m.end, e.time_us);
  const openHold = new Map(), openOp = new Map(), openLease = new Map(), ownerOf = new Map();
  for (const e of d.events) {
    const t = e.time_us, c = e.client ?? -1;
    const hk = c + "|" + e.key, ok = c + "|" + e.op + "|" + e.key, lk = e.server + "|" + e.key + "|" + e.value;
    if (e.kind === "cs_enter") {
      openHold.set(hk, {client: c, key: e.key, shared: !!e.shared, start: t, events: [e.index]});
    } else if (e.kind === "cs_exit" && openHold.has(hk)) {
      const h = openHold.get(hk); openHold.delete(hk);
      h.end = t; h.events.push(e.index); m.holds.push(h);
    } else if (e.kind === "invoke") {
      openOp.set(ok, {client: c, op: e.op, key: e.key, start: t, outcome: "pending", events: [e.index], text: [e.text]});
    } else if (e.kind === "complete" && openOp.has(ok)) {
      const o = openOp.get(ok); openOp.delete(ok);
      Object.assign(o, {end: t, outcome: e.outcome}); o.events.push(e.index); o.text.push(e.text); m.ops.push(o);
    } else if (e.kind === "stuck" && openOp.has(ok)) {  // the operation it was parked in for good
      const o = openOp.get(ok);
      o.outcome = "stuck"; o.events.push(e.index); o.text.push(e.text);
    } else if (e.kind === "access") {
      m.accesses.push(e);
    } else if (e.kind === "fault") {
      m.faults.push(e);
    } else if (e.kind === "renewal") {  // a background extension: no invocation, no op to draw
      m.renewals.push(e);
    } else if (e.kind === "grant") {
      ownerOf.set(e.value, c);
      const l = {client: c, server: e.server, key: e.key, start: t, end: t + e.ttl_us, extends: [], events: [e.index], text: [e.text]};
      openLease.set(lk, l); m.leases.push(l);
    } else if (e.kind === "extend" || e.kind === "revoke") {
      let l = openLease.get(lk);
      if (!l || l.end < t) {  // nothing live to act on: show what the server did from here on
        l = {client: ownerOf.get(e.value) ?? c, server: e.server, key: e.key, start: t, end: t, extends: [], events: [], text: []};
        openLease.set(lk, l); m.leases.push(l);
      }
      l.events.push(e.index); l.text.push(e.text);
      if (e.kind === "extend") { l.end = t + e.ttl_us; l.extends.push(t); }
      else { l.end = Math.min(l.end, t); l.revoked = true; openLease.delete(lk); }
    }
  }
  for (const h of openHold.values()) { h.end = m.end; h.open = true; m.holds.push(h); }
  for (const o of openOp.values()) { o.end = m.end; m.ops.push(o); }
  return m;
}

// One lane per client (and one for events with none), each a stack of rows.
function buildLanes(d, m) {
  const lanes = new Map();
  const lane = c => {
    if (!lanes.has(c)) lanes.set(c, {client: c, rows: ["ops"]});
    return lanes.get(c);
  };
  const addRow = (c, r) => { const l = lane(c); if (!l.rows.includes(r)) l.rows.push(r); };
  for (let c = 0; c < d.meta.clients; ++c) lane(c);
  for (const h of m.holds) addRow(h.client, "hold|" + h.key);
  for (const r of m.renewals) addRow(r.client, "hold|" + r.key);
  for (const l of m.leases) addRow(l.client, "lease|" + l.key + "|" + l.server);
  for (const a of m.accesses) addRow(a.client ?? -1, "resource");
  for (const o of m.ops) lane(o.client);
  const keys = new Set(m.holds.map(h => h.key).concat(m.leases.map(l => l.key)));
  const out = [...lanes.values()].sort((a, b) => (a.client < 0) - (b.client < 0) || a.client - b.client);
  for (const l of out) l.manyKeys = keys.size > 1;
  return out;
}

function rowLabel(row, manyKeys) {
  const [kind, key, server] = row.split("|");
  const k = manyKeys ? " " + key : "";
  if (kind === "ops") return "operations";
  if (kind === "hold") return "believes it holds" + k;
  if (kind === "lease") return "lease @" + server + k;
  return "resource";
}

function renderHeader(d) {
  const r = d.run, head = document.getElementById("header");
  html("h1", {}, head,
       r.scenario + " with " + r.adapter + " (" + r.world + ", seed " + r.seed + ", fencing " + r.fencing + ") ");
  html("span", {class: "badge " + r.verdict}, head.firstChild, r.verdict);
  const t = html("table", {class: "meta"}, head);
  const row = (k, v, code) => {
    const tr = html("tr", {}, t);
    html("td", {}, tr, k);
    html(code ? "code" : "span", {}, html("td", {}, tr), v);
  };
  row("expected", r.expected.length ? "violation: " + r.expected.join(", ") : "safe");
  row("matches expectation", r.matches_expectation ? "yes" : "NO");
  row("trace_hash", r.trace_hash, true);
  row("stats", r.stats.events + " events, " + r.stats.ops + " ops, " + r.stats.acquisitions + " acquisitions, " +
      ms(r.stats.sim_time_us) + " simulated");
  for (const e of d.events.filter(e => e.kind === "final_value")) {
    row("final counter" + (e.key ? " " + e.key : ""), String(e.counter));
  }
  if (r.end !== "complete") row("run ended", r.end + ": " + r.end_message);
  row("replay", r.replay, true);
  if (!d.violations.length) return;
  const box = html("div", {class: "violations"}, head);
  d.violations.forEach((v, i) => html("div", {class: "violation"}, box,
    "V" + (i + 1) + " " + v.invariant + " at " + ms(v.time_us) + " on key " + v.key + " (clients " +
    v.clients.map(c => "c" + c).join(", ") + "): " + v.detail + " Excused by: " + v.excused_by +
    "."));
}

function renderAxis(g, x, end, axis, height) {
  const target = Math.max(1, end / 10);
  const p = Math.pow(10, Math.floor(Math.log10(target)));
  const step = [1, 2, 5, 10].map(f => f * p).find(s => s >= target);
  for (let t = 0; t <= end; t += step) {
    const tick = svg("g", {class: "tick"}, g);
    svg("line", {x1: x(t), x2: x(t), y1: axis - 6, y2: height}, tick);
    svg("text", {x: x(t), y: axis - 10, "text-anchor": "middle"}, tick, (t / 1000) + " ms");
  }
  svg("text", {x: 6, y: axis - 10}, g, "true time");
}

// Violation labels above the axis, stacked in levels so that labels close in time do not overlap.
function labelViolations(d, x, width) {
  const levels = [];  // per level, where its last label ends
  return d.violations.map((v, i) => {
    const text = "V" + (i + 1) + " " + v.invariant, w = 7 * text.length, nearEnd = x(v.time_us) + w > width - 10;
    const from = nearEnd ? x(v.time_us) - w : x(v.time_us);
    let level = levels.findIndex(endX => endX < from);
    if (level < 0) level = levels.push(0) - 1;
    levels[level] = from + w + 6;
    return {v, text, level, nearEnd};
  });
}

function renderViolations(s, labels, x, axis, height) {
  for (const {v, text, level, nearEnd} of labels) {
    const g = svg("g", {class: "violation-marker-group"}, s);
    tip(svg("line", {class: "violation-marker", "data-time-us": v.time_us, x1: x(v.time_us), x2: x(v.time_us),
                     y1: axis - 4, y2: height}, g), [v.invariant + " at " + ms(v.time_us), v.detail]);
    svg("text", {class: "violation-label", x: x(v.time_us) + (nearEnd ? -4 : 4), y: axis - 22 - 13 * level,
                 "text-anchor": nearEnd ? "end" : "start"}, g, text);
  }
}

// The marks of one lane; ctx: {g, lane, m, x, rowY, top, bottom, mark}.
function renderFaults(ctx) {
  const {g, m, x, top, bottom} = ctx;
  let labelsEnd = -Infinity;  // a label that would overlap the previous one is left to the tooltip
  for (const f of m.faults.filter(f => f.client === undefined || f.client === ctx.lane.client)) {
    const w = Math.max(3, x(f.end_us) - x(f.time_us)), labelW = 7 * f.detail.length;
    tip(ctx.mark(svg("rect", {class: "fault", x: x(f.time_us), y: top, width: w, height: bottom - top}, g), [f.index]),
        ["fault: " + f.detail, span(f.time_us, f.end_us)]);
    const from = w > labelW ? x(f.time_us) + (w - labelW) / 2 : x(f.time_us) + 4;  // centred when it fits
    if (from < labelsEnd) continue;
    svg("text", {class: "fault-label", x: from, y: top + 12}, g, f.detail);
    labelsEnd = from + labelW;
  }
}

function renderHolds(ctx, holds) {
  const {g, x} = ctx;
  for (const h of holds) {
    const n = svg("rect", {class: "hold belief" + (h.shared ? " shared" : "") + (h.open ? " open" : ""),
      "data-client": h.client, "data-key": h.key, "data-start-us": h.start, "data-end-us": h.end,
      x: x(h.start), y: ctx.rowY("hold|" + h.key) + 3, width: Math.max(2, x(h.end) - x(h.start)), height: ROW - 6}, g);
    tip(ctx.mark(n, h.events), ["c" + h.client + " believes it holds " + h.key + (h.shared ? " (shared)" : ""),
        span(h.start, h.end), h.open ? "still inside when the run ended" : ""]);
  }
}

function renderLeases(ctx, leases) {
  const {g, m, x} = ctx;
  for (const l of leases) {
    const end = Math.min(l.end, m.end), y = ctx.rowY("lease|" + l.key + "|" + l.server) + 3;
    const n = svg("rect", {class: "hold lease" + (l.revoked ? " revoked" : "") + (l.end > m.end ? " open" : ""),
      "data-client": l.client, "data-server": l.server, "data-start-us": l.start, "data-end-us": l.end,
      x: x(l.start), y: y, width: Math.max(2, x(end) - x(l.start)), height: ROW - 6}, g);
    tip(ctx.mark(n, l.events), ["server " + l.server + ": lease of c" + l.client + " on " + l.key,
        span(l.start, l.end) + (l.revoked ? ", revoked" : ", promised end"), ...l.text]);
    for (const t of l.extends) svg("line", {class: "lease-extend", x1: x(t), x2: x(t), y1: y - 2, y2: y + ROW - 4}, g);
  }
}

// A renewal: a tick on the holder's row where it came, and the validity it gave, dashed.
function renderRenewals(ctx, renewals) {
  const {g, m, x} = ctx;
  for (const r of renewals) {
    const y = ctx.rowY("hold|" + r.key), until = Math.min(r.end_us || r.time_us, m.end);
    const n = svg("g", {class: "renewal-mark", "data-client": r.client, "data-time-us": r.time_us,
      "data-end-us": r.end_us || 0}, g);
    svg("line", {class: "renewal", x1: x(r.time_us), x2: x(r.time_us), y1: y + 1, y2: y + ROW - 1}, n);
    if (until > r.time_us) svg("line", {class: "renewal-validity", x1: x(r.time_us), x2: x(until), y1: y + 2, y2: y + 2}, n);
    tip(ctx.mark(n, [r.index]), [r.text, r.end_us ? "valid until " + ms(r.end_us) : ""]);
  }
}

function renderOps(ctx, ops) {
  const {g, x} = ctx, y = ctx.rowY("ops") + ROW / 2;
  for (const o of ops) {
    const op = svg("g", {class: "op op-" + o.op}, g);
    svg("line", {x1: x(o.start), x2: x(o.end), y1: y, y2: y}, op);
    ctx.mark(svg("circle", {class: "outcome-" + o.outcome, cx: x(o.end), cy: y, r: 4.5}, op), o.events);
    tip(op, [o.op + " " + o.outcome, span(o.start, o.end), ...o.text]);
  }
}

function renderAccesses(ctx, accesses) {
  const {g, x} = ctx, cy = ctx.rowY("resource") + ROW / 2, r = 5;
  let labelsEnd = -Infinity;  // a label that would overlap the previous one is left to the tooltip
  for (const a of accesses) {
    const cx = x(a.time_us);
    const n = svg("path", {class: "access access-" + a.op + " outcome-" + a.outcome,
      d: `M${cx},${cy - r} L${cx + r},${cy} L${cx},${cy + r} L${cx - r},${cy} Z`}, g);
    tip(ctx.mark(n, [a.index]), [a.text, "at " + ms(a.time_us) + " (" + a.time_us + " us)"]);
    const label = a.op[0] + (a.outcome === "ok" ? "" : " refused") + (a.token ? " t" + a.token : "") + " =" + a.counter;
    if (cx + 7 < labelsEnd) continue;
    svg("text", {class: "access-label", x: cx + 7, y: cy + 4}, g, label);
    labelsEnd = cx + 7 + 6 * label.length;
  }
}

function renderLane(g, lane, m, x, y0, involved) {
  const mine = list => list.filter(e => (e.client ?? -1) === lane.client);
  const ctx = {g, lane, m, x, top: y0 + LANE_PAD, bottom: y0 + LANE_PAD + lane.rows.length * ROW,
    rowY: r => y0 + LANE_PAD + lane.rows.indexOf(r) * ROW,
    mark: (n, events) => { if (events.some(i => involved.has(i))) n.classList.add("involved"); return n; }};
  renderFaults(ctx);
  renderHolds(ctx, mine(m.holds));
  renderRenewals(ctx, mine(m.renewals));
  renderLeases(ctx, mine(m.leases));
  renderOps(ctx, mine(m.ops));
  renderAccesses(ctx, mine(m.accesses));
}

function render(d, m, lanes, zoom) {
  const root = document.getElementById("timeline");
  root.textContent = "";
  const width = Math.max(900, document.body.clientWidth - 40) * zoom;
  const x = t => LEFT + Math.min(Math.max(t, 0), m.end) / Math.max(1, m.end) * (width - LEFT - RIGHT);
  const involved = new Set(d.violations.flatMap(v => v.events));
  const labels = labelViolations(d, x, width);
  const axis = AXIS + 13 * Math.max(0, ...labels.map(l => l.level));
  const height = axis + lanes.reduce((s, l) => s + l.rows.length * ROW + 2 * LANE_PAD, 0) + 8;
  const s = svg("svg", {width: width, height: height, class: "timeline"}, root);
  const backgrounds = svg("g", {class: "backgrounds"}, s);
  renderAxis(svg("g", {class: "axis"}, s), x, m.end, axis, height);  // grid above backgrounds, below marks
  let y = axis;
  lanes.forEach((lane, i) => {
    const h = lane.rows.length * ROW + 2 * LANE_PAD;
    svg("rect", {class: "lane-bg " + (i % 2 ? "odd" : "even"), x: 0, y: y, width: width, height: h}, backgrounds);
    const g = svg("g", {class: "lane", "data-client": lane.client}, s);
    const title = lane.client < 0 ? "no client" : "client c" + lane.client;
    svg("text", {class: "lane-title", x: 6, y: y + LANE_PAD + 13}, g, title);
    lane.rows.forEach((r, k) =>
      svg("text", {class: "row-label", x: 70, y: y + LANE_PAD + k * ROW + 13}, g, rowLabel(r, lane.manyKeys)));
    renderLane(g, lane, m, x, y, involved);
    y += h;
  });
  renderViolations(s, labels, x, axis, height);
}

function renderLog(d) {
  const pre = document.querySelector("#log pre");
  pre.textContent = d.events.map(e => String(e.time_us).padStart(12) + " us  #" + e.index + "  " + e.text).join("\n");
  document.querySelector("#log summary").textContent = "all " + d.events.length + " history events";
}

const model = buildModel(data), lanes = buildLanes(data, model);
renderHeader(data);
renderLog(data);
const zoom = document.getElementById("zoom");
zoom.addEventListener("input", () => render(data, model, lanes, Number(zoom.value)));
render(data, model, lanes, 1);
)js";

constexpr std::string_view kLegend = R"html(<div class="legend">
<span><i style="background:#3f6fb5"></i>client believes it holds the lock (cs_enter..cs_exit)</span>
<span><i style="background:#4caf50"></i>server's lease (grant..revoke or promised end; | extend)</span>
<span><b style="color:#0d47a1">|- -</b> renewal in the background, and the validity it gave</span>
<span><i style="background:#ffb300;opacity:.5"></i>fault</span>
<span>&#9679; operation outcome: <b style="color:#2e7d32">ok</b> <b style="color:#ef6c00">fail/contended</b>
 <b style="color:#c62828">error</b>; hollow red: stuck (parked at the end, nothing to wake it)</span>
<span>&#9670; resource access (r/w, t token, =counter); hollow: refused</span>
<span><b style="color:#d50000">- - -</b> violation; its events outlined in red</span>
<label>zoom <input type="range" id="zoom" min="1" max="40" value="1"></label>
</div>
)html";

nlohmann::json event_json(const HistoryEvent& e) {
  nlohmann::json j = {{"index", e.index},
                      {"time_us", e.time_us},
                      {"kind", to_string(e.kind)},
                      {"text", describe(e)}};
  if (e.client >= 0) j["client"] = e.client;
  if (!e.key.empty()) j["key"] = e.key;
  if (e.op != Op::none) j["op"] = to_string(e.op);
  if (e.outcome != Outcome::none) j["outcome"] = to_string(e.outcome);
  if (e.has_token) j["token"] = std::to_string(e.token);  // a string: random tokens exceed 2^53
  if (e.shared) j["shared"] = true;
  if (!e.server.empty()) j["server"] = e.server;
  if (!e.value.empty()) j["value"] = e.value;
  if (e.kind == EventKind::grant || e.kind == EventKind::extend) j["ttl_us"] = e.ttl_us;
  if (e.kind == EventKind::access || e.kind == EventKind::final_value) j["counter"] = e.counter;
  if (e.kind == EventKind::fault || e.kind == EventKind::renewal) j["end_us"] = e.end_us;
  if (!e.detail.empty()) j["detail"] = e.detail;
  return j;
}

// What the script draws: the report's JSON without its wall time (so the page is a function of
// the run), the history, and the violations with the events that show them.
nlohmann::json timeline_data(const RunReport& report, std::string_view replay_line) {
  nlohmann::json run = to_json(report);
  run["stats"].erase("wall_time_us");
  if (!replay_line.empty()) run["replay"] = replay_line;
  nlohmann::json events = nlohmann::json::array();
  for (const HistoryEvent& e : report.history.events()) events.push_back(event_json(e));
  nlohmann::json violations = nlohmann::json::array();
  for (const ReportedViolation& rv : report.violations) violations.push_back(violation_json(rv));
  const HistoryMeta& meta = report.history.meta;
  return {{"run", run},
          {"meta", {{"clients", meta.clients}, {"servers", meta.servers}, {"end_us", meta.end_us}}},
          {"events", events},
          {"violations", violations}};
}

}  // namespace

std::string html_page(std::string_view title, std::string_view body) {
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n"
      "<style>{}</style>\n</head>\n<body>\n{}</body>\n</html>\n",
      html_escape(title), kStyle, body);
}

std::string html_escape(std::string_view text) { return xml_escape(text); }

std::string script_safe_json(const nlohmann::json& value) {
  // Bytes that are not UTF-8 (a driver's output in a message) are replaced, never an exception.
  const std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    if (ch == '<') {
      out += "\\u003c";  // '<' occurs only inside JSON strings, where this escape means the same
    } else {
      out += ch;
    }
  }
  return out;
}

std::string timeline_html(const RunReport& report, std::string_view replay_line) {
  const RunConfig& run = report.config;
  const std::string title = fmt::format("lockstep: {} with {} seed {} fencing {}", run.scenario,
                                        run.adapter, run.seed, run.fencing_on ? "on" : "off");
  std::string body = "<div id=\"header\"></div>\n";
  body += kLegend;
  body +=
      "<div id=\"timeline\"></div>\n<details "
      "id=\"log\"><summary>history</summary><pre></pre></details>\n";
  body +=
      "<noscript>This timeline is drawn by an inline script; its data is in "
      "#lockstep-data.</noscript>\n";
  body += "<script type=\"application/json\" id=\"lockstep-data\">" +
          script_safe_json(timeline_data(report, replay_line)) + "</script>\n";
  body += fmt::format("<script>{}</script>\n", kScript);
  return html_page(title, body);
}

std::filesystem::path timeline_path_for(const std::filesystem::path& report_json) {
  std::filesystem::path out = report_json;
  out.replace_extension(".html");
  return out;
}

}  // namespace lockstep
