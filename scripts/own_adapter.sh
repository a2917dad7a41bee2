#!/usr/bin/env bash
# "Test your own lock", as CI must run it: builds lockstep in build/, installs it into a temp
# prefix, builds examples/own-adapter (an outside project: find_package(lockstep)) against that
# prefix alone in a temp build dir, and holds its binary to this:
#   sweep --adapter my-buggy --seeds 1000    exit 1, and the shrunk replay file it names replays
#                                            (the binary's own `replay` reproduces the trace hash:
#                                            exit 0)
#   sweep --adapter my-correct --seeds 2000  exit 0
#   matrix --adapter my-correct              exit 0 (every scenario its traits fit: as expected)
#   run stolen-lock --adapter my-buggy       exit 1 with ownership (its extend lengthens B's lock)
#   sweep --adapter my-rw-buggy / my-fifo-buggy (keyed locks)  exit 1 (mutual_exclusion / fifo)
#   sweep --adapter my-rw / my-fifo --seeds 2000               exit 0
# Temp dirs are removed on exit, failing or not. Exit 0 when all of it held, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

scripts/build.sh

tmp=$(mktemp -d "${TMPDIR:-/tmp}/lockstep-own-adapter.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

fail() {
  echo "own_adapter: FAILED: $*" >&2
  exit 1
}

# Runs the command; its exit code must be $1. Output goes to $tmp/out and $tmp/err.
expect_exit() {
  local want=$1
  shift
  echo "own_adapter: $* (expect exit $want)"
  local code=0
  "$@" >"$tmp/out" 2>"$tmp/err" || code=$?
  if [ "$code" -ne "$want" ]; then
    cat "$tmp/out" "$tmp/err" >&2
    fail "$* exited $code, not $want"
  fi
}

echo "== install lockstep into a temp prefix"
cmake --install build --prefix "$tmp/prefix" >/dev/null
# The package must stand on its own: no path into this source tree or build dir.
if grep -rl "$repo" "$tmp/prefix/lib/cmake"; then
  fail "the installed package names the source tree $repo (files above)"
fi

echo "== build examples/own-adapter against the installed package alone"
# No package registry and no path but the prefix: the example must not find the build tree.
cmake -S "$repo/examples/own-adapter" -B "$tmp/example" -G Ninja \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF >/dev/null
found=$(sed -n 's/^lockstep_DIR:PATH=//p' "$tmp/example/CMakeCache.txt")
case "$found" in
  "$tmp/prefix"/*) ;;
  *) fail "find_package(lockstep) found $found, not the package installed in $tmp/prefix" ;;
esac
cmake --build "$tmp/example" -j"$(nproc)"
bin="$tmp/example/my_lockstep"

echo "== run it"
expect_exit 1 "$bin" sweep --adapter my-buggy --seeds 1000 --report "$tmp/reports"
cat "$tmp/out"
# The replay line names this binary, not `lockstep`.
replay_file=$(sed -n 's/^ *replay: my_lockstep replay //p' "$tmp/out" | head -n 1)
[ -n "$replay_file" ] || fail "sweep of my-buggy printed no 'replay: my_lockstep replay FILE' line"
[ -f "$replay_file" ] || fail "the replay file $replay_file does not exist"
expect_exit 0 "$bin" replay "$replay_file"
grep -q "replay: reproduced" "$tmp/err" || fail "replay did not reproduce: $(cat "$tmp/err")"
echo "own_adapter: replay reproduced the shrunk counterexample"

expect_exit 0 "$bin" sweep --adapter my-correct --seeds 2000 --report "$tmp/reports"
tail -n 3 "$tmp/out"
expect_exit 0 "$bin" matrix --adapter my-correct
grep -q "cells as expected" "$tmp/out" "$tmp/err" || fail "matrix --adapter my-correct judged no cell"
expect_exit 1 "$bin" run stolen-lock --adapter my-buggy --json
grep -q '"invariant": "ownership"' "$tmp/out" || fail "stolen-lock did not find my-buggy's ownership violation"
cat "$tmp/out" "$tmp/err"

# The keyed locks: a state machine of the user's own, judged by the keyed checkers.
expect_exit 1 "$bin" sweep --adapter my-rw-buggy --seeds 300 --report "$tmp/reports"
grep -q "breaks mutual_exclusion" "$tmp/out" || fail "sweep did not catch my-rw-buggy: $(cat "$tmp/out")"
expect_exit 1 "$bin" sweep --adapter my-fifo-buggy --seeds 300 --report "$tmp/reports"
grep -q "breaks fifo" "$tmp/out" || fail "sweep did not catch my-fifo-buggy: $(cat "$tmp/out")"
expect_exit 0 "$bin" sweep --adapter my-rw --seeds 2000 --report "$tmp/reports"
expect_exit 0 "$bin" sweep --adapter my-fifo --seeds 2000 --report "$tmp/reports"
echo "own_adapter: ok"
