#!/usr/bin/env python3
"""A reference lockstep driver in Python, built on the kit (lockstep_driver.py), stdlib only.

The lock: one TTL lease per key on one redis-server.
  acquire:  SET key value NX PX ttl           (value: a random 128-bit hex string); a grant
            that arrives after ttl less a drift margin is released and the attempt fails
  release:  compare-and-delete in one Lua script
  extend:   compare-and-pexpire in one Lua script
  is_locked: GET key == value
Pass --fencing for a fencing token: the grant and an INCR of the counter `fence/KEY` are one Lua
script, so tokens rise in grant order (its ready line says `monotonic`; run it with
`--set tokens=monotonic`).
Bugs, one at a time with --bug:
  extend-no-owner-check  extend by plain PEXPIRE, which lengthens whoever's lock is there
                         (stolen-lock judges that as `ownership`)
  token-after-grant      (with --fencing) the INCR is a second call after the grant, and the
                         time is checked before it: a holder whose INCR comes late gets a larger
                         token than the holder after it

Usage: driver.py [--bug extend-no-owner-check] --redis HOST:PORT   (the harness appends --redis)
       driver.py [--bug ...] --sim --redis sim:0   (version 2, co-simulated: `--world sim`)

The kit runs this same code in both: a real socket and clock, or the harness's simulated ones.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lockstep_driver as kit  # noqa: E402

RELEASE = ("if redis.call('GET', KEYS[1]) == ARGV[1] then "
           "return redis.call('DEL', KEYS[1]) else return 0 end")
EXTEND = ("if redis.call('GET', KEYS[1]) == ARGV[1] then "
          "return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end")
ACQUIRE_FENCED = ("if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then "
                  "return redis.call('INCR', KEYS[2]) else return 0 end")
BUGS = ("extend-no-owner-check", "token-after-grant")
BUG = ""
FENCING = False


class RedisLease:
    """A lock object is (key, value): the key and this holder's random value."""

    def __init__(self, io):
        self.io = io

    def acquire(self, key, ttl_ms):
        value = "%032x" % self.io.random.getrandbits(128)
        start_ns = self.io.now_ns()
        token = value
        if FENCING and BUG != "token-after-grant":
            token = self.io.redis.call("EVAL", ACQUIRE_FENCED, 2, key, "fence/" + key, value,
                                       ttl_ms)
            if token == 0:
                return "contended"
        elif self.io.redis.call("SET", key, value, "NX", "PX", ttl_ms) != "OK":
            return "contended"
        elif FENCING:
            if self.came_late(start_ns, ttl_ms, key, value):  # the bug: judged before the token
                return "contended"
            token = self.io.redis.call("INCR", "fence/" + key)
            return kit.Granted(token=token, lock=(key, value))
        if self.came_late(start_ns, ttl_ms, key, value):
            return "contended"
        return kit.Granted(token=token, lock=(key, value))

    def came_late(self, start_ns, ttl_ms, key, value):
        """A grant that came back after its TTL (less a margin for clock drift, as Redlock's) may
        already be someone else's lock: give it back and fail the attempt (slow-acquire)."""
        elapsed_ms = (self.io.now_ns() - start_ns) / 1e6
        if elapsed_ms < ttl_ms - (ttl_ms * 0.01 + 2):
            return False
        self.io.redis.call("EVAL", RELEASE, 1, key, value)
        return True

    def release(self, lock):
        key, value = lock
        return "ok" if self.io.redis.call("EVAL", RELEASE, 1, key, value) == 1 else "not_owner"

    def extend(self, lock, ttl_ms):
        key, value = lock
        if BUG == "extend-no-owner-check":
            reply = self.io.redis.call("PEXPIRE", key, ttl_ms)
        else:
            reply = self.io.redis.call("EVAL", EXTEND, 1, key, value, ttl_ms)
        return "ok" if reply == 1 else "not_owner"

    def is_locked(self, lock):
        key, value = lock
        return "ok" if self.io.redis.call("GET", key) == value else "not_owner"


def main(argv):
    global BUG, FENCING
    FENCING = "--fencing" in argv
    if "--bug" in argv:
        at = argv.index("--bug")
        BUG = argv[at + 1] if at + 1 < len(argv) else ""
        if BUG not in BUGS:
            sys.stderr.write("driver.py: --bug %r is not one of: %s\n" % (BUG, ", ".join(BUGS)))
            return 2
        if BUG == "token-after-grant" and not FENCING:
            sys.stderr.write("driver.py: --bug token-after-grant needs --fencing\n")
            return 2
    version = "lockstep-python-driver 1" + (" (fencing)" if FENCING else "") + (
        " (bug: %s)" % BUG if BUG else "")
    return kit.serve(RedisLease, name="python-redis-lease", version=version,
                     token="monotonic" if FENCING else "random", argv=argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
