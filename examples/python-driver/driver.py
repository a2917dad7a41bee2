#!/usr/bin/env python3
"""A reference lockstep driver (services/ext/PROTOCOL.md, versions 1 and 2) in Python, stdlib only.

The lock: one TTL lease per key on one redis-server, through a minimal RESP client.
  acquire:  SET key value NX PX ttl           (value: a random 128-bit hex string)
  release:  compare-and-delete in one Lua script
  extend:   compare-and-pexpire in one Lua script
  is_locked: GET key == value
Pass --bug extend-no-owner-check for the one bug: extend by plain PEXPIRE, which lengthens
whoever's lock is there (stolen-lock judges that as `ownership`).

Usage: driver.py [--bug extend-no-owner-check] --redis HOST:PORT   (the harness appends --redis)
       driver.py [--bug ...] --sim --redis sim:0   (version 2, co-simulated: `--world sim`)

With --sim the driver owns no time, socket or randomness (services/ext/PROTOCOL.md, "Version 2"): its
Redis connection is `connect`/`send` lines and `recv` replies, its clock the `now` of each line,
its lock values drawn from a generator seeded by `init`. It has no timers, so every exchange ends
with `next_timer_ns: null`. The same lock logic serves both versions.
"""
import base64
import json
import random
import os
import socket
import sys
import time

RELEASE = ("if redis.call('GET', KEYS[1]) == ARGV[1] then "
           "return redis.call('DEL', KEYS[1]) else return 0 end")
EXTEND = ("if redis.call('GET', KEYS[1]) == ARGV[1] then "
          "return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end")
BUGS = ("extend-no-owner-check",)
BUG = ""


