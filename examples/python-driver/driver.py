#!/usr/bin/env python3
"""A reference lockstep driver (ext/PROTOCOL.md, version 1) in Python, stdlib only.

The lock: one TTL lease per key on one redis-server, through a minimal RESP client.
  acquire:  SET key value NX PX ttl           (value: a random 128-bit hex string)
  release:  compare-and-delete in one Lua script
  extend:   compare-and-pexpire in one Lua script
  is_locked: GET key == value
Pass --bug extend-no-owner-check for the one bug: extend by plain PEXPIRE, which lengthens
whoever's lock is there (stolen-lock judges that as `ownership`).

Usage: driver.py [--bug extend-no-owner-check] --redis HOST:PORT   (the harness appends --redis)
"""
import json
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
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.sock.sendall(out)
        return self._reply()


def now_ns():
    return str(time.monotonic_ns())  # CLOCK_MONOTONIC on Linux


def write(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main(argv):
    global BUG
    if "--bug" in argv:
        BUG = argv[argv.index("--bug") + 1] if argv.index("--bug") + 1 < len(argv) else ""
        if BUG not in BUGS:
            sys.stderr.write("driver.py: --bug %r is not one of: %s\n" % (BUG, ", ".join(BUGS)))
            return 2
    host, port = "127.0.0.1", 6379
    if "--redis" in argv:
        host, port = argv[argv.index("--redis") + 1].split(",")[0].rsplit(":", 1)
    redis = None
    locks = {}  # handle -> (key, value)
    write({"ready": True, "name": "python-redis-lease",
           "version": "lockstep-python-driver 1" + (" (bug: %s)" % BUG if BUG else ""),
           "protocol": 1,
           "capabilities": {"extend": True, "is_locked": True, "token": "random"},
           "now_ns": now_ns()})
    for line in sys.stdin:
        req = json.loads(line)
        rid, op = req.get("id"), req.get("op")
        t0 = now_ns()
        status, token, err = "ok", None, None
        try:
            if op in ("acquire", "release", "extend", "is_locked") and redis is None:
                redis = Resp(host, int(port))
            if op == "acquire":
                value = os.urandom(16).hex()
                if redis.call("SET", req["key"], value, "NX", "PX", req["ttl_ms"]) == "OK":
                    locks[req["handle"]] = (req["key"], value)
                    token = value
                else:
                    status = "contended"
            elif op in ("release", "extend", "is_locked"):
                key, value = locks[req["handle"]]
                if op == "release":
                    done = redis.call("EVAL", RELEASE, 1, key, value)
                elif op == "extend" and BUG == "extend-no-owner-check":
                    done = redis.call("PEXPIRE", key, req["ttl_ms"])
                elif op == "extend":
                    done = redis.call("EVAL", EXTEND, 1, key, value, req["ttl_ms"])
                else:
                    done = 1 if redis.call("GET", key) == value else 0
                status = "ok" if done == 1 else "not_owner"
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
        reply = {"id": rid, "status": status, "ok": status == "ok", "t0_ns": t0, "t1_ns": now_ns()}
        if token is not None:
            reply["token"] = token
        if err is not None:
            reply["err"] = err
        write(reply)
        if op == "shutdown":
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
