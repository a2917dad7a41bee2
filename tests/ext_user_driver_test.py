#!/usr/bin/env python3
"""`--adapter ext --set driver=...` end to end: lockstep starts the reference Python driver
(examples/python-driver) over a real redis-server it starts itself, runs stolen-lock, and judges
the library. The correct driver matches the scenario's expectation (only A's excused overrun);
with --bug extend-no-owner-check the ownership violation shows and the cell differs. Bad input:
no driver is exit 2 with one line, a program that is not there exit 3.

Usage: ext_user_driver_test.py LOCKSTEP_BINARY. Exit 77: skipped (no redis-server).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DRIVER = os.path.join(HERE, "..", "examples", "python-driver", "driver.py")


def run(binary, *args, cwd):
    return subprocess.run([binary, *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def check(condition, what, result=None):
    if not condition:
        detail = "" if result is None else "\nexit %d\nstdout:\n%s\nstderr:\n%s" % (
            result.returncode, result.stdout[-3000:], result.stderr[-3000:])
        sys.exit("FAILED: %s%s" % (what, detail))


def main(binary):
    if shutil.which("redis-server") is None:
        print("skipped: redis-server not found (scripts/setup.sh installs it)")
        return 77
    driver = "%s %s" % (sys.executable, os.path.abspath(DRIVER))
    with tempfile.TemporaryDirectory(prefix="lockstep-ext-user-") as cwd:
        base = ["run", "stolen-lock", "--adapter", "ext", "--world", "real", "--json"]
        correct = run(binary, *base, "--set", "driver=" + driver, cwd=cwd)
        report = json.loads(correct.stdout)
        check(report["matches_expectation"], "the correct driver matches stolen-lock", correct)
        check("ownership" not in [v["invariant"] for v in report["violations"]],
              "the correct driver's extend is owner-checked", correct)
        check("lockstep-python-driver" in report["library"],
              "the report names the library from the ready line", correct)

        buggy = run(binary, *base, "--set", "driver=%s --bug extend-no-owner-check" % driver,
                    cwd=cwd)
        check(buggy.returncode == 1, "the buggy driver's run is a violation", buggy)
        report = json.loads(buggy.stdout)
        check("ownership" in [v["invariant"] for v in report["violations"]],
              "the buggy driver's extend without owner check is an ownership violation", buggy)
        check(not report["matches_expectation"], "the buggy driver's cell differs", buggy)

        missing = run(binary, "run", "stolen-lock", "--adapter", "ext", "--world", "real", cwd=cwd)
        check(missing.returncode == 2 and missing.stderr.count("\n") == 1 and
              "--set driver=" in missing.stderr, "no driver: exit 2, one line", missing)
        absent = run(binary, "run", "stolen-lock", "--adapter", "ext", "--world", "real",
                     "--set", "driver=lockstep-no-such-program x", cwd=cwd)
        check(absent.returncode == 3 and "not on PATH" in absent.stderr,
              "a driver program that is not there: exit 3", absent)
        check(os.listdir(cwd) == [] or all(not n.endswith(".json") for n in os.listdir(cwd)),
              "nothing written where no report was asked for")
    print("ok: the Python lock judged through --adapter ext --set driver=")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
