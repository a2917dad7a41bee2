#!/usr/bin/env python3
"""Each reproduction of issue 34 ("zero in 13,000") with the exit code it must give: every one
ended outside the exit-code contract (70, a signal, a hang, gigabytes) before. Each also must end
within its bound of time and, for an exit 2-4, say why on exactly one stderr line. The fake
drivers are scripts/fuzz.py's.

Usage: hostile_inputs_test.py LOCKSTEP_BINARY
Prints one line per case and "N passed, N failed"; exits 1 on a failure.
"""
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "fuzz", os.path.join(os.path.dirname(HERE), "scripts", "fuzz.py"))
fuzz = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fuzz)
# Set in main: an AddressSanitizer build cannot start under a memory guard (fuzz.sanitized).
SANITIZED = False

BOUND_S = 60


def run(binary, args, cwd, stdout=None, env=None, limit_bytes=1024 * 1024 * 1024):
    started = time.monotonic()
    out = stdout if stdout is not None else subprocess.PIPE
    # A guard on memory: a run that tries to allocate gigabytes fails here instead of the machine.
    p = subprocess.run([binary] + args, cwd=cwd, stdout=out, stderr=subprocess.PIPE,
                       stdin=subprocess.DEVNULL, env=env, timeout=BOUND_S,
                       preexec_fn=fuzz.limits(None if SANITIZED else limit_bytes // 3))
    return (p.returncode, p.stderr.decode("utf-8", "replace"), p.stdout or b"",
            time.monotonic() - started)


def history(meta, *events):
    return "\n".join(json.dumps(x) for x in [{"meta": meta}] + list(events)) + "\n"


def main(binary):
    global SANITIZED
    binary = os.path.abspath(binary)
    SANITIZED = fuzz.sanitized(binary)
    if SANITIZED:
        print("memory unguarded: %s is built with AddressSanitizer" % binary)
    work = tempfile.mkdtemp(prefix="lockstep-hostile-")
    results = []
    try:
        def case(name, args, expected, stdout=None, env=None, files=None, fifo=None,
                 limit_bytes=3 * 1024 * 1024 * 1024, json_out=False):
            d = tempfile.mkdtemp(dir=work)
            for fname, text in (files or {}).items():
                mode = "wb" if isinstance(text, bytes) else "w"
                with open(os.path.join(os.fsencode(d), os.fsencode(fname)), mode) as f:
                    f.write(text)
            if fifo:
                os.mkfifo(os.path.join(d, fifo))
            with open(os.path.join(d, "fake_driver.py"), "w") as f:
                f.write("REFERENCE = %r\n%s" % (fuzz.REFERENCE_DRIVER, fuzz.FAKE_DRIVER))
            argv = [a.replace("@D", d) if isinstance(a, str) else a.replace(b"@D", os.fsencode(d))
                    for a in args]
            try:
                code, err, out, took = run(binary, argv, d, stdout, env, limit_bytes)
            except subprocess.TimeoutExpired:
                results.append((name, False, "no answer within %d s" % BOUND_S))
                return
            lines = [l for l in err.split("\n")
                     if l.strip() and not fuzz.is_info_line(l)]
            want = expected if isinstance(expected, tuple) else (expected,)
            # A peer's escape sequences never reach the reader's terminal, on either stream.
            raw = [b for b in (b"\x1b", b"\x07") if b in out or b.decode() in err]
            ok = code in want and (code < 2 or len(lines) == 1) and not raw
            if json_out:  # --json: one document, whatever bytes the input held
                try:
                    json.loads(out.decode("utf-8"))
                except ValueError as e:
                    ok, raw = False, raw + ["stdout is not UTF-8 JSON: %s" % e]
            why = "exit %d (want %s), %d stderr lines, %.1fs%s: %s" % (
                code, expected, len(lines), took, ", raw control bytes %r" % raw if raw else "",
                err.strip()[:200].replace("\n", "\\n"))
            results.append((name, ok, why))

        driver = "driver=%s @D/fake_driver.py " % sys.executable
        # Errors inside forked workers: as with --jobs 1.
        case("matrix --set persistence=bogus on two workers",
             ["matrix", "--scenario", "stolen-lock", "--adapter", "redis", "--set",
              "persistence=bogus", "--jobs", "2"], 2)
        case("matrix --adapter ext without a driver", ["matrix", "--adapter", "ext", "--jobs",
                                                       "2"], 2)
        case("sweep --set persistence=x on two workers",
             ["sweep", "--adapter", "redis", "--seeds", "4", "--set", "persistence=x", "--jobs",
              "2"], 2)
        case("an ext sweep whose driver crashes",
             ["sweep", "--adapter", "ext", "--seeds", "3", "--set",
              driver + "crash-after-ready"], 4)
        case("an ext sweep whose driver stops answering",
             ["sweep", "--adapter", "ext", "--seeds", "3", "--set", driver + "hang-after-ready", "--set",
              "ext_deadline_ms=1000"], 4)
        # check: identities never folded, the schema's rules.
        two = {"clients": 2}
        enter = {"time_us": 1, "kind": "cs_enter", "client": 0, "key": "k"}
        for name, text in [
                ("quorum 2^32", history({"quorum": 4294967296}, {"time_us": 1, "kind": "heal"})),
                ("client 2^32 beside client 0",
                 history(two, enter, dict(enter, time_us=2, client=4294967296))),
                ("client 2^31-1 in a 2-line history",
                 history(two, dict(enter, client=2147483647))),
                ("release before any acquire",
                 history(two, {"time_us": 1, "kind": "invoke", "client": 0, "key": "k",
                               "op": "release"})),
                ("cs_exit without cs_enter", history(two, dict(enter, kind="cs_exit"))),
                ("a double cs_enter", history(two, enter, dict(enter, time_us=2))),
                ("complete without invoke",
                 history(two, {"time_us": 1, "kind": "complete", "client": 0, "op": "acquire",
                               "outcome": "ok", "key": "k"})),
                ("a fault ending before it starts",
                 history(two, {"time_us": 9, "kind": "fault", "fault": "pause", "client": 0,
                               "end_us": 3})),
                ("a fault with a negative amount",
                 history(two, {"time_us": 9, "kind": "fault", "fault": "pause", "client": 0,
                               "amount": -5})),
                ("quorum 99 with one server",
                 history({"servers": 1, "quorum": 99}, {"time_us": 1, "kind": "heal"})),
                ("two writes of 1 and no final_value",
                 history(two, *[{"time_us": t, "kind": "access", "client": c, "key": "k",
                                 "op": op, "outcome": "ok", "counter": n}
                                for t, c, op, n in [(1, 0, "read", 0), (2, 1, "read", 0),
                                                    (3, 0, "write", 1), (4, 1, "write", 1)]])),
                ("100,000 levels of nesting in a history line",
                 history(two) + "[" * 100000 + "]" * 100000 + "\n")]:
            case("check: " + name, ["check", "@D/h.jsonl"], 2, files={"h.jsonl": text})
        case("check a FIFO", ["check", "@D/fifo"], 2, fifo="fifo")
        # Invalid UTF-8 reaching JSON output: a history's file name.
        case("check --json of a file whose name is not UTF-8",
             ["check", b"@D/\xff\xfe.jsonl", "--json"], 1,
             files={b"\xff\xfe.jsonl": history(two, enter, dict(enter, client=1))})
        # ... a driver command and a driver's bytes.
        case("run --json with a driver command that is not UTF-8",
             ["run", "sequential", "--adapter", "ext", "--json", "--set",
              b"driver=" + os.fsencode(sys.executable) + b" @D/\xff.py crash-after-ready"], 4,
             files={b"\xff.py": "REFERENCE = %r\n%s" % (fuzz.REFERENCE_DRIVER, fuzz.FAKE_DRIVER)},
             json_out=True)
        case("run --json with a driver that writes binary",
             ["run", "sequential", "--adapter", "ext", "--json", "--set", driver + "binary", "--set",
              "ext_deadline_ms=1000"], (3, 4), json_out=True)
        # Output: full and closed stdout.
        big = history({"clients": 2}, *[dict(enter, time_us=2 * i, client=i % 2,
                                             kind="cs_enter" if i < 2 else "heal")
                                        for i in range(400)])
        with open("/dev/full", "wb") as full:
            case("check --json > /dev/full past 4 KB", ["check", "@D/h.jsonl", "--json"], 3,
                 stdout=full, files={"h.jsonl": big})
        read_end, write_end = os.pipe()
        os.close(read_end)
        with os.fdopen(write_end, "wb") as closed:
            case("list --json to a closed pipe (SIGPIPE)", ["list", "--json"], 3, stdout=closed)
        # sweep-merge: shards checked before anything is sized from them.
        shards = os.path.join(work, "shards")
        subprocess.run([binary, "sweep", "--adapter", "memory", "--seeds", "4", "--shard", "0/2",
                        "--report", shards, "--jobs", "1"], capture_output=True, check=True)
        with open(os.path.join(shards, os.listdir(shards)[0])) as f:
            good = json.load(f)

        def shard_case(name, edit, expected=2):
            doc = json.loads(json.dumps(good))
            edit(doc)
            case("sweep-merge: " + name, ["sweep-merge", "@D/s.json"], expected,
                 files={"s.json": json.dumps(doc)})
        shard_case("a shard missing adapter", lambda d: d.pop("adapter"))
        shard_case("a shard missing fencing", lambda d: d.pop("fencing"))
        shard_case("count -1", lambda d: d["shard"].update(count=-1))
        shard_case("count 30000000", lambda d: d["shard"].update(count=30000000))
        case("sweep-merge: 100,000 levels of nesting", ["sweep-merge", "@D/s.json"], 2,
             files={"s.json": '{"kind": ' + "[" * 100000 + "]" * 100000 + "}"})
        case("sweep-merge of a FIFO", ["sweep-merge", "@D/fifo"], 2, fifo="fifo")
        case("run --junit FIFO", ["run", "sequential", "--adapter", "memory", "--junit",
                                  "@D/fifo"], 3, fifo="fifo")
        # replay trusts nothing of a report's workload.
        replays = os.path.join(work, "replays")
        subprocess.run([binary, "sweep", "--adapter", "bad-get-del-release", "--seeds", "200",
                        "--report", replays, "--jobs", "1"], capture_output=True, check=False)
        saved = [n for n in sorted(os.listdir(replays)) if n.endswith(".json")]
        with open(os.path.join(replays, saved[0])) as f:
            report = json.load(f)
        for name, edit in [
                ("drift_ppm 1e6", lambda w: w["clients"][0].update(drift_ppm=1000000)),
                ("a negative pause", lambda w: w["clients"][0]["steps"][0].update(pause_ms=-1)
                 if w["clients"][0]["steps"] else w.update(ttl_ms=-1)),
                ("ttl_ms past 24 h", lambda w: w.update(ttl_ms=86400001)),
                ("a step's ttl_ms 2^31", lambda w: w["clients"][0]["steps"][0].update(
                    ttl_ms=2147483648) if w["clients"][0]["steps"] else w.update(ttl_ms=-1)),
                ("retry_times past its bound", lambda w: w.update(retry_times=4294967296)),
                ("retry_delay_ms 0", lambda w: w.update(retry_delay_ms=0))]:
            doc = json.loads(json.dumps(report))
            edit(doc["workload"])
            case("replay: " + name, ["replay", "@D/r.json"], 2, files={"r.json": json.dumps(doc)})
        doc = json.loads(json.dumps(report))
        doc["options"] = {"x": json.loads("[" * 50 + "]" * 50)}
        case("replay: a deeply nested report option", ["replay", "@D/r.json"], 2,
             files={"r.json": '{"options": ' + "[" * 100000 + "]" * 100000 + "}"})
        # Co-simulated drivers that make no progress in virtual time.
        case("a driver whose timer is always now", ["run", "sequential", "--adapter", "ext",
                                                    "--set", driver + "timer-now"], 4)
        case("a driver whose timer is -1", ["run", "sequential", "--adapter", "ext", "--set",
                                            driver + "timer-minus1"], (3, 4))
        case("a driver that writes binary", ["run", "sequential", "--adapter", "ext", "--set",
                                             driver + "binary", "--set",
                                             "ext_deadline_ms=1000"], (3, 4))
        # A driver that breaks the protocol as it starts is the run's error (exit 4, the rule named
        # in the output; services/ext/PROTOCOL.md), its stderr's escape sequences escaped.
        case("a driver that exits at start with escape sequences",
             ["run", "sequential", "--adapter", "ext", "--set", driver + "exit-start"], 4)
        # 200 client threads under a memory guard: a thread that cannot start once aborted the
        # process (a joinable std::thread destroyed).
        if SANITIZED:
            print("skipped: a real-world run whose threads cannot all start (it needs the memory "
                  "guard, which an AddressSanitizer build cannot run under)")
        else:
            case("a real-world run whose threads cannot all start",
                 ["run", "retry-storm", "--adapter", "memory", "--world", "real"], 4,
                 limit_bytes=120 * 1000 * 1000)
            # Each thread once reserved 8 MiB of address space: 200 clients took 1.6 GB of it, for
            # 50 MB in use (cli/process_guards.h).
            case("200 real-world clients under a 1 GiB guard",
                 ["run", "retry-storm", "--adapter", "memory", "--world", "real"], 0,
                 limit_bytes=1024 * 1024 * 1024)
        case("--set hold_ms=-0", ["run", "sequential", "--adapter", "memory", "--set",
                                  "hold_ms=-0"], 2)
        # TMPDIR unusable for a server's files, and a sweep whose replay files cannot be written.
        if shutil.which("redis-server"):
            for name, tmp in [("missing", "@D/missing"), ("a file", os.path.join(shards, os.listdir(shards)[0])),
                              ("very long", "@D/" + "/".join(["d" * 200] * 3))]:
                case("TMPDIR " + name, ["run", "sequential", "--adapter", "redis", "--world",
                                        "real"], 3,
                     env=dict(os.environ, TMPDIR=tmp.replace("@D", work)))
            bin_dir = os.path.join(work, "bin")
            os.makedirs(bin_dir)
            with open(os.path.join(bin_dir, "redis-server"), "w") as f:
                f.write("#!%s\n%s" % (sys.executable, fuzz.FAKE_REDIS))
            os.chmod(os.path.join(bin_dir, "redis-server"), 0o755)
            for mode in ("big-array", "exit-start", "garbage"):
                case("a fake redis-server: " + mode,
                     ["run", "sequential", "--adapter", "redis", "--world", "real"], (3, 4),
                     env=dict(os.environ, FUZZ_REDIS_MODE=mode,
                              PATH=bin_dir + os.pathsep + os.environ["PATH"]))
            case("a real-world run whose in-range pause is a day",
                 ["run", "gc-pause", "--adapter", "redis", "--world", "real", "--set",
                  "pause_ms=86400000"], 4)
            if not SANITIZED:  # two threads per client (its own, its TCP proxy's): 3.2 GB once
                case("200 real-world redis clients under a 1 GiB guard",
                     ["run", "retry-storm", "--adapter", "redis", "--world", "real"], 0,
                     limit_bytes=1024 * 1024 * 1024)
            case("a real-world driver leaving a child that holds its stdout",
                 ["run", "sequential", "--adapter", "ext", "--world", "real", "--set",
                  driver + "bg-child"], (3, 4))
        else:
            print("skipped: the real-world cases (no redis-server: apt-get install redis-server)")
        # Options main added since the hostile pass (the CI contract, postgres replicas): each
        # malformed value is bad usage on one line, each unwritable output exit 3.
        for name, args, want in [
                ("sweep --time 1us", ["sweep", "--adapter", "memory", "--seeds", "5", "--time",
                                      "1us"], 2),
                ("sweep --time past 7 days", ["sweep", "--adapter", "memory", "--seeds", "5",
                                              "--time", "99999999999999999999h"], 2),
                ("calibrate --time 0s", ["calibrate", "--seeds", "2", "--time", "0s"], 2),
                ("sweep --time not UTF-8", ["sweep", "--adapter", "memory", "--seeds", "5",
                                            "--time", b"1\xffs"], 2),
                ("sweep --junit /dev/full", ["sweep", "--adapter", "memory", "--seeds", "5",
                                             "--junit", "/dev/full"], 3),
                ("calibrate --junit a directory", ["calibrate", "--seeds", "2", "--adapter",
                                                   "bad-get-del-release", "--junit", "@D"], 3),
                ("run --expect with a driver broken at start",
                 ["run", "sequential", "--adapter", "ext", "--expect", "--set", driver + "exit-start"],
                 4),
                ("sweep --set replicas=0 where the swarm draws a failover, on two workers",
                 ["sweep", "--adapter", "bad-pexpire-extend", "--seeds", "3", "--first-seed",
                  "999999", "--keep-going", "--jobs", "2", "--set", "replicas=0"], 2),
                ("sweep postgres-session --set replicas=2",
                 ["sweep", "--adapter", "postgres-session", "--seeds", "5", "--set",
                  "replicas=2"], 2),
                ("sweep postgres-session --set replication_delay_ms past its bound",
                 ["sweep", "--adapter", "postgres-session", "--seeds", "5", "--set",
                  "replication_delay_ms=86400000"], 2),
                ("sweep postgres-blocking --set lock_wait_ms=-0 on two workers",
                 ["sweep", "--adapter", "postgres-blocking", "--seeds", "5", "--jobs", "2",
                  "--set", "lock_wait_ms=-0"], 2)]:
            case(name, args, want)
        for name, args in [("sweep --junit FIFO", ["sweep", "--adapter", "memory", "--seeds", "5"]),
                           ("calibrate --junit FIFO", ["calibrate", "--seeds", "2", "--adapter",
                                                       "bad-get-del-release"])]:
            case(name, args + ["--junit", "@D/fifo"], 3, fifo="fifo")
        case("replay --expect of a FIFO", ["replay", "@D/fifo", "--expect"], 2, fifo="fifo")
        case("sweep where reports/ is a file (its replay file cannot be written)",
             ["sweep", "--adapter", "bad-get-del-release", "--seeds", "200", "--jobs", "1"], 3,
             files={"reports": "not a directory"})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    failed = 0
    for name, ok, why in results:
        print("%s %s: %s" % ("ok  " if ok else "FAIL", name, why))
        failed += 0 if ok else 1
    print("%d passed, %d failed" % (len(results) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
