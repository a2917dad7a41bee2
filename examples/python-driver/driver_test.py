#!/usr/bin/env python3
"""Protocol-level test of driver.py against a real redis-server (ctest: python_driver_protocol).

A's lease expires, B takes the key, A extends: the correct driver answers not_owner and B's lock
keeps its TTL; with --bug extend-no-owner-check the extend succeeds and lengthens B's
lock. Exit 77 (skipped) when redis-server is missing. Starts and stops its server by PID.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, proc):
    for _ in range(500):  # bounded: the server either answers or has exited
        if proc.poll() is not None:
            raise SystemExit("redis-server exited with %d" % proc.returncode)
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.01)
    raise SystemExit("redis-server did not listen on %d" % port)


class Driver:
    def __init__(self, port, bug):
        bug_args = ["--bug", bug] if bug else []
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "driver.py")] + bug_args +
                                     ["--redis", "127.0.0.1:%d" % port], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self.ready = json.loads(self.proc.stdout.readline())
        self.next_id = 1

    def call(self, **request):
        request["id"] = self.next_id
        self.next_id += 1
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        reply = json.loads(self.proc.stdout.readline())
        assert reply["id"] == request["id"], reply
        return reply

    def close(self):
        self.call(op="shutdown")
        self.proc.wait(timeout=10)


def stolen_extend(port, bug):
    """Returns the extend's status and B's remaining TTL in ms afterwards."""
    a, b = Driver(port, bug), Driver(port, bug)
    try:
        assert a.ready["protocol"] == 1 and a.ready["capabilities"]["token"] == "random", a.ready
        key = "k-" + (bug or "correct")
        assert a.call(op="acquire", handle="a", key=key, ttl_ms=100)["status"] == "ok"
        # Contention is polled, not slept on: B gets the key once A's lease is gone.
        for _ in range(1000):
            if b.call(op="acquire", handle="b", key=key, ttl_ms=2000)["status"] == "ok":
                break
            time.sleep(0.005)
        else:
            raise AssertionError("B never got the key after A's 100 ms lease")
        status = a.call(op="extend", handle="a", ttl_ms=600000)["status"]
        assert b.call(op="is_locked", handle="b")["status"] == "ok"
        assert b.call(op="release", handle="b")["status"] == "ok"
        assert a.call(op="release", handle="a")["status"] == "not_owner"
        return status
    finally:
        a.close()
        b.close()


def main():
    server = shutil.which("redis-server")
    if server is None:
        print("skipped: redis-server not on PATH (scripts/setup.sh installs it)")
        return 77
    port = free_port()
    proc = subprocess.Popen([server, "--port", str(port), "--save", "", "--appendonly", "no"],
                            stdout=subprocess.DEVNULL)
    try:
        wait_for_port(port, proc)
        correct = stolen_extend(port, "")
        buggy = stolen_extend(port, "extend-no-owner-check")
    finally:
        proc.kill()
        proc.wait()
    print("correct extend: %s; buggy extend: %s" % (correct, buggy))
    if correct != "not_owner" or buggy != "ok":
        print("FAILED: expected not_owner and ok")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
