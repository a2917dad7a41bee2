"""A kit for writing a lockstep driver in Python (services/ext/PROTOCOL.md), standard library only.

The lock's author writes ordinary blocking code against an `io` object and calls `serve`:

    import lockstep_driver as kit

    class MyLock:
        def __init__(self, io):            # built once per run
            self.io = io
        def acquire(self, key, ttl_ms):     # -> kit.Granted(token, lock) or "contended"
            value = "%032x" % self.io.random.getrandbits(128)
            if self.io.redis.call("SET", key, value, "NX", "PX", ttl_ms) == "OK":
                return kit.Granted(token=value, lock=(key, value))
            return "contended"
        def release(self, lock): ...        # -> "ok", "not_owner" or "unknown"
        def extend(self, lock, ttl_ms): ... # optional; -> "ok" or "not_owner"
        def is_locked(self, lock): ...      # optional; -> "ok" or "not_owner"

    kit.serve(MyLock, name="my-lock", version="my-lock 1.0")

`io` gives the code what it may use: `io.redis.call(*args)` (one command, its reply; an error
reply raises RedisError, a lost connection ConnectionError, no reply within COMMAND_TIMEOUT_S
(5 s) TimeoutError, both OSErrors), `io.now_ns()` / `io.wall_ms()`,
`io.sleep_ms(ms)`, and `io.random` (a random.Random). An exception other than these ends the one
request as `error` with its name and message; a lock object the harness never gave is `bad_request`.

The same code runs in both protocol versions:
- version 1 (`--redis HOST:PORT`, `--world real`): a real socket, CLOCK_MONOTONIC, real sleeps,
  randomness from os.urandom; one request at a time.
- version 2 (`--sim`, `--world sim`): no socket, clock or entropy of its own. Each request runs in
  its own thread, but only one thread runs at any time and the kit hands control over explicitly
  (a request runs until it waits for a reply or a timer), so what the driver writes is a function
  of the lines it read: the run is deterministic. Redis is `connect`/`send` lines and `recv`
  bytes, the clock the `now` of each line, `sleep_ms` a timer (`next_timer_ns`), and `io.random`
  is seeded by `init`; `reset` drops the run's requests and the lock object.
Only the first `--redis` server is used.
"""
import argparse
import base64
import collections
import heapq
import json
import os
import random
import socket
import sys
import threading
import time

Granted = collections.namedtuple("Granted", ["token", "lock"])
STATUSES = ("ok", "contended", "not_owner", "unknown")
EXCHANGE_TASKS_MAX = 10000  # requests in flight in one run (a bound on the scheduler's queue)


class RedisError(Exception):
    """An error reply from Redis (`-ERR ...`)."""


class BadRequest(Exception):
    """The request itself was wrong (an unknown lock handle)."""


