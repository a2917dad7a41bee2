#!/usr/bin/env python3
"""A driver that breaks the ext protocol ends the run as an error (exit 4) that names the rule it
broke (services/ext/PROTOCOL.md, "Rules a driver keeps"), with its stderr's tail, and nothing of
that run is judged: no violations, where a broken driver's half-run used to be judged (stolen-lock
showed A's overrun) and a driver that broke as it started was "a server would not start" (exit 3).

Co-simulated (`--world sim`, no server needed): a line that is not JSON (`lines`), an exit
mid-run (`stay-up`), a version 1 driver (`ready-first`), the same break after an answered
acquire, and a matrix over such a driver that runs every cell (exit 4, never aborted). Real world
(a redis-server lockstep starts; exit 77 when there is none): a version 1 driver that breaks the
same way mid-run.

Usage: ext_driver_errors_test.py LOCKSTEP_BINARY
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

READY = ('{"ready": True, "name": "broken", "version": "broken 1", "protocol": %d, '
         '"capabilities": {"extend": True, "is_locked": True, "token": "random"}, "now_ns": %s}')

# Protocol 2 drivers: each answers init with ready, and breaks as its mode says.
SIM_DRIVER = r'''
import json, sys
mode = sys.argv[1]
answered = 0
for line in sys.stdin:
    msg = json.loads(line)
    op, now = msg.get("op"), msg["now"]["mono_ns"]
    if op == "init":
        answered = 0
        print(json.dumps(READY2(now)))
    elif op in ("acquire", "release", "extend", "is_locked"):
        answered += 1
        if mode == "late-garbage" and answered == 1:
            print(json.dumps({"id": msg["id"], "status": "ok", "ok": True, "token": "t",
                              "t0_ns": now, "t1_ns": now}))
        elif mode == "exit":
            sys.stderr.write("Traceback: the driver's own bug\n")
            sys.exit(3)
        else:
            print("this is not json")
    print(json.dumps({"idle": True, "next_timer_ns": None}), flush=True)
'''.replace("READY2(now)", READY.replace("%d", "2").replace("%s", "now"))

# Protocol 1: ready, one acquire answered ok, then a line that is not JSON.
REAL_DRIVER = r'''
import json, sys, time
print(json.dumps(READY1), flush=True)
answered = 0
for line in sys.stdin:
    msg = json.loads(line)
    now = str(time.monotonic_ns())
    if msg["op"] == "shutdown":
        print(json.dumps({"id": msg["id"], "status": "ok", "ok": True, "t0_ns": now,
                          "t1_ns": now}), flush=True)
        break
    answered += 1
    if answered == 1:
        print(json.dumps({"id": msg["id"], "status": "ok", "ok": True, "token": "t",
                          "t0_ns": now, "t1_ns": now}), flush=True)
    else:
        print("this is not json", flush=True)
'''.replace("READY1", READY.replace("%d", "1").replace("%s", "str(time.monotonic_ns())"))

V1_DRIVER = "import json, sys, time\nprint(json.dumps(%s), flush=True)\nfor line in sys.stdin: pass\n" % (
    READY.replace("%d", "1").replace("%s", "str(time.monotonic_ns())"))


def run(binary, *args, cwd):
    return subprocess.run([binary, *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def check(condition, what, result=None):
    if not condition:
        detail = "" if result is None else "\nexit %d\nstdout:\n%s\nstderr:\n%s" % (
            result.returncode, result.stdout[-3000:], result.stderr[-3000:])
        sys.exit("FAILED: %s%s" % (what, detail))


def broken_run(binary, cwd, driver, rule, scenario="stolen-lock", world="sim", also=None):
    r = run(binary, "run", scenario, "--adapter", "ext", "--world", world, "--set",
            "driver=" + driver, "--json", cwd=cwd)
    check(r.returncode == 4, "%s: a broken driver is the run's error, exit 4" % driver, r)
    report = json.loads(r.stdout)
    check(report["verdict"] == "error", "the verdict is error", r)
    check(("broke rule `%s` of the ext protocol" % rule) in report["end_message"],
          "the message names rule %s" % rule, r)
    check("PROTOCOL.md" in report["end_message"], "the message says where the rules are", r)
    check(report["violations"] == [], "nothing of a broken run is judged", r)
    if also:
        check(also in report["end_message"], "the message carries %r" % also, r)
    return report


def main(binary):
    binary = os.path.abspath(binary)
    with tempfile.TemporaryDirectory(prefix="lockstep-ext-driver-errors-") as cwd:
        sim = os.path.join(cwd, "sim_driver.py")
        with open(sim, "w") as f:
            f.write(SIM_DRIVER)
        v1 = os.path.join(cwd, "v1_driver.py")
        with open(v1, "w") as f:
            f.write(V1_DRIVER)
        py = sys.executable
        broken_run(binary, cwd, "%s %s garbage" % (py, sim), "lines", also="this is not json")
        broken_run(binary, cwd, "%s %s exit" % (py, sim), "stay-up",
                   also="Traceback: the driver's own bug")
        broken_run(binary, cwd, "%s %s" % (py, v1), "ready-first",
                   also="--world sim needs a co-simulated driver")
        # A's acquire answered, then the break: the half-run is not judged (it was: A's overrun).
        broken_run(binary, cwd, "%s %s late-garbage" % (py, sim), "lines")

        m = run(binary, "matrix", "--adapter", "ext", "--scenario", "sequential", "--scenario",
                "stolen-lock", "--set", "driver=%s %s garbage" % (py, sim), "--json", cwd=cwd)
        check(m.returncode == 4, "a matrix whose only differences are broken runs exits 4", m)
        cells = json.loads(m.stdout)["cells"]
        check(len(cells) == 2 and not any(c["matches"] for c in cells),
              "the matrix ran every cell, each differing", m)

        if shutil.which("redis-server") is None:
            print("skipped: the simulated half passed; the real half needs redis-server "
                  "(scripts/setup.sh installs it)")
            return 77
        real = os.path.join(cwd, "real_driver.py")
        with open(real, "w") as f:
            f.write(REAL_DRIVER)
        broken_run(binary, cwd, "%s %s" % (py, real), "lines", world="real")
    print("ok: broken drivers end their runs as errors naming the rule, with nothing judged")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
