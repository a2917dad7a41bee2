#!/usr/bin/env python3
"""A broken backend does not pass: an impostor `redis-server` first on PATH that answers +PONG to
every command makes `run sequential --adapter redis --world real` end as an error (exit 4) that
quotes the reply, never "ok" with 0 acquisitions (which it did before).

Usage: broken_backend_test.py LOCKSTEP_BINARY
"""
import os
import subprocess
import sys
import tempfile

IMPOSTOR = r'''#!/usr/bin/env python3
import socket, sys, threading
args = sys.argv[1:]
port = int(args[args.index("--port") + 1]) if "--port" in args else 6379
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port))
s.listen(16)
def serve(c):
    while True:
        data = c.recv(65536)
        if not data:
            return
        c.sendall(b"+PONG\r\n" * max(1, data.count(b"*")))
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
'''


def main(binary):
    with tempfile.TemporaryDirectory(prefix="lockstep-broken-backend-") as tmp:
        bin_dir = os.path.join(tmp, "bin")
        os.mkdir(bin_dir)
        impostor = os.path.join(bin_dir, "redis-server")
        with open(impostor, "w") as f:
            f.write(IMPOSTOR.replace("/usr/bin/env python3", sys.executable, 1))
        os.chmod(impostor, 0o755)
        env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))
        result = subprocess.run([binary, "run", "sequential", "--adapter", "redis", "--world",
                                 "real"], cwd=tmp, env=env, capture_output=True, text=True,
                                timeout=120)
        if result.returncode != 4 or "unexpected reply PONG" not in result.stdout:
            sys.exit("FAILED: expected exit 4 quoting the backend's reply\nexit %d\n%s\n%s" %
                     (result.returncode, result.stdout, result.stderr))
    print("ok: an impostor redis-server ends the run as an error naming its reply")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