def _write(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def encode_command(*args):
    """One RESP command's bytes."""
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def parse_reply(buf, at=0):
    """(reply, next offset) for the complete RESP reply at `at`, or None if it is not all there.
    An error reply is returned as a RedisError (not raised)."""
    end = buf.find(b"\r\n", at)
    if end < 0:
        return None
    kind, rest, after = buf[at:at + 1], buf[at + 1:end], end + 2
    if kind == b"+":
        return rest.decode(), after
    if kind == b"-":
        return RedisError(rest.decode()), after
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
        n = int(rest)
        if n < 0:
            return None, after
        items = []
        for _ in range(n):
            parsed = parse_reply(buf, after)
            if parsed is None:
                return None
            item, after = parsed
            items.append(item)
        return items, after
    raise RedisError("bad RESP reply %r" % buf[at:end])


# ---------------------------------------------------------------------------------------------
# What a request's handler does, in either version.

class _Locks:
    """The harness's handles and the lock objects the author's acquire returned for them."""

    def __init__(self, make_lock, io):
        self.lock = make_lock(io)
        self.held = {}  # (client, handle) -> the author's lock object

    def handle(self, req):
        """(status, token) for one lock request; raises BadRequest, RedisError, ..."""
        op, where = req["op"], (req.get("client", 0), req.get("handle"))
        if op == "acquire":
            result = self.lock.acquire(req["key"], req["ttl_ms"])
            if isinstance(result, Granted):
                self.held[where] = result.lock
                return "ok", str(result.token)
            return _checked(result, ("contended",), "acquire"), None
        if where not in self.held:
            raise BadRequest("no lock with handle %r" % (where[1],))
        if not hasattr(self.lock, op):
            return "unsupported", None
        lock = self.held[where]
        if op == "release":
            return _checked(self.lock.release(lock), STATUSES, op), None
        if op == "extend":
            return _checked(self.lock.extend(lock, req["ttl_ms"]), STATUSES, op), None
        return _checked(self.lock.is_locked(lock), STATUSES, op), None


def _checked(status, allowed, op):
    if status not in allowed:
        raise TypeError("%s returned %r; expected one of %s" % (op, status, ", ".join(allowed)))
    return status


def _capabilities(make_lock, token):
    return {"extend": hasattr(make_lock, "extend"), "is_locked": hasattr(make_lock, "is_locked"),
            "token": token}


def _error(e):
    return {"name": type(e).__name__, "message": str(e)}


def _respond(rid, status, t0, t1, token=None, err=None):
    reply = {"id": rid, "status": status, "ok": status == "ok", "t0_ns": str(t0), "t1_ns": str(t1)}
    if token is not None:
        reply["token"] = token
    if err is not None:
        reply["err"] = err
    _write(reply)


LOCK_OPS = ("acquire", "release", "extend", "is_locked")


# ---------------------------------------------------------------------------------------------
# Version 1: real time, a real socket, one request at a time.

# How long a command waits for its reply, in both versions: past it the connection is dropped and
# the call raises (a TimeoutError: an OSError), and the next call reconnects. Without it a reply
# that never comes (a server that died with the reply unsent) would hang the request for good.
COMMAND_TIMEOUT_S = 5


class _RealRedis:
    def __init__(self, host, port):
        self.addr = (host, port)
        self.sock = None
        self.buf = b""

    def call(self, *args):
        if self.sock is None:
            self.sock = socket.create_connection(self.addr, timeout=COMMAND_TIMEOUT_S)
        try:
            self.sock.sendall(encode_command(*args))
            while True:
                parsed = parse_reply(self.buf)
                if parsed is not None:
                    break
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise ConnectionError("redis closed the connection")
                self.buf += chunk
        except OSError:
            self.sock, self.buf = None, b""  # the next call reconnects
            raise
        reply, used = parsed
        self.buf = self.buf[used:]
        if isinstance(reply, RedisError):
            raise reply
        return reply


class _RealIO:
    def __init__(self, host, port):
        self.redis = _RealRedis(host, port)
        self.random = random.Random(os.urandom(16))

    def now_ns(self):
        return time.monotonic_ns()  # CLOCK_MONOTONIC on Linux, as the protocol asks

    def wall_ms(self):
        return int(time.time() * 1000)

    def sleep_ms(self, ms):
        time.sleep(ms / 1000.0)


def _serve_real(make_lock, ready, host, port):
    io = _RealIO(host, port)
    locks = _Locks(make_lock, io)
    ready(1, io.now_ns())
    for line in sys.stdin:
        req = json.loads(line)
        rid, op = req.get("id"), req.get("op")
        t0 = io.now_ns()
        status, token, err = "ok", None, None
        try:
            if op in LOCK_OPS:
                status, token = locks.handle(req)
            elif op == "pause":
                time.sleep(req["duration_ms"] / 1000.0)
            elif op not in ("ping", "shutdown"):  # bench included: it is counted in the driver
                status, err = "bad_request", {"name": "BadRequest", "message": "unknown op %r" % op}
        except BadRequest as e:
            status, err = "bad_request", _error(e)
        except Exception as e:  # the server is unreachable, answered an error, the lock threw
            status, err = "error", _error(e)
        _respond(rid, status, t0, io.now_ns(), token, err)
        if op == "shutdown":
            return 0
    return 0


# ---------------------------------------------------------------------------------------------
# Version 2: co-simulated. Requests are threads that run one at a time, handing control back
# to the kit's loop whenever they wait (a reply, a timer): cooperative scheduling in FIFO order.

class _Cancelled(BaseException):
    """Unwinds a request's thread when its run is reset (not an Exception: handlers let it by)."""


class _Task:
    def __init__(self, sched, body):
        self.sched = sched
        self.body = body
        self.go = threading.Event()
        self.delivered = None  # what the wait that resumes it returns (or raises)
        self.cancelled = False
        sched.spawned += 1
        self.seq = sched.spawned  # the order tasks are unwound in at a reset
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        self.go.wait()
        self.go.clear()
        try:
            if not self.cancelled:
                self.body()
        except _Cancelled:
            pass
        finally:
            self.sched.back.set()


class _Scheduler:
    """Runs one task at a time: the kit's loop resumes a task and waits until it waits or ends."""

    def __init__(self):
        self.back = threading.Event()
        self.runnable = collections.deque()
        self.current = None
        self.waiting = set()  # tasks parked in wait()
        self.spawned = 0

    def spawn(self, body):
        assert len(self.waiting) + len(self.runnable) < EXCHANGE_TASKS_MAX, "too many requests"
        task = _Task(self, body)
        task.thread.start()
        self.runnable.append(task)

    def run_until_idle(self):
        while self.runnable:
            task = self.runnable.popleft()
            self.waiting.discard(task)
            self.current = task
            task.go.set()
            self.back.wait()
            self.back.clear()
            self.current = None

    def wait(self):
        """In a task: give control back until wake(task, value); returns or raises the value."""
        task = self.current
        assert task is not None, "io used outside a request"
        self.waiting.add(task)
        self.back.set()
        task.go.wait()
        task.go.clear()
        if task.cancelled:
            raise _Cancelled()
        value, task.delivered = task.delivered, None
        if isinstance(value, BaseException):
            raise value
        return value

    def wake(self, task, value):
        task.delivered = value
        self.runnable.append(task)

    def cancel_all(self):
        """Unwinds every parked task (a reset): each ends before the next is resumed."""
        for task in sorted(self.waiting, key=lambda t: t.seq):
            task.cancelled = True
            self.runnable.append(task)
        self.run_until_idle()
        self.waiting.clear()


class _SimRedis:
    """A RESP connection as `connect`/`send` lines and `recv` bytes. Redis answers in order, so
    the requests waiting for replies are a queue; a reset connection fails them, and the next
    call reconnects (connection ids are never reused). A reply that does not come within
    COMMAND_TIMEOUT_S of simulated time closes the connection (a `close` line) and fails every
    request waiting on it, as the real version's socket timeout does."""

    def __init__(self, sched, timers):
        self.sched = sched
        self.timers = timers
        self.conn = 0
        self.next_conn = 1
        self.inbox = b""
        self.waiting = collections.deque()

    def call(self, *args):
        if self.conn == 0:
            self.conn, self.next_conn = self.next_conn, self.next_conn + 1
            _write({"connect": self.conn, "server": 0})
        _write({"send": self.conn, "data": base64.b64encode(encode_command(*args)).decode()})
        task = self.sched.current
        self.waiting.append(task)
        conn = self.conn
        timeout = self.timers.add(COMMAND_TIMEOUT_S * 1000, lambda: self._timed_out(conn, task))
        try:
            return self.sched.wait()
        finally:
            timeout.cancel()

    def _timed_out(self, conn, task):
        if conn != self.conn or task not in self.waiting:
            return  # answered, or its connection already gone
        _write({"close": conn})
        while self.waiting:
            self.sched.wake(self.waiting.popleft(),
                            TimeoutError("no reply within %d s" % COMMAND_TIMEOUT_S))
        self.conn, self.inbox = 0, b""

    def received(self, conn, data):
        if conn != self.conn:
            return  # bytes of a connection already reset
        self.inbox += base64.b64decode(data)
        while self.waiting:
            parsed = parse_reply(self.inbox)
            if parsed is None:
                return
            reply, used = parsed
            self.inbox = self.inbox[used:]
            self.sched.wake(self.waiting.popleft(), reply)

    def closed(self, conn):
        if conn != self.conn:
            return
        while self.waiting:
            self.sched.wake(self.waiting.popleft(), ConnectionError("the connection was reset"))
        self.conn, self.inbox = 0, b""


class _Timer:
    def __init__(self, fire):
        self.fire = fire

    def cancel(self):
        self.fire = None


class _SimIO:
    def __init__(self, sched, seed, now):
        self.sched = sched
        self.redis = _SimRedis(sched, self)
        self.random = random.Random(seed)
        self.mono_ns = int(now["mono_ns"])
        self.wall = int(now["wall_ms"])
        self.timers = []  # (due_ns, seq, _Timer): a heap; a cancelled one fires nothing
        self.timer_seq = 0

    def now_ns(self):
        return self.mono_ns

    def wall_ms(self):
        return self.wall

    def add(self, ms, fire):
        """A timer: fire() runs ms of simulated time from now, unless cancelled first."""
        self.timer_seq += 1
        timer = _Timer(fire)
        heapq.heappush(self.timers, (self.mono_ns + int(ms * 1_000_000), self.timer_seq, timer))
        return timer

    def sleep_ms(self, ms):
        task = self.sched.current
        self.add(ms, lambda: self.sched.wake(task, None))
        self.sched.wait()

    def _drop_cancelled(self):
        while self.timers and self.timers[0][2].fire is None:
            heapq.heappop(self.timers)

    def advance(self, now):
        """Fires the timers due up to now's monotonic time in order, each at its own time."""
        target = int(now["mono_ns"])
        self._drop_cancelled()
        while self.timers and self.timers[0][0] <= target:
            due, _, timer = heapq.heappop(self.timers)
            self.wall += (max(due, self.mono_ns) - self.mono_ns) // 1_000_000
            self.mono_ns = max(due, self.mono_ns)
            fire, timer.fire = timer.fire, None
            fire()
            self.sched.run_until_idle()
            self._drop_cancelled()
        self.mono_ns = max(target, self.mono_ns)
        self.wall = int(now["wall_ms"])

    def next_timer_ns(self):
        self._drop_cancelled()
        return str(self.timers[0][0]) if self.timers else None


class _SimRun:
    def __init__(self, make_lock, seed, now):
        self.sched = _Scheduler()
        self.io = _SimIO(self.sched, seed, now)
        self.locks = None
        # The lock is built inside a task too: its constructor may talk to Redis.
        self.sched.spawn(lambda: setattr(self, "locks", _Locks(make_lock, self.io)))
        self.sched.run_until_idle()

    def request(self, req):
        rid, t0 = req.get("id"), self.io.now_ns()

        def body():
            status, token, err = "ok", None, None
            try:
                if self.locks is None:
                    raise RuntimeError("the lock is still being built")
                status, token = self.locks.handle(req)
            except BadRequest as e:
                status, err = "bad_request", _error(e)
            except Exception as e:
                status, err = "error", _error(e)
            _respond(rid, status, t0, self.io.now_ns(), token, err)
        self.sched.spawn(body)


def _serve_sim(make_lock, ready):
    run = None
    for line in sys.stdin:
        msg = json.loads(line)
        op, now = msg.get("op"), msg.get("now")
        if op == "init":
            run = _SimRun(make_lock, str(msg["seed"]), now)
            ready(2, str(run.io.now_ns()))
        elif op == "reset":
            if run is not None:
                run.sched.cancel_all()
            run = None  # the next line is an init, as to a fresh process
            _write({"idle": True, "next_timer_ns": None})
            continue
        elif run is None:
            sys.stderr.write("lockstep_driver: %r before init\n" % op)
            return 2
        else:
            run.io.advance(now)
            if op == "recv":
                run.io.redis.received(msg["conn"], msg["data"])
            elif op == "closed":
                run.io.redis.closed(msg["conn"])
            elif op in LOCK_OPS:
                run.request(msg)
            elif op in ("ping", "shutdown"):
                _respond(msg.get("id"), "ok", run.io.now_ns(), run.io.now_ns())
            elif op == "pause":  # a co-simulated driver is paused by withholding time and bytes
                _respond(msg.get("id"), "unsupported", run.io.now_ns(), run.io.now_ns(),
                         err={"name": "Unsupported", "message": "pause in --sim"})
            elif op != "tick":
                _respond(msg.get("id"), "bad_request", run.io.now_ns(), run.io.now_ns(),
                         err={"name": "BadRequest", "message": "unknown op %r" % op})
        run.sched.run_until_idle()
        _write({"idle": True, "next_timer_ns": run.io.next_timer_ns()})
        if op == "shutdown":
            return 0
    return 0


# ---------------------------------------------------------------------------------------------

def serve(make_lock, name, version, token="random", argv=None):
    """Speaks the protocol on stdin/stdout until shutdown; returns the process's exit code.
    make_lock: the lock's class, built as make_lock(io) once per run; its methods extend and
    is_locked are offered when it has them. token: what acquire's token is ("random",
    "monotonic" or "none"). argv: the command line (default sys.argv[1:]); the kit reads --sim
    and --redis HOST:PORT[,...] and leaves the rest to the driver."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--sim", action="store_true")
    parser.add_argument("--redis", default="127.0.0.1:6379")
    args, _ = parser.parse_known_args(sys.argv[1:] if argv is None else argv)

    def ready(protocol, now_ns):
        _write({"ready": True, "name": name, "version": version, "protocol": protocol,
                "capabilities": _capabilities(make_lock, token), "now_ns": str(now_ns)})
    if args.sim:
        return _serve_sim(make_lock, ready)
    host, port = args.redis.split(",")[0].rsplit(":", 1)
    return _serve_real(make_lock, ready, host, int(port))
