#!/usr/bin/env python3
"""`--adapter ext --set driver=...` end to end: lockstep starts the reference Python driver
(examples/python-driver), co-simulated in the simulator (protocol 2: sequential, concurrent-race,
stolen-lock with the bug, the whole matrix, a sweep twice) and over a real redis-server it starts itself, runs
stolen-lock, and judges the library. The correct driver matches the scenario's expectation (only A's excused overrun);
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
DRIVER = os.path.join(HERE, "..", "..", "..", "examples", "python-driver", "driver.py")


def run(binary, *args, cwd):
    return subprocess.run([binary, *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def check(condition, what, result=None):
    if not condition:
        detail = "" if result is None else "\nexit %d\nstdout:\n%s\nstderr:\n%s" % (
            result.returncode, result.stdout[-3000:], result.stderr[-3000:])
        sys.exit("FAILED: %s%s" % (what, detail))


def strip_wall(value):
    if isinstance(value, dict):
        return {k: strip_wall(v) for k, v in value.items() if "wall" not in k}
    if isinstance(value, list):
        return [strip_wall(v) for v in value]
    return value


def simulated(binary, driver, cwd):
    """The same driver co-simulated (protocol 2, --world sim): no server, no real time."""
    for scenario in ("sequential", "concurrent-race"):
        r = run(binary, "run", scenario, "--adapter", "ext", "--set", "driver=" + driver, "--json",
                cwd=cwd)
        report = json.loads(r.stdout)
        check(r.returncode == 0 and report["world"] == "sim" and report["matches_expectation"],
              "sim: the Python driver passes " + scenario, r)
        again = json.loads(run(binary, "run", scenario, "--adapter", "ext", "--set",
                               "driver=" + driver, "--json", cwd=cwd).stdout)
        check(again["trace_hash"] == report["trace_hash"], "sim: the same run twice, " + scenario)
    buggy = run(binary, "run", "stolen-lock", "--adapter", "ext", "--set",
                "driver=%s --bug extend-no-owner-check" % driver, "--json", cwd=cwd)
    check(buggy.returncode == 1 and "ownership" in
          [v["invariant"] for v in json.loads(buggy.stdout)["violations"]],
          "sim: the buggy driver's extend is caught as ownership", buggy)
    # Every scenario of the catalogue, each as expected of an owner-checked lease (slow-acquire
    # included: the driver gives back a grant that came too late).
    matrix = run(binary, "matrix", "--adapter", "ext", "--set", "driver=" + driver, cwd=cwd)
    check(matrix.returncode == 0,
          "sim: the Python driver passes matrix --adapter ext", matrix)
    # Seeds 41-70 hold seed 58, where a client acquires two keys at once: each grant is named
    # after its own acquire (it was named after the other one, a false validity_within_lease),
    # and seed 214's restart after a failover (an internal error) is ext_sim_test's.
    sweeps = [run(binary, "sweep", "--adapter", "ext", "--set", "driver=" + driver,
                  "--first-seed", "41", "--seeds", "30", "--keep-going", "--shrink", "0", "--json",
                  cwd=cwd) for _ in range(2)]
    check(sweeps[0].returncode == 0, "sim: the correct driver passes the sweep", sweeps[0])
    first, second = (strip_wall(json.loads(s.stdout)) for s in sweeps)
    check(first == second and first["seeds_run"] == 30, "sim: the sweep gives the same JSON twice")
    fenced(binary, driver, cwd)
    v1_driver = os.path.join(cwd, "v1_driver.py")  # says ready in version 1, then only reads
    with open(v1_driver, "w") as f:
        f.write("import json, sys\n"
                "print(json.dumps({'ready': True, 'name': 'v1', 'version': 'v1 1', 'protocol': 1,"
                " 'capabilities': {'extend': True, 'is_locked': True, 'token': 'random'},"
                " 'now_ns': '1'}), flush=True)\n"
                "for line in sys.stdin: pass\n")
    v1 = run(binary, "run", "sequential", "--adapter", "ext", "--set",
             "driver=%s %s" % (sys.executable, v1_driver), cwd=cwd)
    os.remove(v1_driver)
    check(v1.returncode == 4 and "--world sim needs a co-simulated driver" in v1.stdout and
          "broke rule `ready-first`" in v1.stdout,
          "sim: a version 1 driver is told to speak protocol 2 or run in the real world", v1)


def fenced(binary, driver, cwd):
    """Fencing tokens from a driver: declared with --set tokens=monotonic, promised by its ready
    line, judged against the order in which the simulated Redis granted the leases (its counter
    is `fence/KEY`, a name lockstep knows nothing of)."""
    sweep = ["sweep", "--adapter", "ext", "--first-seed", "41", "--seeds", "30", "--shrink", "0",
             "--json"]
    correct = run(binary, *sweep, "--set", "driver=%s --fencing" % driver, "--set",
                  "tokens=monotonic", cwd=cwd)
    check(correct.returncode == 0 and json.loads(correct.stdout)["fencing"] == "on",
          "sim: the fenced driver passes the sweep with its tokens judged", correct)
    # The bug shows in about 3% of seeds; this range catches it with the fault kinds the sweep
    # drew before `stall` joined them (a new kind changes every seed's draws), pinned here.
    kinds_before_stall = ("pause,crash,clock-drift,clock-jump,server-drift,server-clock-jump,"
                          "failover,latency,loss,partition,server-restart,server-pause")
    buggy = run(binary, *sweep, "--faults", kinds_before_stall, "--set",
                "driver=%s --fencing --bug token-after-grant" % driver,
                "--set", "tokens=monotonic", cwd=cwd)
    check(buggy.returncode == 1 and json.loads(buggy.stdout)["violations"],
          "sim: tokens taken after the grant are caught", buggy)
    for declared, promised in (("none", "monotonic"), ("monotonic", "random")):
        fencing_flag = " --fencing" if promised == "monotonic" else ""
        r = run(binary, "run", "sequential", "--adapter", "ext", "--set",
                "driver=%s%s" % (driver, fencing_flag), "--set", "tokens=" + declared, cwd=cwd)
        check(r.returncode == 4 and "broke rule `tokens`" in r.stdout and
              "says token %s where the run declares tokens=%s" % (
                  "random" if promised == "random" else promised, declared) in r.stdout,
              "sim: a ready line promising %s tokens where the run declares %s" % (
                  promised, declared), r)


def main(binary):
    driver = "%s %s" % (sys.executable, os.path.abspath(DRIVER))
    with tempfile.TemporaryDirectory(prefix="lockstep-ext-user-sim-") as cwd:
        simulated(binary, driver, cwd)
    if shutil.which("redis-server") is None:
        print("skipped: the simulated half passed; the real half needs redis-server "
              "(scripts/setup.sh installs it)")
        return 77
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
    print("ok: the Python lock judged through --adapter ext --set driver=, simulated and real")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
