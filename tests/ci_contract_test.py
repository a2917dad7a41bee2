#!/usr/bin/env python3
"""What a CI job asserts through the `lockstep` binary (docs/ci.md):

- `run --expect` / `replay --expect`: 0 when the run is what the catalogue expects of the adapter
  (gc-pause's violations with memory, fencing on and off), 1 when it differs (the reference
  Python driver's `--bug` variant in stolen-lock), and `--junit` agrees;
- `sweep --time` stops at its budget with the same report and JUnit, having run fewer seeds than
  asked; a bad duration is exit 2 with one line;
- SIGTERM sent as GNU timeout sends it (to the command, then to its process group) leaves the
  partial report and JUnit written, exit 143;
- `calibrate --time --junit` writes one case per known-bad adapter.

Usage: ci_contract_test.py LOCKSTEP_BINARY
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
DRIVER = os.path.normpath(os.path.join(HERE, "..", "examples", "python-driver", "driver.py"))


def run(binary, *args, cwd, timeout=300):
    return subprocess.run([binary, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


def check(condition, what, result=None):
    if not condition:
        detail = "" if result is None else "\nexit %d\nstdout:\n%s\nstderr:\n%s" % (
            result.returncode, result.stdout[-3000:], result.stderr[-3000:])
        sys.exit("FAILED: %s%s" % (what, detail))


def junit(path):
    """The parsed JUnit file's testsuite, checked for counts that agree with its cases."""
    root = ET.parse(path).getroot()
    check(root.tag == "testsuites", "JUnit root is <testsuites>")
    suite = root.find("testsuite")
    cases = suite.findall("testcase")
    check(int(suite.get("tests")) == len(cases), "JUnit tests= counts its cases")
    check(int(suite.get("failures")) == sum(c.find("failure") is not None for c in cases),
          "JUnit failures= counts failed cases")
    check(int(suite.get("skipped")) == sum(c.find("skipped") is not None for c in cases),
          "JUnit skipped= counts skipped cases")
    return suite


def expect_mode(binary, cwd):
    for fencing in ("on", "off"):
        plain = run(binary, "run", "gc-pause", "--adapter", "memory", "--fencing", fencing,
                    cwd=cwd)
        check(plain.returncode == 1, "gc-pause fencing %s: a violation, exit 1" % fencing, plain)
        j = os.path.join(cwd, "run-%s.xml" % fencing)
        expected = run(binary, "run", "gc-pause", "--adapter", "memory", "--fencing", fencing,
                       "--expect", "--junit", j, cwd=cwd)
        check(expected.returncode == 0,
              "gc-pause fencing %s --expect: the expected violation, exit 0" % fencing, expected)
        check("(matches)" in expected.stdout, "the text says the run matches", expected)
        suite = junit(j)
        check(suite.get("failures") == "0", "--expect's JUnit case passes")
    buggy = run(binary, "run", "stolen-lock", "--adapter", "ext", "--set",
                "driver=%s %s --bug extend-no-owner-check" % (sys.executable, DRIVER), "--expect",
                cwd=cwd)
    check(buggy.returncode == 1 and "DIFFERS" in buggy.stdout,
          "a run that differs from the expectation: exit 1 with --expect", buggy)
    reports = os.path.join(cwd, "reports")
    made = run(binary, "run", "gc-pause", "--adapter", "memory", "--report", reports, cwd=cwd)
    report = os.path.join(reports, "gc-pause.memory.seed1.fencing-on.json")
    check(made.returncode == 1 and os.path.exists(report), "run --report writes the report", made)
    replay = run(binary, "replay", report, "--expect", cwd=cwd)
    check(replay.returncode == 0 and "reproduced" in replay.stderr,
          "replay --expect: reproduced and as expected, exit 0", replay)