class Resp:
    """One connection, one command at a time (requests are answered in order)."""

    def __init__(self, host, port):
        self.sock = socket.create_connection((host, port), timeout=5)
        self.buf = b""

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("redis closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind in (b"+",):
            return rest.decode()
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise ConnectionError("redis closed the connection")
                self.buf += chunk
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data.decode()
        if kind == b"*":
            return [self._reply() for _ in range(int(rest))]
        raise RuntimeError("bad RESP line %r" % line)

    def call(self, *args):
        self.sock.sendall(command(*args))
        return self._reply()


def now_ns():
    return str(time.monotonic_ns())  # CLOCK_MONOTONIC on Linux


def command(*args):
    """One RESP command's bytes."""
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def parse_reply(buf, at=0):
    """(reply, next offset) for the complete RESP reply at `at`, or None if it is not all there.
    An error reply is returned as a RuntimeError (not raised)."""
    end = buf.find(b"\r\n", at)
    if end < 0:
        return None
    kind, rest, after = buf[at:at + 1], buf[at + 1:end], end + 2
    if kind == b"+":
        return rest.decode(), after
    if kind == b"-":
        return RuntimeError(rest.decode()), after
    if kind == b":":
        return int(rest), after
    if kind == b"$":
        n = int(rest)
        if n < 0:
            return None, after
        if len(buf) < after + n + 2:
            return None
        return buf[after:after + n].decode(), after + n + 2
    if kind == b"*":
        items = []
        for _ in range(int(rest)):
            parsed = parse_reply(buf, after)
            if parsed is None:
                return None
            item, after = parsed
            items.append(item)
        return items, after
    raise RuntimeError("bad RESP line %r" % buf[at:end])


def write(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


LOCK_OPS = ("acquire", "release", "extend", "is_locked")


def plan(req, locks, new_value):
    """A lock request as one Redis command and what its reply means: (args, finish), where
    finish(reply) -> (status, token). Raises KeyError for a handle it does not know."""
    op = req["op"]
    if op == "acquire":
        key, value = req["key"], new_value()

        def granted(reply):
            if reply == "OK":
                locks[req["handle"]] = (key, value)
                return "ok", value
            return "contended", None
        return ("SET", key, value, "NX", "PX", req["ttl_ms"]), granted
    key, value = locks[req["handle"]]
    if op == "release":
        args = ("EVAL", RELEASE, 1, key, value)
    elif op == "extend" and BUG == "extend-no-owner-check":
        args = ("PEXPIRE", key, req["ttl_ms"])
    elif op == "extend":
        args = ("EVAL", EXTEND, 1, key, value, req["ttl_ms"])
    else:
        return ("GET", key), lambda reply: ("ok" if reply == value else "not_owner", None)
    return args, lambda reply: ("ok" if reply == 1 else "not_owner", None)


def respond(rid, status, t0, t1, token=None, err=None):
    reply = {"id": rid, "status": status, "ok": status == "ok", "t0_ns": t0, "t1_ns": t1}
    if token is not None:
        reply["token"] = token
    if err is not None:
        reply["err"] = err
    write(reply)


def ready(protocol, now):
    write({"ready": True, "name": "python-redis-lease",
           "version": "lockstep-python-driver 1" + (" (bug: %s)" % BUG if BUG else ""),
           "protocol": protocol,
           "capabilities": {"extend": True, "is_locked": True, "token": "random"},
           "now_ns": now})


def main(argv, host, port):
    """Version 1: real time, a real socket, requests answered one at a time."""
    redis = None
    locks = {}  # handle -> (key, value)
    ready(1, now_ns())
    for line in sys.stdin:
        req = json.loads(line)
        rid, op = req.get("id"), req.get("op")
        t0 = now_ns()
        status, token, err = "ok", None, None
        try:
            if op in LOCK_OPS:
                if redis is None:
                    redis = Resp(host, int(port))
                args, finish = plan(req, locks, lambda: os.urandom(16).hex())
                status, token = finish(redis.call(*args))
            elif op == "pause":
                time.sleep(req["duration_ms"] / 1000.0)
            elif op in ("ping", "shutdown"):
                pass
            else:
                status = "bad_request"
                err = {"name": "BadRequest", "message": "unknown op %r" % op}
        except KeyError as e:
            status, err = "bad_request", {"name": "KeyError", "message": str(e)}
        except Exception as e:  # the server is unreachable, or answered an error
            status, err = "error", {"name": type(e).__name__, "message": str(e)}
        respond(rid, status, t0, now_ns(), token, err)
        if op == "shutdown":
            return 0
    return 0


class SimRun:
    """Version 2: one run's state. Redis answers in order, so the requests waiting for a reply
    are a queue; a connection the harness reset fails them and the next request reconnects."""

    def __init__(self, seed):
        self.random = random.Random(seed)
        self.locks = {}
        self.conn = 0        # the open connection (0: none)
        self.next_conn = 1   # ids are never reused
        self.inbox = b""
        self.waiting = []    # (id, t0_ns, finish), oldest first

    def new_value(self):
        return "%032x" % self.random.getrandbits(128)

    def request(self, req, now):
        if self.conn == 0:
            self.conn, self.next_conn = self.next_conn, self.next_conn + 1
            write({"connect": self.conn, "server": 0})
        try:
            args, finish = plan(req, self.locks, self.new_value)
        except KeyError as e:
            return respond(req.get("id"), "bad_request", now, now,
                           err={"name": "KeyError", "message": str(e)})
        write({"send": self.conn, "data": base64.b64encode(command(*args)).decode()})
        self.waiting.append((req.get("id"), now, finish))

    def received(self, conn, data, now):
        if conn != self.conn:
            return  # bytes of a connection already reset
        self.inbox += base64.b64decode(data)
        while self.waiting:
            parsed = parse_reply(self.inbox)
            if parsed is None:
                return
            reply, used = parsed
            self.inbox = self.inbox[used:]
            rid, t0, finish = self.waiting.pop(0)
            if isinstance(reply, RuntimeError):
                respond(rid, "error", t0, now, err={"name": "RedisError", "message": str(reply)})
            else:
                status, token = finish(reply)
                respond(rid, status, t0, now, token)

    def closed(self, conn, now):
        if conn != self.conn:
            return
        for rid, t0, _ in self.waiting:
            respond(rid, "error", t0, now,
                    err={"name": "ConnectionError", "message": "the connection was reset"})
        self.conn, self.inbox, self.waiting = 0, b"", []


def sim_main():
    """Version 2: co-simulated. Each harness line is handled whole, then `idle`."""
    run = None
    for line in sys.stdin:
        msg = json.loads(line)
        op, now = msg.get("op"), msg["now"]["mono_ns"]
        if op == "init":
            run = SimRun(str(msg["seed"]))
            ready(2, now)
        elif op == "reset":
            run = None  # the next line is an init, as to a fresh process
        elif run is None:
            sys.stderr.write("driver.py: %r before init\n" % op)
            return 2
        elif op == "recv":
            run.received(msg["conn"], msg["data"], now)
        elif op == "closed":
            run.closed(msg["conn"], now)
        elif op in LOCK_OPS:
            run.request(msg, now)
        elif op in ("tick", "ping", "shutdown"):
            if op != "tick":
                respond(msg.get("id"), "ok", now, now)
        else:
            respond(msg.get("id"), "bad_request", now, now,
                    err={"name": "BadRequest", "message": "unknown op %r" % op})
        write({"idle": True, "next_timer_ns": None})
        if op == "shutdown":
            return 0
    return 0


def entry(argv):
    global BUG
    if "--bug" in argv:
        BUG = argv[argv.index("--bug") + 1] if argv.index("--bug") + 1 < len(argv) else ""
        if BUG not in BUGS:
            sys.stderr.write("driver.py: --bug %r is not one of: %s\n" % (BUG, ", ".join(BUGS)))
            return 2
    if "--sim" in argv:
        return sim_main()
    host, port = "127.0.0.1", 6379
    if "--redis" in argv:
        host, port = argv[argv.index("--redis") + 1].split(",")[0].rsplit(":", 1)
    return main(argv, host, port)


if __name__ == "__main__":
    sys.exit(entry(sys.argv[1:]))
