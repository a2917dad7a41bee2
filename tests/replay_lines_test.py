#!/usr/bin/env python3
"""Every kind of replay line lockstep prints works as printed (ctest: replay_lines).

Each line is taken from where a user reads it and run as a shell would split it, with the
program's name replaced by the binary under test:
- `run`: its text, its --json, its report's JSON and its HTML timeline;
- `matrix`: the text, matrix.md, matrix.json and matrix.html of a cell that differs (the
  reference Python driver's --bug variant in stolen-lock);
- `sweep`: the text, the JSON, the JUnit and the counterexample's HTML timeline of a generated
  workload (replayed from its file, not a command line);
- `calibrate`: the text of a known-bad adapter caught.
A `run` line must reproduce its violation (exit 1; where the run has a trace hash, the same one);
a `replay FILE` line must say it reproduced the recorded run (exit 0) and its violation.

Usage: replay_lines_test.py LOCKSTEP_BINARY
"""
import html
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DRIVER = os.path.normpath(os.path.join(HERE, "..", "examples", "python-driver", "driver.py"))
CHECKED = []


def run(argv, cwd, timeout=300):
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def check(condition, what, result=None):
    if not condition:
        detail = "" if result is None else "\nexit %d\nstdout:\n%s\nstderr:\n%s" % (
            result.returncode, result.stdout[-3000:], result.stderr[-3000:])
        sys.exit("FAILED: %s%s" % (what, detail))


def replays(binary, line, where, cwd, trace_hash=None):
    """Runs a printed replay line; it must reproduce a violation (exit 1)."""
    words = shlex.split(line)
    check(words and words[0] == "lockstep", "%s: a replay line naming the program: %r" % (where, line))
    r = run([binary] + words[1:] + ["--json"], cwd)
    if words[1] == "replay":  # replays a report file: 0 when it reproduced the recorded run
        check(r.returncode == 0 and "reproduced" in r.stderr and
              json.loads(r.stdout)["verdict"] == "violation",
              "%s: %r reproduces its violation" % (where, line), r)
    else:
        check(r.returncode == 1, "%s: %r reproduces its violation (exit 1)" % (where, line), r)
    if trace_hash:
        check(json.loads(r.stdout)["trace_hash"] == trace_hash,
              "%s: %r gives the same trace hash" % (where, line), r)
    CHECKED.append(where)


def timeline_replay(path):
    text = open(path).read()
    data = re.search(r'<script type="application/json" id="lockstep-data">(.*?)</script>', text,
                     re.S)
    check(data is not None, "%s has the timeline's data" % path)
    return json.loads(data.group(1))["run"]["replay"]


def printed(text):
    """The replay lines of a text output ("replay: LINE")."""
    return [l.split("replay: ", 1)[1] for l in text.splitlines() if l.strip().startswith("replay: ")]


def run_kinds(binary, cwd):
    reports = os.path.join(cwd, "run")
    r = run([binary, "run", "gc-pause", "--adapter", "memory", "--fencing", "off", "--report",
             reports], cwd)
    check(r.returncode == 1 and len(printed(r.stdout)) == 1, "run prints one replay line", r)
    base = os.path.join(reports, "gc-pause.memory.seed1.fencing-off")
    report = json.load(open(base + ".json"))
    replays(binary, printed(r.stdout)[0], "run text", cwd, report["trace_hash"])
    j = run([binary, "run", "gc-pause", "--adapter", "memory", "--fencing", "off", "--json"], cwd)
    replays(binary, json.loads(j.stdout)["replay"], "run --json", cwd, report["trace_hash"])
    replays(binary, report["replay"], "run report JSON", cwd, report["trace_hash"])
    replays(binary, timeline_replay(base + ".html"), "run timeline HTML", cwd, report["trace_hash"])


def matrix_kinds(binary, cwd):
    out = os.path.join(cwd, "matrix")
    r = run([binary, "matrix", "--adapter", "ext", "--scenario", "stolen-lock", "--set",
             "driver=%s %s --bug extend-no-owner-check" % (sys.executable, DRIVER), "--report",
             out], cwd)
    check(r.returncode == 1 and printed(r.stdout), "matrix: the buggy driver's cell differs", r)
    replays(binary, printed(r.stdout)[0], "matrix text", cwd)
    md = open(os.path.join(out, "matrix.md")).read()
    lines = re.findall(r"^- stolen-lock / ext / .*: `(lockstep [^`]*)`$", md, re.M)
    check(len(lines) == 1, "matrix.md lists the cell that differs with its replay line")
    replays(binary, lines[0], "matrix.md", cwd)
    cell = json.load(open(os.path.join(out, "matrix.json")))["cells"][0]
    replays(binary, cell["first_mismatch"], "matrix.json", cwd)
    page = open(os.path.join(out, "matrix.html")).read()
    codes = [html.unescape(c) for c in re.findall(r"<code>(lockstep [^<]*)</code>", page)]
    check(codes, "matrix.html shows the replay line")
    replays(binary, codes[0], "matrix.html", cwd)


def sweep_kinds(binary, cwd):
    out = os.path.join(cwd, "sweep")
    junit = os.path.join(cwd, "sweep.xml")
    r = run([binary, "sweep", "--adapter", "bad-memory-no-owner-check", "--seeds", "200",
             "--report", out, "--junit", junit], cwd)
    check(r.returncode == 1 and printed(r.stdout), "sweep finds the known-bad adapter's bug", r)
    line = printed(r.stdout)[0]
    check(" replay " in line and "REPORT.json" not in line, "the sweep names its replay file")
    replays(binary, line, "sweep text", cwd)
    j = run([binary, "sweep", "--adapter", "bad-memory-no-owner-check", "--seeds", "200", "--json",
             "--report", out], cwd)
    cx = json.loads(j.stdout)["counterexamples"][0]
    replays(binary, cx["replay"], "sweep JSON", cwd)
    xml = open(junit).read()
    lines = [html.unescape(l) for l in re.findall(r"(lockstep replay [^\s<]+)", xml)]
    check(lines, "the sweep's JUnit carries the replay line")
    replays(binary, lines[0], "sweep JUnit", cwd)
    replay_file = shlex.split(line)[-1]
    page = os.path.join(cwd, replay_file[:-len(".json")] + ".html")
    check(os.path.exists(page), "the counterexample has a timeline beside its file")
    replays(binary, timeline_replay(page), "sweep counterexample timeline HTML", cwd)


def calibrate_kinds(binary, cwd):
    r = run([binary, "calibrate", "--adapter", "bad-memory-no-owner-check", "--seeds", "200",
             "--no-time-target", "--report", os.path.join(cwd, "calibrate")], cwd)
    check(r.returncode == 0 and printed(r.stdout), "calibrate catches the known-bad adapter", r)
    replays(binary, printed(r.stdout)[0], "calibrate text", cwd)


def main(binary):
    with tempfile.TemporaryDirectory(prefix="lockstep-replay-lines-") as cwd:
        run_kinds(binary, cwd)
        matrix_kinds(binary, cwd)
        sweep_kinds(binary, cwd)
        calibrate_kinds(binary, cwd)
    print("replay lines run as printed: " + ", ".join(CHECKED))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: replay_lines_test.py LOCKSTEP_BINARY")
    sys.exit(main(os.path.abspath(sys.argv[1])))