def time_budget(binary, cwd):
    out = os.path.join(cwd, "sweep")
    j = os.path.join(cwd, "sweep.xml")
    r = run(binary, "sweep", "--adapter", "memory", "--seeds", "10000000", "--keep-going",
            "--time", "2s", "--report", out, "--junit", j, cwd=cwd)
    check(r.returncode == 0, "a time-boxed sweep without violations exits 0", r)
    check("stopped at its time budget (2s)" in r.stdout, "the text says it stopped at 2 s", r)
    report = json.load(open(os.path.join(out, "sweep.memory.seeds1-10000000.shard0of1.json")))
    check(report["stopped_by"] == "time" and report["time_budget_s"] == 2,
          "the report says it stopped at its budget")
    check(0 < report["seeds_run"] < report["seeds"], "it ran fewer seeds than asked")
    suite = junit(j)
    case = suite.find("testcase")
    check(case.get("classname") == "sweep memory" and case.find("failure") is None,
          "the sweep's JUnit case passes")
    check("stopped at its time budget" in case.find("system-out").text,
          "the JUnit case says it stopped at the budget")

    found = run(binary, "sweep", "--adapter", "bad-memory-no-owner-check", "--seeds", "10000000",
                "--time", "60s", "--report", out, "--junit", j, cwd=cwd)
    check(found.returncode == 1, "a time-boxed sweep that finds a violation exits 1", found)
    cases = junit(j).findall("testcase")
    check(len(cases) == 2 and all(c.find("failure") is not None for c in cases),
          "JUnit: the seeds run and the counterexample, both failed")
    replay_line = [l for l in found.stdout.splitlines() if l.strip().startswith("replay: ")][0]
    replay_file = replay_line.split()[-1]
    check(os.path.exists(os.path.join(cwd, replay_file)), "the replay file was written", found)

    for bad in ("0s", "30x", "-5s", "1.5s", "8d", "s", ""):
        b = run(binary, "sweep", "--adapter", "memory", "--time", bad, cwd=cwd)
        check(b.returncode == 2 and b.stderr.count("\n") == 1 and "--time" in b.stderr,
              "--time %r: exit 2 with one line naming the flag" % bad, b)


def caught_sigterm(pid):
    """Whether the process has a handler for SIGTERM installed (its SigCgt mask)."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("SigCgt:"):
                    return int(line.split()[1], 16) >> (signal.SIGTERM - 1) & 1 == 1
    except FileNotFoundError:
        pass
    return False


def sweeping(pid):
    """Whether the sweep has forked its workers: it does so after installing its watch for
    SIGINT/SIGTERM (cli/interrupt.h). A handler alone is not enough: the process registry's
    (real/process_registry.h) is installed as the program starts, and a signal that finds only it
    ends the process as by default, as it should before a sweep has begun."""
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return f.read().strip() != ""
    except FileNotFoundError:
        return False


def interrupted(binary, cwd):
    out = os.path.join(cwd, "interrupted")
    j = os.path.join(cwd, "interrupted.xml")
    # A process group of its own, as a CI step's command has; the signal goes to the command and
    # then to the whole group, as GNU timeout sends it.
    proc = subprocess.Popen([binary, "sweep", "--adapter", "memory", "--seeds", "10000000",
                             "--keep-going", "--jobs", "2", "--report", out, "--junit", j], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        # The watch is installed once the command has parsed its flags and begun the sweep: wait
        # for that condition (its handler and its workers), bounded by the process still running.
        while proc.poll() is None and not (caught_sigterm(proc.pid) and sweeping(proc.pid)):
            try:
                proc.wait(timeout=0.01)
            except subprocess.TimeoutExpired:
                pass
        check(proc.poll() is None, "the sweep was still running when signalled")
        os.kill(proc.pid, signal.SIGTERM)
        os.killpg(proc.pid, signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    result = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    check(proc.returncode == 128 + signal.SIGTERM, "interrupted: exit 143", result)
    check("interrupted by SIGTERM after" in stdout, "the text says it was interrupted", result)
    report = json.load(open(os.path.join(out, "sweep.memory.seeds1-10000000.shard0of1.json")))
    check(report["stopped_by"] == "SIGTERM" and report["seeds_run"] < report["seeds"],
          "the partial report says SIGTERM stopped it")
    suite = junit(j)
    check(suite.get("skipped") == "1", "JUnit: the interrupted sweep is skipped, not passed")


def calibrate(binary, cwd):
    j = os.path.join(cwd, "calibrate.xml")
    r = run(binary, "calibrate", "--adapter", "bad-del-release", "--adapter",
            "bad-memory-no-owner-check", "--seeds", "200", "--no-time-target", "--time", "5m",
            "--junit", j, "--json", cwd=cwd)
    check(r.returncode == 0, "calibrate within its budget: both adapters meet their targets", r)
    result = json.loads(r.stdout)
    check(result["verdict"] == "ok" and result["stopped_by"] == "", "calibrate: every seed ran", r)
    cases = junit(j).findall("testcase")
    check(sorted(c.get("name") for c in cases) == ["bad-del-release", "bad-memory-no-owner-check"],
          "JUnit: one case per known-bad adapter")
    check(all(c.find("failure") is None and c.find("skipped") is None for c in cases),
          "JUnit: both pass")


def main(binary):
    binary = os.path.abspath(binary)
    with tempfile.TemporaryDirectory(prefix="lockstep-ci-contract-") as cwd:
        expect_mode(binary, cwd)
        time_budget(binary, cwd)
        interrupted(binary, cwd)
        calibrate(binary, cwd)
    print("ok: --expect, --time, SIGTERM and --junit as a CI job asserts them")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
