#!/usr/bin/env python3
"""A hostile pass over the lockstep binary: generated command lines, mutated input files and
misbehaving peers, each judged against the exit-code contract (docs/DESIGN.md, "Command line").

  scripts/fuzz.py BINARY [--count N] [--seed S] [--jobs J] [--sample] [--case I]... [--keep DIR]

Inputs are drawn from --seed; input I is a pure function of (seed, I), so `--case I` runs one
again. Kinds (about their share of a run):
  cmd    command lines built from `BINARY list --json`: every subcommand and flag, with valid,
         boundary and malformed values (signs, -0, overflow, hex, invalid UTF-8, empty)
  file   mutated reports, histories and sweep shards (made by the binary at the start) given to
         replay, check and sweep-merge: fields at and past their bounds, wrong types, deep nesting,
         invalid UTF-8, histories that break the schema's rules, truncated and flipped bytes
  env    stdout full or closed, FIFOs for inputs and outputs, a bad TMPDIR, a read-only working
         directory
  peer   a fake redis-server first on PATH (huge arrays, silence, garbage, a crash at start) and
         fake ext drivers (no progress in virtual time, crashes, hangs, binary output, a
         background child holding stdout)
--sample is the CI slice: cheap inputs only (no real-world runs, no Node drivers).

Each input runs in a fresh directory under its own process group, with RLIMIT_DATA as a guard;
it fails on an exit outside 0-4, a signal, a run past --timeout seconds (a hang; five times that
for inputs that co-simulate the Node drivers, see SLOW_FACTOR), a peak RSS past --memory-mb
(ru_maxrss of the child; an AddressSanitizer build is neither guarded nor judged on memory), or an
exit 2-4 whose stderr is not exactly one line (the lines naming files written, "report: ..." and
the like, aside). Prints the exit-code histogram
and every failure with the command that reproduces it.

Exit: 0 every input within the contract, 1 a failure, 2 bad usage, 3 the binary is missing.
"""
import argparse
import collections
import json
import os
import random
import re
import resource
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import concurrent.futures

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFERENCE_DRIVER = os.path.join(REPO, "examples", "python-driver", "driver.py")

# stderr lines that say where a file was written: information, not an error line.
INFO_PREFIXES = ("report: ", "timeline: ", "history: ", "replay: ")
# A sanitizer's own notes ("==123==WARNING: ASan doesn't fully support makecontext/swapcontext"),
# one per process of an AddressSanitizer build: the runtime's, not the binary's answer.
SANITIZER_NOTE = re.compile(r"^==\d+==WARNING: ")


def is_info_line(line):
    """A stderr line that is not the one line naming what was wrong."""
    line = line.lstrip("\r")
    return line.startswith(INFO_PREFIXES) or SANITIZER_NOTE.match(line) is not None

INTS = ["0", "1", "2", "-1", "-0", "+1", "010", "0x10", "1e3", "1.5", " 5", "5 ", "", "abc",
        "2147483647", "2147483648", "4294967296", "9223372036854775807", "9223372036854775808",
        "18446744073709551615", "18446744073709551616", "99999999999999999999999", "86400000",
        "86400001", "1000000", "999999", "\u0661", "5\n6"]
