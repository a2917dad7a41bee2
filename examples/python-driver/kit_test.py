#!/usr/bin/env python3
"""The driver kit (lockstep_driver.py) in version 2, driven by hand (ctest: python_driver_kit).

A lock that sleeps before it talks to Redis: its timer is the exchange's next_timer_ns, two
requests wait on their own timers and run in timer order, a reply reaches the request that sent
the command, a reset connection fails the waiting request, an unknown handle is bad_request,
a reply that never comes times out after 5 s of simulated time and closes its connection,
reset unwinds a parked request and answers a bare idle, and the same lines give the same output
(the seeded randomness included). No server needed: the test plays the harness and Redis.
"""
import base64
import json
import os
import subprocess
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
SLEEPY = textwrap.dedent("""
    import sys
    sys.path.insert(0, %r)
    import lockstep_driver as kit

    class Sleepy:
        def __init__(self, io):
            self.io = io
        def acquire(self, key, ttl_ms):
            self.io.sleep_ms(int(key[1:]))          # key "k5": sleep 5 ms first
            value = "%%032x" %% self.io.random.getrandbits(128)
            if self.io.redis.call("SET", key, value, "NX", "PX", ttl_ms) == "OK":
                return kit.Granted(token=value, lock=(key, value))
            return "contended"
        def release(self, lock):
            return "ok" if self.io.redis.call("DEL", lock[0]) == 1 else "not_owner"

    sys.exit(kit.serve(Sleepy, name="sleepy", version="sleepy 1"))
""" % HERE)

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what)


def now(ms):
    return {"wall_ms": 1767225600000 + ms, "mono_ns": str(3600000000000 + ms * 1000000)}


def b64(data):
    return base64.b64encode(data).decode()


class Driver:
    def __init__(self, path):
        self.proc = subprocess.Popen([sys.executable, path, "--sim", "--redis", "sim:0"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.log = []

    def exchange(self, op, ms, **fields):
        """Sends one line; returns the lines up to and including idle."""
        msg = dict(fields, op=op, now=now(ms))
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()
        lines = []
        for _ in range(1000):  # bounded: an exchange ends with idle
            line = self.proc.stdout.readline()
            if not line:
                raise SystemExit("the driver exited during %r" % op)
            lines.append(json.loads(line))
            if "idle" in lines[-1]:
                break
        self.log.extend(lines)
        return lines

    def close(self):
        self.exchange("shutdown", 100, id=999)
        self.proc.wait(timeout=10)
        return self.proc.returncode


def script(path):
    d = Driver(path)
    out = d.exchange("init", 0, seed="42")
    check(out[0].get("ready") and out[0]["protocol"] == 2, "init answers ready, protocol 2")
    check(out[0]["capabilities"] == {"extend": False, "is_locked": False, "token": "random"},
          "capabilities follow the lock's methods: %r" % out[0]["capabilities"])
    check(out[-1] == {"idle": True, "next_timer_ns": None}, "no timer after init")

    out = d.exchange("acquire", 1, id=1, handle="a", key="k5", ttl_ms=1000)
    check(out == [{"idle": True, "next_timer_ns": now(6)["mono_ns"]}],
          "a sleeping request writes nothing and its timer is next: %r" % out)
    out = d.exchange("acquire", 2, id=2, handle="b", key="k1", ttl_ms=1000)
    check(out[-1]["next_timer_ns"] == now(3)["mono_ns"], "the earlier timer is next: %r" % out)

    out = d.exchange("tick", 6)  # both timers due: b's (3 ms) runs before a's (6 ms)
    sends = [base64.b64decode(line["data"]) for line in out if "send" in line]
    check(out[0] == {"connect": 1, "server": 0}, "the first command connects: %r" % out)
    check(len(sends) == 2 and b"k1" in sends[0] and b"k5" in sends[1],
          "timers fire in due order: %r" % sends)
    check(out[-1]["next_timer_ns"] == now(3 + 5000)["mono_ns"],
          "the next timer is the first command's reply timeout: %r" % out[-1])

    out = d.exchange("recv", 7, conn=1, data=b64(b"+OK\r\n$-1\r\n"))
    replies = {line["id"]: line for line in out if "id" in line}
    check(replies.get(2, {}).get("status") == "ok" and len(replies[2].get("token", "")) == 32,
          "b's reply (first in order) grants b: %r" % out)
    check(replies.get(2, {}).get("t0_ns") == now(2)["mono_ns"] and
          replies[2]["t1_ns"] == now(7)["mono_ns"], "t0/t1 are the request's and reply's times")
    check(replies.get(1, {}).get("status") == "contended", "a's nil reply is contended")

    check(out[-1]["next_timer_ns"] is None, "answered: no reply timeout left: %r" % out[-1])

    out = d.exchange("release", 8, id=3, handle="nope")
    check(out[0].get("status") == "bad_request", "an unknown handle is bad_request: %r" % out)
    out = d.exchange("release", 9, id=4, handle="b")
    check(len(out) == 2 and "send" in out[0], "a release sends its command: %r" % out)
    out = d.exchange("closed", 10, conn=1)
    check(out[0].get("id") == 4 and out[0]["status"] == "error" and
          out[0]["err"]["name"] == "ConnectionError", "a reset connection fails the request")

    # A reply that never comes: the request waits 5 s of simulated time, then the connection is
    # closed and the request fails; the next command connects afresh.
    d.exchange("release", 11, id=6, handle="b")
    out = d.exchange("tick", 11 + 5000)
    check({"close": 2} in out, "the timed-out connection is closed: %r" % out)
    timed_out = [line for line in out if line.get("id") == 6]
    check(timed_out and timed_out[0]["status"] == "error" and
          timed_out[0]["err"]["name"] == "TimeoutError", "a reply that never comes times out")
    out = d.exchange("release", 5012, id=7, handle="b")
    check(out[0] == {"connect": 3, "server": 0}, "the next command reconnects: %r" % out)
    d.exchange("recv", 5013, conn=3, data=b64(b":1\r\n"))

    d.exchange("acquire", 5014, id=5, handle="c", key="k50", ttl_ms=1000)  # parked on its timer
    out = d.exchange("reset", 5015)
    check(out == [{"idle": True, "next_timer_ns": None}], "reset answers a bare idle: %r" % out)
    out = d.exchange("init", 0, seed="42")
    check(out[0].get("ready") is True, "init after reset is ready again")
    check(d.close() == 0, "shutdown exits 0")
    return d.log


def main():
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), "lockstep_kit_sleepy_%d.py" % os.getpid())
    with open(path, "w") as f:
        f.write(SLEEPY)
    try:
        first = script(path)
        second = script(path)
        check(first == second, "the same lines give the same output (seeded randomness)")
    finally:
        os.unlink(path)
    print("kit: %d failures" % len(FAILURES))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