BAD_BYTES = [b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\x1b[31m"]
BIG_JSON_INTS = [0, -1, 1, 2**31 - 1, 2**31, 2**32, 2**53, 2**63 - 1, 2**63, 2**64 - 1, 2**64,
                 10**6, 10**6 - 1, -10**6, 86400000, 86400001, 30000000, -2**63, 10**30]

FAKE_REDIS = r'''
import os, socket, sys, threading, time
mode = os.environ.get("FUZZ_REDIS_MODE", "big-array")
args = sys.argv[1:]
port = int(args[args.index("--port") + 1]) if "--port" in args else 6379
if mode == "exit-start":
    for i in range(105):
        sys.stderr.write("\x1b[31mfatal\x1b[0m \xff line %d\r\n" % i)
    sys.stdout.write("\x1b]0;title\x07 starting\n")
    sys.exit(1)
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port))
s.listen(16)
def serve(c):
    if mode == "close":
        c.close()
        return
    while True:
        data = c.recv(65536)
        if not data:
            return
        if mode == "silent":
            continue
        n = max(1, data.count(b"*"))
        if mode == "big-array":
            c.sendall(b"*2000000000\r\n" * n)
        elif mode == "big-bulk":
            c.sendall(b"$2000000000\r\n" * n)
        elif mode == "deep":
            c.sendall(b"*1\r\n" * 200000)
        elif mode == "garbage":
            c.sendall(os.urandom(4096))
        elif mode == "error-bytes":
            c.sendall(b"-ERR \x1b[31m\xff\xfe\x00 bad\r\n" * n)
        elif mode == "endless":
            c.sendall(b"+" + b"A" * (1 << 20))
            while True:
                c.sendall(b"A" * (1 << 20))
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
'''

# A driver that misbehaves in one way (MODE), else the reference driver.
FAKE_DRIVER = r'''
import importlib.util, json, os, subprocess, sys, time
mode, args = sys.argv[1], sys.argv[2:]
spec = importlib.util.spec_from_file_location("ref", REFERENCE)
ref = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ref)
out = sys.stdout.buffer
def raw(b):
    out.write(b)
    out.flush()
if mode == "exit-start":
    sys.stderr.write("\x1b[31mno\x1b[0m \xff\n" * 50)
    sys.exit(3)
if mode == "hang":
    for line in sys.stdin:
        pass
    time.sleep(3600)
if mode == "binary":
    raw(b"\x00\x1b[2J\xff\xfe\x07binary\r\nmore\x00\x01\nand\x7f more\n\x1b]0;x\x07\n")
    time.sleep(3600)
if mode == "huge-line":
    for _ in range(200):
        raw(b"A" * (1 << 20))
    time.sleep(3600)
if mode == "deep-json":
    raw(b"[" * 200000 + b"]" * 200000 + b"\n")
    time.sleep(3600)
if mode == "bg-child":
    subprocess.Popen(["sleep", "3600"], stdout=sys.stdout, stderr=sys.stderr)
    sys.exit(1)
if mode == "bad-utf8":
    sim = "--sim" in args
    line = sys.stdin.readline() if sim else ""
    now = json.loads(line)["now"]["mono_ns"] if sim else str(time.monotonic_ns())
    raw(b'{"ready": true, "name": "\xff\xfe\x1b[31m", "version": "\xc3\x28", "protocol": %d, '
        b'"capabilities": {"extend": true, "is_locked": true, "token": "random"}, '
        b'"now_ns": "%s"}\n' % (2 if sim else 1, now.encode()))
    if sim:
        raw(b'{"idle": true, "next_timer_ns": null}\n')
    for line in sys.stdin:
        raw(b'{"id": 1, "status": "\xff", "ok": true}\n')
    sys.exit(0)
last_now = ["0"]
real_stdin = sys.stdin
def lines():
    for line in real_stdin:
        try:
            last_now[0] = json.loads(line)["now"]["mono_ns"]
        except Exception:
            pass
        yield line
class In:
    def __iter__(self):
        return lines()
    def readline(self):
        return next(lines(), "")
sys.stdin = In()
plain_write = ref.write
requests = [0]
def write(obj):
    if mode == "timer-now" and "idle" in obj:
        obj["next_timer_ns"] = last_now[0]
    if mode == "timer-minus1" and "idle" in obj:
        obj["next_timer_ns"] = "-1"
    if mode == "timer-garbage" and "idle" in obj:
        obj["next_timer_ns"] = "12abc"
    if mode == "crash-after-ready" and "id" in obj:
        os._exit(1)
    if mode == "hang-after-ready" and "id" in obj:
        time.sleep(3600)
    if mode == "protocol-99" and "ready" in obj:
        obj["protocol"] = 99
    plain_write(obj)
ref.write = write
sys.exit(ref.entry(args))
'''


class Case:
    """One input: argv after the binary (str or bytes; @D is the case's directory), and what to
    set up around it."""

    def __init__(self, kind, argv, files=None, env=None, stdout="file", cwd_mode="rw",
                 fifo=None, note=""):
        self.kind, self.argv, self.files, self.env = kind, argv, files or {}, env or {}
        self.stdout, self.cwd_mode, self.fifo, self.note = stdout, cwd_mode, fifo or [], note


def sub_dir(arg, d):
    if isinstance(arg, bytes):
        return arg.replace(b"@D", os.fsencode(d))
    return arg.replace("@D", d)


class Seeds:
    """Files the binary itself writes, the raw material of mutations."""

    def __init__(self, binary, work, sample):
        self.dir = os.path.join(work, "seeds")
        os.makedirs(self.dir, exist_ok=True)
        self.reports, self.histories, self.shards, self.replays = [], [], [], []
        runs = [("stolen-lock", "memory"), ("gc-pause", "redis"), ("clock-jump", "redlock"),
                ("writer-starvation", "keyed-rw"), ("fifo-queue", "fifo"), ("failover", "mongo")]
        for scenario, adapter in runs[:3] if sample else runs:
            out = os.path.join(self.dir, "run")
            subprocess.run([binary, "run", scenario, "--adapter", adapter, "--report", out],
                           capture_output=True, check=False, cwd=self.dir)
        for name in sorted(os.listdir(os.path.join(self.dir, "run"))):
            path = os.path.join(self.dir, "run", name)
            if name.endswith(".history.jsonl"):
                self.histories.append(path)
            elif name.endswith(".json"):
                self.reports.append(path)
        shards = os.path.join(self.dir, "shards")
        for i in range(2):
            subprocess.run([binary, "sweep", "--adapter", "memory", "--seeds", "20", "--shard",
                            "%d/2" % i, "--report", shards, "--jobs", "1"],
                           capture_output=True, check=False, cwd=self.dir)
        self.shards = [os.path.join(shards, n) for n in sorted(os.listdir(shards))]
        replays = os.path.join(self.dir, "replays")
        subprocess.run([binary, "sweep", "--adapter", "bad-get-del-release", "--seeds", "200",
                        "--report", replays, "--jobs", "1"], capture_output=True, check=False,
                       cwd=self.dir)
        self.replays = [os.path.join(replays, n) for n in sorted(os.listdir(replays))
                        if n.startswith("swarm.") and n.endswith(".json")]
        if not (self.reports and self.histories and len(self.shards) == 2 and self.replays):
            raise SystemExit("fuzz.py: the binary did not write the seed files in %s" % self.dir)
        self.text = {}
        for path in self.reports + self.histories + self.shards + self.replays:
            with open(path, "rb") as f:
                self.text[path] = f.read()


# --- command lines -----------------------------------------------------------------------------

class Catalogue:
    def __init__(self, binary):
        listing = json.loads(subprocess.run([binary, "list", "--json"], capture_output=True,
                                            check=True).stdout)
        self.adapters = {a["name"]: a for a in listing["adapters"]}
        self.scenarios = {s["name"]: s for s in listing["scenarios"]}
        self.known_bad = [a for a, e in self.adapters.items() if e["known_bad"]]
        self.cheap = [a for a in self.adapters if not a.startswith("ext")]


def int_value(rng, default):
    pick = rng.random()
    if pick < 0.3:
        return default
    if pick < 0.9:
        return rng.choice(INTS)
    return os.fsencode(rng.choice(["5", "abc", ""])) + rng.choice(BAD_BYTES)


def option_value(rng, default):
    if default.lstrip("-").isdigit():
        return int_value(rng, default)
    words = [default, "", "bogus", "none", "always", "on", "off", "x" * 5000, "a\nb",
             "two-way", "one-way", "in-acquire"]
    if rng.random() < 0.1:
        return os.fsencode(default) + rng.choice(BAD_BYTES)
    return rng.choice(words)


def sets_for(rng, options, cap=3):
    out = []
    names = list(options)
    for _ in range(rng.randint(0, cap)):
        if names and rng.random() < 0.85:
            name = rng.choice(names)
            value = option_value(rng, options[name])
        else:
            name, value = rng.choice(["nope", "", "=", "ttl_ms", "TTL_MS"]), rng.choice(INTS)
        if isinstance(value, bytes):
            out += ["--set", os.fsencode(name) + b"=" + value]
        else:
            out += ["--set", rng.choice(["%s=%s", "%s = %s", "%s==%s", "%s%s"]) % (name, value)
                    if rng.random() < 0.1 else "%s=%s" % (name, value)]
    return out


def small_count(rng):
    return rng.choice(["1", "2", "3", "0", "-1", "abc", "", "1e1", "01", "10000001", "-0"])


def out_path(rng, what):
    return rng.choice(["@D/out/" + what, "@D/" + what, "/proc/version/" + what, "/dev/null",
                       "@D", "/nonexistent-root/" + what, "@D/ro/" + what, "", "@D/fifo"])


def cmd_case(rng, cat):
    sub = rng.choices(["run", "matrix", "sweep", "calibrate", "replay", "check", "sweep-merge",
                       "list", "garbage"], [40, 8, 16, 4, 4, 4, 4, 3, 6])[0]
    args = []
    fifo = []
    if sub == "garbage":
        pool = ["run", "lisst", "--help", "--version", "-x", "", "--", "--json", "\x01", "sweep",
                "--adapter", "memory", "--seeds", "help", "-h", "--jobs", "matrx"]
        args = [rng.choice(pool) for _ in range(rng.randint(0, 5))]
        if rng.random() < 0.2:
            args.append(b"\xff\xfe")
        return Case("cmd", args)
    if sub == "list":
        args = ["list"] + rng.choice([[], ["--json"], ["--jsn"], ["extra"]])
        return Case("cmd", args)
    if sub in ("replay", "check", "sweep-merge"):
        target = rng.choice(["@D/none.json", "@D", "/dev/null", "/dev/zero", "@D/fifo",
                             "/proc/self/status", "", "-", "/etc/passwd", b"@D/\xff.json"])
        if target == "@D/fifo":
            fifo.append("fifo")
        args = [sub, target] + rng.choice([[], ["--json"], ["--bogus"]])
        if sub == "replay" and rng.random() < 0.3:
            args += rng.choice([["--expect"], ["--expect=1"], ["--expect", "x"]])
        return Case("cmd", args, fifo=fifo)
    adapter = rng.choice(list(cat.adapters) + ["nope", "", "EXT", "ext:", "ext:nope"])
    entry = cat.adapters.get(adapter, {"options": {}, "worlds": ["sim"]})
    world = rng.choices(["sim", "real", "bogus", "", "SIM"], [80, 3, 3, 2, 2])[0]
    if world == "real" and adapter.startswith("ext"):
        world = "sim"
    if sub == "run":
        scenario = rng.choice(list(cat.scenarios) + ["nope", ""])
        options = dict(cat.scenarios.get(scenario, {"options": {}})["options"])
        options.update(entry["options"])
        args = ["run", scenario, "--adapter", adapter]
        if rng.random() < 0.5 or world != "sim":
            args += ["--world", world]
        if rng.random() < 0.3:
            args += ["--seed", rng.choice(INTS)]
        if rng.random() < 0.2:
            args += ["--fencing", rng.choice(["on", "off", "both", ""])]
        args += sets_for(rng, options)
        if adapter == "ext" and rng.random() < 0.7:
            args += ["--set", "driver=" + rng.choice([
                "python3 " + REFERENCE_DRIVER, "nope-no-such-program", "python3 -c 'import sys'",
                "/dev/null", "'unterminated", "python3 " + REFERENCE_DRIVER + " --bug nope"])]
        if rng.random() < 0.2:
            args += rng.choice([["--expect"], ["--expect=0"], ["--expect", "--expect"]])
        if world == "real" and rng.random() < 0.5:
            # in-bound values that take real time
            args += ["--set", rng.choice(["pause_ms=86400000", "hold_ms=86400000",
                                          "ttl_ms=86400000", "retry_times=1000000",
                                          "hold_ms=-0"])]
    elif sub == "matrix":
        args = ["matrix"]
        adapters = [adapter] if rng.random() < 0.9 else []
        if adapters and adapter.startswith("ext:") and rng.random() < 0.7:
            adapters = [rng.choice(cat.cheap)]
        for a in adapters:
            args += ["--adapter", a]
        if not adapters or rng.random() < 0.6:
            args += ["--scenario", rng.choice(list(cat.scenarios) + ["nope"])]
        if world != "sim" or rng.random() < 0.3:
            args += ["--world", world]
        if rng.random() < 0.4:
            args += ["--seeds", small_count(rng)]
        if rng.random() < 0.3:
            args += ["--jobs", rng.choice(["1", "2", "0", "257", "-1", "abc"])]
        if rng.random() < 0.2:
            args += ["--fencing", rng.choice(["on", "off", "both", "x"])]
        if rng.random() < 0.4:
            args += sets_for(rng, entry["options"], 2)
    elif sub == "sweep":
        if adapter.startswith("ext:") and rng.random() < 0.8:
            adapter = rng.choice(cat.cheap)
            entry = cat.adapters[adapter]
        args = ["sweep", "--adapter", adapter, "--seeds", small_count(rng)]
        if rng.random() < 0.3:
            args += ["--first-seed", rng.choice(INTS)]
        if rng.random() < 0.3:
            args += ["--shard", rng.choice(["0/1", "1/2", "2/2", "0/0", "-1/2", "1/", "/2", "x",
                                            "0/4294967296", "3/4", "0/1/2", "00/01"])]
        if rng.random() < 0.3:
            args += ["--faults", rng.choice(["all", "pause", "pause,crash", "", "nope", ",",
                                             "latency,loss,partition", "failover"])]
        if rng.random() < 0.3:
            args += ["--jobs", rng.choice(["1", "2", "0", "257"])]
        if rng.random() < 0.3:
            args += ["--shrink", rng.choice(["0", "1", "2", "1001", "-1"])]
        if rng.random() < 0.3:
            args.append("--keep-going")
        if rng.random() < 0.3:
            args += ["--fencing", rng.choice(["on", "off", "both"])]
        args += sets_for(rng, entry["options"], 2)
        if adapter == "ext" and rng.random() < 0.7:
            args += ["--set", "driver=python3 " + REFERENCE_DRIVER]
    elif sub == "calibrate":
        args = ["calibrate", "--seeds", small_count(rng)]
        if rng.random() < 0.8:
            args += ["--adapter", rng.choice(cat.known_bad + ["memory", "nope"])]
        if rng.random() < 0.3:
            args += ["--jobs", rng.choice(["1", "2", "0"])]
        if rng.random() < 0.3:
            args.append("--no-time-target")
    if rng.random() < 0.25 and sub in ("run", "matrix", "sweep", "calibrate"):
        path = out_path(rng, "reports")
        args += ["--report", path]
        if path == "@D/fifo":
            fifo.append("fifo")
    if rng.random() < 0.25 and sub in ("sweep", "calibrate"):
        # a time budget: at and past its bounds, units it does not know, overflow
        args += ["--time", rng.choice(["1s", "2", "1ms", "0s", "-1s", "1us", "1e3s", "", "1 s",
                                       "7d", "168h", "169h", "99999999999999999999h", "0x10s",
                                       "1h", b"1\xffs"])]
    if rng.random() < 0.15 and sub in ("run", "matrix", "sweep", "calibrate"):
        path = out_path(rng, "junit.xml")
        args += ["--junit", path]
        if path == "@D/fifo":
            fifo.append("fifo")
    if rng.random() < 0.4:
        args.append("--json")
    if rng.random() < 0.05:
        args.insert(rng.randint(1, len(args)), rng.choice(["--bogus", "--json=1", "-j"]))
    return Case("cmd", args, fifo=fifo)


# --- mutated files -----------------------------------------------------------------------------

def deep(n):
    return "[" * n + "]" * n


def json_paths(value, path=()):
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from json_paths(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value[:20]):
            yield from json_paths(v, path + (i,))


def set_path(root, path, value):
    if not path:
        return value
    node = root
    for p in path[:-1]:
        node = node[p]
    if value is DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return root


DELETE = object()
BAD_STRING = "\udcff\udcfe"  # written as the raw bytes ff fe (surrogateescape)


def mutant_value(rng, old):
    pick = rng.random()
    if pick < 0.45 and (isinstance(old, (int, float)) and not isinstance(old, bool)):
        return rng.choice(BIG_JSON_INTS + [-0.0, 1.5, 1e300, -1e300])
    if pick < 0.5:
        return DELETE
    return rng.choice([None, True, False, "", "x", BAD_STRING, "a\nb", [], {}, -1, 2**32,
                       2**64, "9" * 400, {"k": 1}, [1, 2], "\x1b[31m", "DEEP"])


def dumps(value):
    text = json.dumps(value, ensure_ascii=False)
    text = text.replace('"DEEP"', deep(100000))
    return text.encode("utf-8", "surrogateescape")


def mutate_json_doc(rng, data, lines=False):
    """A JSON document (or JSON Lines) mutated at a few random places."""
    if lines:
        docs = [json.loads(l) for l in data.decode().splitlines() if l.strip()]
    else:
        docs = [json.loads(data)]
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(docs))
        paths = list(json_paths(docs[i]))
        path = rng.choice(paths[1:] if len(paths) > 1 else paths)
        old = docs[i]
        try:
            for p in path:
                old = old[p]
        except (KeyError, IndexError, TypeError):
            continue
        docs[i] = set_path(docs[i], path, mutant_value(rng, old))
        if rng.random() < 0.1 and isinstance(docs[i], dict):
            docs[i]["unknown_field"] = 1
    if lines:
        return b"\n".join(dumps(d) for d in docs if d is not DELETE) + b"\n"
    return dumps(docs[0])


def mutate_bytes(rng, data):
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        pick = rng.random()
        if pick < 0.3 and data:
            del data[rng.randrange(len(data)):]
        elif pick < 0.6 and data:
            data[rng.randrange(len(data))] = rng.randrange(256)
        else:
            at = rng.randrange(len(data) + 1)
            data[at:at] = rng.choice(BAD_BYTES + [b"\x01", b"\n", b"[" * 1000, b"{}"])
    return bytes(data)


def history_rules(rng, data):
    """Histories that parse but break the schema's rules (ids, order, pairing, fault windows)."""
    lines = data.decode().splitlines()
    meta = json.loads(lines[0])
    events = [json.loads(l) for l in lines[1:]]
    pick = rng.randrange(12)
    if pick == 0:
        meta["meta"]["quorum"] = rng.choice([0, 99, 2**32, 2**31, -1])
    elif pick == 1:
        e = rng.choice([e for e in events if "client" in e] or events)
        e["client"] = rng.choice([2**32, 2**31 - 1, 2**31, 99, -1, 2**63])
    elif pick == 2:
        events = [e for e in events if e["kind"] != rng.choice(["cs_enter", "invoke", "cs_exit"])]
    elif pick == 3 and events:
        i = rng.randrange(len(events))
        events.insert(i, dict(events[i]))
    elif pick == 4:
        events.insert(0, {"time_us": 0, "kind": "fault", "fault": "pause", "client": 0,
                          "end_us": rng.choice([0, 1]), "amount": rng.choice([-5, 5])})
        events[0]["time_us"] = 0
    elif pick == 5:
        events.insert(0, {"time_us": 0, "kind": "complete", "client": 0, "key": "k",
                          "op": "acquire", "outcome": "ok"})
    elif pick == 6:
        events.insert(0, {"time_us": 0, "kind": "cs_exit", "client": 0, "key": "resource"})
    elif pick == 7:
        meta["meta"]["clients"] = rng.choice([0, 1, 2**31 - 1, 2**32])
    elif pick == 8:
        events = [e for e in events if e["kind"] not in ("final_value",)]
    elif pick == 9:
        meta["meta"]["servers"] = rng.choice([0, 2**31, 2**32])
    elif pick == 10:
        rng.shuffle(events)
        t = 0
        for e in events:
            e["time_us"] = t
            t += 1
    else:
        events.insert(0, {"time_us": 0, "kind": "release" if rng.random() < 0.5 else "invoke",
                          "client": 0, "key": "k", "op": "release"})
    return b"\n".join(dumps(x) for x in [meta] + events) + b"\n"


def file_case(rng, seeds):
    pick = rng.choices(["report", "replay", "history", "shard"], [25, 25, 30, 20])[0]
    if pick == "history":
        src = rng.choice(seeds.histories)
        how = rng.random()
        data = seeds.text[src]
        if how < 0.4:
            data = history_rules(rng, data)
        elif how < 0.8:
            data = mutate_json_doc(rng, data, lines=True)
        else:
            data = mutate_bytes(rng, data)
        name = rng.choice(["h.jsonl", "h.jsonl", b"\xff\xfe.jsonl"])
        args = ["check", b"@D/" + name if isinstance(name, bytes) else "@D/" + name]
        if rng.random() < 0.5:
            args.append("--json")
        return Case("file", args, files={name: data})
    if pick == "shard":
        first, second = seeds.shards
        files = {}
        a = seeds.text[first]
        b = seeds.text[second]
        if rng.random() < 0.8:
            a = mutate_json_doc(rng, a)
        else:
            a = mutate_bytes(rng, a)
        if rng.random() < 0.2:
            doc = json.loads(seeds.text[first])
            doc["shard"]["count"] = rng.choice([30000000, 2**31, -1, 0, 2**40])
            a = dumps(doc)
        files["s0.json"] = a
        files["s1.json"] = b
        args = ["sweep-merge", "@D/s0.json"] + (["@D/s1.json"] if rng.random() < 0.8 else [])
        if rng.random() < 0.3:
            args += ["--report", "@D/merged"]
        if rng.random() < 0.5:
            args.append("--json")
        return Case("file", args, files=files)
    src = rng.choice(seeds.reports if pick == "report" else seeds.replays)
    data = seeds.text[src]
    if rng.random() < 0.8:
        doc = json.loads(data)
        if pick == "replay" and rng.random() < 0.6 and "workload" in doc:
            paths = [p for p in json_paths(doc["workload"]) if p]
            path = rng.choice(paths)
            old = doc["workload"]
            for p in path:
                old = old[p]
            if isinstance(old, (int, float)) and not isinstance(old, bool):
                new = rng.choice(BIG_JSON_INTS + [-5, 10**6 + 1, 86400001])
            else:
                new = mutant_value(rng, old)
            set_path(doc["workload"], path, new)
            data = dumps(doc)
        else:
            data = mutate_json_doc(rng, data)
    else:
        data = mutate_bytes(rng, data)
    args = ["replay", "@D/r.json"] + (["--json"] if rng.random() < 0.5 else [])
    return Case("file", args, files={"r.json": data})


# --- environment and peers ---------------------------------------------------------------------

CHEAP_COMMANDS = [["list", "--json"], ["run", "sequential", "--adapter", "memory", "--json"],
                  ["run", "retry-storm", "--adapter", "memory", "--json"],
                  ["sweep", "--adapter", "memory", "--seeds", "30", "--json", "--jobs", "2"],
                  ["check", "@D/h.jsonl", "--json"], ["matrix", "--adapter", "memory", "--json"]]


def env_case(rng, seeds, sample):
    pick = rng.randrange(6)
    files = {"h.jsonl": seeds.text[seeds.histories[0]]}
    if pick == 0:
        return Case("env", rng.choice(CHEAP_COMMANDS), files=files,
                    stdout=rng.choice(["full", "closed"]))
    if pick == 1:
        cmd = rng.choice([["check", "@D/fifo"], ["replay", "@D/fifo"], ["sweep-merge", "@D/fifo"],
                          ["sweep-merge", "@D"],
                          ["run", "sequential", "--adapter", "memory", "--junit", "@D/fifo"],
                          ["matrix", "--adapter", "memory", "--scenario", "sequential",
                           "--junit", "@D/fifo"],
                          ["run", "sequential", "--adapter", "memory", "--report", "@D/fifo"]])
        return Case("env", cmd, fifo=["fifo"], files={} if "sweep-merge" in cmd else files)
    if pick in (2, 3):
        tmp = rng.choice(["@D/missing", "@D/h.jsonl", "@D/ro", "@D/" + "x" * 200 + "/" + "y" * 200,
                          "@D/" + "/".join(["d" * 250] * 20), ""])
        cmd = rng.choice([["run", "sequential", "--adapter", "redis", "--world", "real"],
                          ["run", "sequential", "--adapter", "ext", "--set",
                           "driver=python3 " + REFERENCE_DRIVER],
                          ["sweep", "--adapter", "ext", "--seeds", "2", "--set",
                           "driver=python3 " + REFERENCE_DRIVER],
                          ["run", "sequential", "--adapter", "memory", "--report", "@D/r"]])
        if sample and "real" in cmd:
            cmd = cmd[:4]
        return Case("env", cmd, files=files, env={"TMPDIR": tmp}, note="TMPDIR=" + tmp)
    cmd = rng.choice([["sweep", "--adapter", "bad-get-del-release", "--seeds", "200", "--jobs",
                       "1"],
                      ["run", "stolen-lock", "--adapter", "memory", "--report", "r"],
                      ["sweep", "--adapter", "memory", "--seeds", "5", "--report", "out"]])
    return Case("env", cmd, cwd_mode="ro", note="read-only working directory")


REDIS_MODES = ["big-array", "big-bulk", "deep", "exit-start", "silent", "close", "garbage",
               "error-bytes", "endless"]
DRIVER_MODES = ["timer-now", "timer-minus1", "timer-garbage", "crash-after-ready",
                "hang-after-ready", "exit-start", "hang", "binary", "huge-line", "deep-json",
                "bg-child", "bad-utf8", "protocol-99"]


SILENT_DRIVER_MODES = ("hang", "hang-after-ready", "binary", "huge-line", "deep-json")


def peer_case(rng, sample):
    if not sample and rng.random() < 0.3 and shutil.which("redis-server"):
        mode = rng.choice(REDIS_MODES)
        cmd = rng.choice([["run", "sequential", "--adapter", "redis", "--world", "real"],
                          ["run", "sequential", "--adapter", "redlock", "--world", "real"],
                          ["run", "sequential", "--adapter", "ext", "--world", "real", "--set",
                           "driver=python3 " + REFERENCE_DRIVER]])
        return Case("peer", cmd, env={"FUZZ_REDIS_MODE": mode, "PATH": "@D/bin:" +
                                      os.environ.get("PATH", "")}, note="redis " + mode)
    # The sample leaves out drivers that go silent: each costs an exchange deadline of real time.
    mode = rng.choice([m for m in DRIVER_MODES if not sample or m not in SILENT_DRIVER_MODES])
    driver = "driver=%s @D/fake_driver.py %s" % (sys.executable, mode)
    real = not sample and rng.random() < 0.3 and shutil.which("redis-server")
    cmd = rng.choice([["run", "sequential", "--adapter", "ext", "--set", driver],
                      ["run", "stolen-lock", "--adapter", "ext", "--set", driver,
                       "--set", "ext_deadline_ms=" + rng.choice(["1", "10000"])],
                      ["sweep", "--adapter", "ext", "--seeds", "3", "--set", driver],
                      ["sweep", "--adapter", "ext", "--seeds", "3", "--jobs", "1", "--set",
                       driver],
                      ["matrix", "--adapter", "ext", "--scenario", "sequential", "--set",
                       driver]])
    if real:
        cmd = ["run", "sequential", "--adapter", "ext", "--world", "real", "--set", driver]
    if rng.random() < 0.3:
        cmd.append("--json")
    return Case("peer", cmd, note="driver " + mode)


# Inputs that co-simulate the Node drivers (an ext:NAME adapter, or a matrix of every adapter)
# get this many times the bound before they count as a hang: each client is a Node process
# answering every event over a pipe, so a 200-client retry-storm takes ~45 s alone on two busy
# cores, making progress all along. A driver that makes none is still ended by lockstep itself.
SLOW_FACTOR = 5


def co_simulates_node(argv):
    words = [a for a in argv if isinstance(a, str)]
    return (any(a.startswith("ext:") for a in words)
            or (words[:1] == ["matrix"] and "--adapter" not in words))


def make_case(seed, index, cat, seeds, sample):
    rng = random.Random(seed * 1_000_003 + index)
    kind = rng.choices(["cmd", "file", "env", "peer"], [70, 24, 3, 3])[0]
    if kind == "cmd":
        case = cmd_case(rng, cat)
        if sample and any(isinstance(a, str) and a in ("real",) for a in case.argv):
            case = cmd_case(random.Random(seed * 7 + index), cat)
            case.argv = [a for a in case.argv if a != "real"] + ["--world", "sim"]
        if sample and any(isinstance(a, str) and a.startswith("ext") for a in case.argv):
            case.argv = [("memory" if isinstance(a, str) and a.startswith("ext") else a)
                         for a in case.argv]
        return case
    if kind == "file":
        return file_case(rng, seeds)
    if kind == "env":
        return env_case(rng, seeds, sample)
    return peer_case(rng, sample)


# --- running one input -------------------------------------------------------------------------

def setup_dir(case, d):
    os.makedirs(os.path.join(d, "bin"))
    with open(os.path.join(d, "bin", "redis-server"), "w") as f:
        f.write("#!%s\n%s" % (sys.executable, FAKE_REDIS))
    os.chmod(os.path.join(d, "bin", "redis-server"), 0o755)
    with open(os.path.join(d, "fake_driver.py"), "w") as f:
        f.write("REFERENCE = %r\n%s" % (REFERENCE_DRIVER, FAKE_DRIVER))
    os.makedirs(os.path.join(d, "ro"))
    for name, data in case.files.items():
        with open(os.path.join(os.fsencode(d), os.fsencode(name)), "wb") as f:
            f.write(data)
    for name in case.fifo:
        if not os.path.exists(os.path.join(d, name)):
            os.mkfifo(os.path.join(d, name))
    cwd = os.path.join(d, "cwd")
    os.makedirs(cwd)
    os.chmod(os.path.join(d, "ro"), 0o555)
    if case.cwd_mode == "ro":
        os.chmod(cwd, 0o555)
    return cwd


def sanitized(binary):
    """True for a binary built with AddressSanitizer: it reserves terabytes of shadow address
    space as it starts, so RLIMIT_DATA kills it before main, and its RSS is not the product's."""
    with open(binary, "rb") as f:
        return b"__asan_init" in f.read()


def limits(memory_bytes):
    """The child's guards; memory_bytes None (a sanitized binary) leaves memory unguarded."""
    def apply():
        # A guard well above the failure line: a run that reaches it fails by its own exit.
        if memory_bytes is not None:
            resource.setrlimit(resource.RLIMIT_DATA, (memory_bytes * 3, memory_bytes * 3))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return apply


def quote(arg):
    if isinstance(arg, bytes):
        return "$'" + "".join("\\x%02x" % b if b < 32 or b > 126 or b in b"'\\" else chr(b)
                              for b in arg) + "'"
    return shlex.quote(arg)


def run_case(binary, case, index, work, timeout_s, memory_bytes, keep):
    d = tempfile.mkdtemp(prefix="case%d-" % index, dir=work)
    result = {"index": index, "kind": case.kind, "note": case.note}
    try:
        cwd = setup_dir(case, d)
        argv = [os.fsencode(binary)] + [os.fsencode(sub_dir(a, d)) if isinstance(a, str)
                                        else sub_dir(a, d) for a in case.argv]
        env = dict(os.environ)
        env.update({k: sub_dir(v, d) for k, v in case.env.items()})
        if env.get("TMPDIR") == "":
            del env["TMPDIR"]
        result["cmd"] = " ".join(quote(a.decode("utf-8", "surrogateescape")
                                       if isinstance(a, bytes) else a) for a in argv)
        err_path = os.path.join(d, "stderr")
        read_end = None
        if case.stdout == "full":
            out = open("/dev/full", "wb")
        elif case.stdout == "closed":
            read_end, write_end = os.pipe()
            os.close(read_end)
            out = os.fdopen(write_end, "wb")
        else:
            out = open(os.path.join(d, "stdout"), "wb")
        with out, open(err_path, "wb") as err:
            started = time.monotonic()
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                    cwd=cwd, env=env, start_new_session=True,
                                    preexec_fn=limits(memory_bytes))
        waited = {}

        def wait():
            waited["status"] = os.wait4(proc.pid, 0)

        waiter = threading.Thread(target=wait)
        waiter.start()
        if co_simulates_node(case.argv):
            timeout_s *= SLOW_FACTOR
            result["bound_s"] = timeout_s
        waiter.join(timeout_s)
        hung = waiter.is_alive()
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # a hang, and whatever it left in its group
        except ProcessLookupError:
            pass
        waiter.join()
        proc.returncode = 0  # reaped by wait4 above; keeps Popen from waiting again
        result["wall_s"] = round(time.monotonic() - started, 2)
        _, status, usage = waited["status"]
        result["maxrss_mb"] = usage.ru_maxrss // 1024
        if hung:
            result["exit"] = "hang"
        elif os.WIFSIGNALED(status):
            result["exit"] = "signal %s" % signal.Signals(os.WTERMSIG(status)).name
        else:
            result["exit"] = os.WEXITSTATUS(status)
        with open(err_path, "rb") as f:
            stderr = f.read()
        lines = [l for l in stderr.decode("utf-8", "replace").split("\n") if l.strip()]
        lines = [l for l in lines if not is_info_line(l)]
        result["stderr"] = stderr[:600].decode("utf-8", "replace")
        result["stderr_lines"] = len(lines)
        result["failure"] = judge(result, memory_bytes)
    except Exception as e:  # the fuzzer's own trouble: reported, never passed over
        result.setdefault("cmd", repr(case.argv))
        result["exit"] = "fuzzer error"
        result["failure"] = "fuzzer error: %r" % e
    finally:
        if result.get("failure") and keep:
            dest = os.path.join(keep, "case%d" % index)
            shutil.rmtree(dest, ignore_errors=True)
            shutil.copytree(d, dest, symlinks=True, ignore_dangling_symlinks=True,
                            ignore=shutil.ignore_patterns("fifo"))
        make_removable(d)
        shutil.rmtree(d, ignore_errors=True)
    return result


def make_removable(d):
    for root, dirs, _ in os.walk(d):
        for name in dirs:
            try:
                os.chmod(os.path.join(root, name), stat.S_IRWXU)
            except OSError:
                pass


def judge(r, memory_bytes):
    code = r["exit"]
    if not isinstance(code, int):
        return code
    if code > 4:
        return "exit %d" % code
    if memory_bytes is not None and r["maxrss_mb"] * 1024 * 1024 > memory_bytes:
        return "memory %d MB" % r["maxrss_mb"]
    if code >= 2 and r["stderr_lines"] != 1:
        return "exit %d with %d stderr lines" % (code, r["stderr_lines"])
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binary")
    parser.add_argument("--count", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds before a hang")
    parser.add_argument("--memory-mb", type=int, default=1024)
    parser.add_argument("--sample", action="store_true", help="cheap inputs only (CI)")
    parser.add_argument("--case", type=int, action="append", help="run only these inputs")
    parser.add_argument("--keep", help="copy each failing input's directory here")
    parser.add_argument("--json", help="write every result here")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    try:
        a = parser.parse_args()
    except SystemExit as e:
        return 2 if e.code else 0
    if a.count < 0 or a.jobs < 1 or a.timeout <= 0:
        print("fuzz.py: --count >= 0, --jobs >= 1 and --timeout > 0", file=sys.stderr)
        return 2
    binary = os.path.abspath(a.binary)
    if not os.access(binary, os.X_OK):
        print("fuzz.py: %s is not an executable (build it: ninja -C build)" % binary,
              file=sys.stderr)
        return 3
    work = tempfile.mkdtemp(prefix="lockstep-fuzz-")
    started = time.monotonic()
    try:
        cat = Catalogue(binary)
        seeds = Seeds(binary, work, a.sample)
        indices = a.case or list(range(a.count))
        cases = [(i, make_case(a.seed, i, cat, seeds, a.sample)) for i in indices]
        memory_bytes = a.memory_mb * 1024 * 1024
        if sanitized(binary):
            memory_bytes = None
            print("memory neither guarded nor judged: %s is built with AddressSanitizer"
                  % binary, flush=True)
        results = []
        histogram = collections.Counter()
        kinds = collections.Counter()
        with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
            futures = [pool.submit(run_case, binary, c, i, work, a.timeout, memory_bytes, a.keep)
                       for i, c in cases]
            for n, f in enumerate(concurrent.futures.as_completed(futures), 1):
                r = f.result()
                results.append(r)
                histogram[str(r["exit"])] += 1
                kinds[r["kind"]] += 1
                if r.get("failure"):
                    print("FAIL case %d (%s): %s\n  %s%s\n  stderr: %s" % (
                        r["index"], r["kind"], r["failure"], r["cmd"],
                        "  [%s]" % r["note"] if r["note"] else "",
                        r.get("stderr", "")[:300].replace("\n", "\\n")), flush=True)
                if not a.quiet and n % 500 == 0:
                    print("... %d/%d inputs, %.0fs; exit codes so far: %s" % (
                        n, len(cases), time.monotonic() - started,
                        ", ".join("%s: %d" % kv for kv in sorted(histogram.items()))), flush=True)
    finally:
        make_removable(work)
        shutil.rmtree(work, ignore_errors=True)
    results.sort(key=lambda r: r["index"])
    failures = [r for r in results if r.get("failure")]
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    slowest = max(results, key=lambda r: r.get("wall_s", 0), default=None)
    biggest = max(results, key=lambda r: r.get("maxrss_mb", 0), default=None)
    print("inputs: %d (%s) in %.0fs, seed %d" % (
        len(results), ", ".join("%s %d" % kv for kv in sorted(kinds.items())),
        time.monotonic() - started, a.seed))
    print("exit codes: " + ", ".join("%s: %d" % kv for kv in sorted(histogram.items())))
    if slowest:
        print("slowest: %.1fs (case %d); largest: %d MB (case %d)" % (
            slowest.get("wall_s", 0), slowest["index"], biggest.get("maxrss_mb", 0),
            biggest["index"]))
    reasons = collections.Counter(r["failure"].split(" with ")[0] for r in failures)
    print("%d passed, %d failed%s" % (len(results) - len(failures), len(failures),
                                       (": " + ", ".join("%s: %d" % kv for kv in
                                                         sorted(reasons.items())))
                                       if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
